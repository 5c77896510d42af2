"""The base of online predictors whose whole learned state is one flat float64 buffer (RLS, OnlineSGD).

The buffer starts with the slots every linear buffer has (``N_SEEN``, ``N_WEIGHTS``,
``N_FEATURES``, :mod:`interfpred.predictors._linear_buffers`); a subclass says how large it is
(``_layout``), writes its hyperparameters into it (``_header``) and names the compiled kernel
that learns a batch (``_learn_rows``). Learning, the observation count and the state file
(``{"buffer": [...]}``) are shared here.
"""

from __future__ import annotations

import abc
from typing import Any, ClassVar

import numpy as np

from interfpred.errors import InterfpredError
from interfpred.predictors._linear_buffers import N_FEATURES, N_SEEN, N_WEIGHTS
from interfpred.predictors._status import OK, split_code, status_error
from interfpred.predictors.base import BasePredictor
from interfpred.predictors.inputs import state_array

__all__ = ["FlatStatePredictor"]


class FlatStatePredictor(BasePredictor):
    """An online predictor whose learned state is one flat float64 buffer, learned by a compiled kernel."""

    #: The compiled kernel ``(buf, X, y) -> status * ROW_FACTOR + row`` that learns validated rows.
    _learn_rows: ClassVar[Any]


    @abc.abstractmethod
    def _layout(self, d: int) -> tuple[int, int]:
        """``(m, size)``: the number of weights and the buffer's length for ``d`` features."""

    @abc.abstractmethod
    def _header(self, buf: np.ndarray) -> None:
        """Write the hyperparameters (and the widths) into the buffer's header."""

    def _learn(self, X: np.ndarray, y: np.ndarray, entities: Any = None) -> None:
        buf = self._buf
        assert buf is not None  # allocated before _learn
        saved = buf.copy()  # small; restores the state if a row is refused mid-batch
        code = int(type(self)._learn_rows(buf, X, y))
        if code != OK:
            buf[:] = saved
            status, row = split_code(code)
            raise status_error(status, row=row, model=type(self).__name__)

    @property
    def n_seen_(self) -> int:
        """Number of observations learned."""
        return 0 if self._buf is None else int(self._buf[N_SEEN])

    def _get_state(self) -> dict[str, Any]:
        assert self._buf is not None  # only called on a fitted predictor
        return {"buffer": self._buf.tolist()}

    def _read_buffer(self, state: dict[str, Any], d: int) -> tuple[np.ndarray, int]:
        """The saved buffer for width ``d`` (length, widths and count checked) and its ``m``; the caller
        checks the rest, then calls :meth:`_adopt`."""
        m, size = self._layout(d)
        buf = state_array(state, "buffer", size)
        if int(buf[N_WEIGHTS]) != m or int(buf[N_FEATURES]) != d:
            raise InterfpredError(f"state buffer describes width {int(buf[N_FEATURES])}, file says {d}")
        seen = buf[N_SEEN]
        if not (seen >= 0 and float(seen).is_integer()):
            raise InterfpredError(f"state buffer has a bad observation count {seen} (expected an integer >= 0)")
        return buf, m

    def _adopt(self, buf: np.ndarray, d: int) -> None:
        """Take ``buf`` as the state, its header rewritten from this predictor's hyperparameters."""
        self._header(buf)
        self._bind_fast_paths()
        self._buf = buf
        self._d = d
