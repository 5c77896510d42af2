"""The two rules every conformal latency bound shares: the score scale and the conformal rank.

A calibrated bound is ``m + u * theta``: ``m`` the point prediction, ``u`` its scale and
``theta`` a threshold on the scores ``(y - m) / u`` seen out of sample. The scale is
``max(|m|, min_scale)`` (relative scores) or ``max(s, min_scale * max(|m|, 1))`` (scores in
units of the predictive standard deviation ``s``); ``min_scale`` (``CALIBRATED_MIN_SCALE``) keeps
scores finite where a prediction or a standard deviation is 0. The threshold of level ``q`` is the
score of rank :func:`conformal_rank` among the ``n`` sorted scores. The calibrated predictor's
windows, the model's frozen (cross-fitted) bounds and the compiled projection of bounds all call
these functions, so their bounds cannot drift apart.

Examples
--------
>>> relative_scale(-2.0, 1e-6), std_scale(0.0, 0.0, 1e-6)
(2.0, 1e-06)
>>> conformal_rank(19, 0.9), conformal_rank(99, 0.29)   # (n + 1) q = 18 and 29 exactly
(18, 29)
"""

from __future__ import annotations

import math

import numpy as np

from interfpred._core.jit import njit
from interfpred.constants import CONFORMAL_RANK_FUZZ

__all__ = ["conformal_rank", "relative_scale", "relative_scales", "std_scale", "std_scales"]


@njit(cache=True, inline="always")
def relative_scale(m, min_scale):
    """The scale of a relative score: ``max(|m|, min_scale)``."""
    return max(abs(m), min_scale)


@njit(cache=True, inline="always")
def std_scale(m, sd, min_scale):
    """The scale of a score in standard deviations: ``max(sd, min_scale * max(|m|, 1))``."""
    return max(sd, min_scale * max(abs(m), 1.0))


@njit(cache=True)
def relative_scales(m, min_scale):
    """:func:`relative_scale` of every element of the (n,) array ``m``."""
    out = np.empty(m.shape[0])
    for i in range(m.shape[0]):
        out[i] = relative_scale(m[i], min_scale)
    return out


@njit(cache=True)
def std_scales(m, sd, min_scale):
    """:func:`std_scale` of every element of the (n,) arrays ``m`` and ``sd``."""
    out = np.empty(m.shape[0])
    for i in range(m.shape[0]):
        out[i] = std_scale(m[i], sd[i], min_scale)
    return out


@njit(cache=True)
def conformal_rank(n, level):
    """The rank (1-based, within ``1..n``) of the split-conformal threshold at ``level`` among ``n >= 1``
    sorted scores.

    Upper levels (``level >= 0.5``) take rank ``ceil((n + 1) level)``, lower ones
    ``floor((n + 1) level)``: the finite-sample ranks whose bounds hold with probability ``>= level``
    (``>= 1 - level`` below) under exchangeability; ranks beyond the scores take the extreme one.
    ``(n + 1) level`` is rounded by ``CONFORMAL_RANK_FUZZ`` toward the nearest integer before
    ``ceil``/``floor``: a level such as 0.9 is not a binary fraction, and ``20 * 0.9`` evaluates to
    ``18.000000000000004``, whose bare ceiling would be rank 19, one rank more conservative than the
    rule asks for.
    """
    x = (n + 1) * level
    if level >= 0.5:
        k = int(math.ceil(x - CONFORMAL_RANK_FUZZ))
    else:
        k = int(math.floor(x + CONFORMAL_RANK_FUZZ))
    if k < 1:
        k = 1
    if k > n:
        k = n
    return k
