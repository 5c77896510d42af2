"""Which models a feature row involves: the row's own entity and its co-runners, weighted.

Throughput features say *how much* of each resource a batch and its co-runners use, not
*which* models met. Predictors that learn per-model terms and per-pair baselines need that, so
an extractor can hand an :class:`Entities` table over beside the features: per row, one own
entity and a weighted list of co-runner entities (the mean number of each running beside it),
in CSR form over a shared vocabulary of names. docs/concepts.md describes the layout.

Examples
--------
>>> ent = Entities.from_lists(["a", "b", "a"], [{"b": 1.0}, {"a": 0.5}, {}])
>>> ent.names
('a', 'b')
>>> len(ent), ent.own.tolist(), ent.indptr.tolist()
(3, [0, 1, 0], [0, 1, 2, 2])
>>> ent.row(1)
('b', {'a': 0.5})
>>> ent.take([2, 0]).row(1)
('a', {'b': 1.0})
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from interfpred.errors import InterfpredError

__all__ = ["Entities"]


@dataclass(frozen=True, eq=False)
class Entities:
    """Own and co-runner entities of ``n`` feature rows (CSR over a vocabulary of names).

    Attributes
    ----------
    names
        The vocabulary: distinct entity names, in the order their indices refer to.
    own
        (n,) int64 index of each row's own entity.
    indptr
        (n + 1,) int64 offsets into ``co`` and ``weight``.
    co
        (nnz,) int64 index of each co-runner entity (each at most once per row).
    weight
        (nnz,) float64 mean number of that entity running beside the row, >= 0.
    covariates
        Optional (len(names), k) float64: what is known of each entity before any row of it is
        learned (from its profile: the kernel terms of :mod:`interfpred.features.kernel_terms`);
        NaN where unknown. Predictors that read them (``KernelBlocking``) remember them by name.
    """

    names: tuple[str, ...]
    own: np.ndarray
    indptr: np.ndarray
    co: np.ndarray
    weight: np.ndarray
    covariates: np.ndarray | None = None

    def __post_init__(self) -> None:
        n_names = len(self.names)
        own = np.ascontiguousarray(self.own, dtype=np.int64)
        indptr = np.ascontiguousarray(self.indptr, dtype=np.int64)
        co = np.ascontiguousarray(self.co, dtype=np.int64)
        weight = np.ascontiguousarray(self.weight, dtype=np.float64)
        if own.ndim != 1 or indptr.ndim != 1 or co.ndim != 1 or weight.ndim != 1:
            raise InterfpredError("entities: own, indptr, co and weight must be 1-dimensional")
        if indptr.shape[0] != own.shape[0] + 1:
            raise InterfpredError(
                f"entities: indptr has {indptr.shape[0]} entries, expected {own.shape[0] + 1} "
                "(one more than rows)")
        if indptr[0] != 0 or np.any(np.diff(indptr) < 0) or indptr[-1] != co.shape[0]:
            raise InterfpredError("entities: indptr must start at 0, never decrease and end at len(co)")
        if weight.shape != co.shape:
            raise InterfpredError(
                f"entities: weight has {weight.shape[0]} entries, co has {co.shape[0]}")
        for label, idx in (("own", own), ("co", co)):
            if idx.size and (idx.min() < 0 or idx.max() >= n_names):
                raise InterfpredError(
                    f"entities: {label} holds index {int(idx.min() if idx.min() < 0 else idx.max())}, "
                    f"expected 0..{n_names - 1} (the vocabulary has {n_names} names)")
        if weight.size and not (np.all(np.isfinite(weight)) and weight.min() >= 0.0):
            raise InterfpredError("entities: every co-runner weight must be finite and >= 0")
        if len(set(self.names)) != n_names:
            raise InterfpredError("entities: names must be distinct")
        if self.covariates is not None:
            cov = np.ascontiguousarray(self.covariates, dtype=np.float64)
            if cov.ndim != 2 or cov.shape[0] != n_names:
                raise InterfpredError(f"entities: covariates have shape {cov.shape}, expected ({n_names}, k): "
                                      "one row per name")
            if np.isinf(cov).any():
                raise InterfpredError("entities: covariates must be finite or NaN (unknown)")
            object.__setattr__(self, "covariates", cov)
        object.__setattr__(self, "names", tuple(str(s) for s in self.names))
        object.__setattr__(self, "own", own)
        object.__setattr__(self, "indptr", indptr)
        object.__setattr__(self, "co", co)
        object.__setattr__(self, "weight", weight)

    def __len__(self) -> int:
        return int(self.own.shape[0])

    @classmethod
    def from_lists(cls, own: Sequence[str], co: Sequence[Mapping[str, float]]) -> Entities:
        """Build from each row's own name and a ``{co-runner name: weight}`` mapping.

        Examples
        --------
        >>> Entities.from_lists(["x"], [{"y": 2.0}]).row(0)
        ('x', {'y': 2.0})
        """
        if len(own) != len(co):
            raise InterfpredError(f"entities: {len(own)} own names but {len(co)} co-runner mappings")
        vocab: dict[str, int] = {}
        own_idx = [vocab.setdefault(str(name), len(vocab)) for name in own]
        indptr = [0]
        co_idx: list[int] = []
        weights: list[float] = []
        for row in co:
            for name, w in row.items():
                co_idx.append(vocab.setdefault(str(name), len(vocab)))
                weights.append(float(w))
            indptr.append(len(co_idx))
        return cls(tuple(vocab), np.asarray(own_idx, dtype=np.int64), np.asarray(indptr),
                   np.asarray(co_idx, dtype=np.int64), np.asarray(weights, dtype=np.float64))

    def row(self, i: int) -> tuple[str, dict[str, float]]:
        """Row ``i`` as ``(own name, {co-runner name: weight})``."""
        lo, hi = int(self.indptr[i]), int(self.indptr[i + 1])
        return (self.names[int(self.own[i])],
                {self.names[int(c)]: float(w) for c, w in zip(self.co[lo:hi], self.weight[lo:hi])})

    def take(self, rows: Any) -> Entities:
        """The rows selected by an index array or boolean mask, in that order (same vocabulary)."""
        idx = np.arange(len(self))[np.asarray(rows)]
        counts = (self.indptr[idx + 1] - self.indptr[idx]).astype(np.int64)
        indptr = np.zeros(idx.shape[0] + 1, dtype=np.int64)
        np.cumsum(counts, out=indptr[1:])
        pick = np.repeat(self.indptr[idx] - indptr[:-1], counts) + np.arange(int(indptr[-1]))
        return self._trusted(self.own[idx], indptr, self.co[pick], self.weight[pick])

    def _trusted(self, own: np.ndarray, indptr: np.ndarray, co: np.ndarray, weight: np.ndarray) -> Entities:
        """A table over this vocabulary from arrays cut out of this already validated one (no re-validation:
        a selection of valid rows is valid, and loops that learn run by run take thousands of them)."""
        e = object.__new__(Entities)
        put = object.__setattr__
        put(e, "names", self.names)
        put(e, "own", own)
        put(e, "indptr", indptr)
        put(e, "co", co)
        put(e, "weight", weight)
        put(e, "covariates", self.covariates)
        return e

    def split_rows(self) -> list[Entities]:
        """One single-row table per row (same vocabulary), for loops that learn row by row.

        The rows are slices of this already validated table, so they are built without
        re-validation (about a microsecond each instead of ten).

        Examples
        --------
        >>> [r.row(0) for r in Entities.from_lists(["a", "b"], [{"b": 1.0}, {}]).split_rows()]
        [('a', {'b': 1.0}), ('b', {})]
        """
        n = len(self)
        ptrs = np.zeros((n, 2), dtype=np.int64)
        ptrs[:, 1] = np.diff(self.indptr)
        bounds = self.indptr.tolist()
        return [self._trusted(self.own[i:i + 1], ptrs[i], self.co[bounds[i]:bounds[i + 1]],
                              self.weight[bounds[i]:bounds[i + 1]]) for i in range(n)]

    def with_covariates(self, covariates: Any) -> Entities:
        """The same rows with per-name ``covariates`` ((len(names), k), NaN where unknown).

        Examples
        --------
        >>> e = Entities.from_lists(["a"], [{"b": 1.0}]).with_covariates([[0.5], [np.nan]])
        >>> e.covariates.tolist(), e.take([0]).covariates.shape
        ([[0.5], [nan]], (2, 1))
        """
        return Entities(self.names, self.own, self.indptr, self.co, self.weight, covariates)

    def pair_keys(self) -> list[tuple[str, tuple[str, ...]]]:
        """Per row: ``(own name, sorted names of the co-runners with positive weight)``.

        The key a per-pair baseline groups by: the model and the set of models it met.

        Examples
        --------
        >>> Entities.from_lists(["a", "b"], [{"c": 1.0, "b": 0.5}, {}]).pair_keys()
        [('a', ('b', 'c')), ('b', ())]
        """
        names = self.names
        out = []
        for i in range(len(self)):
            lo, hi = int(self.indptr[i]), int(self.indptr[i + 1])
            met = sorted(names[int(c)] for c, w in zip(self.co[lo:hi], self.weight[lo:hi]) if w > 0)
            out.append((names[int(self.own[i])], tuple(met)))
        return out
