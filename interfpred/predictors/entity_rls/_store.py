"""Entity tables, persistence and read-only views of EntityRLS (private: the mixin behind the class).

State arrays (see ``_entity_steps`` for the layout): ``_g`` header and global block, ``_est``
parameter means / information / priors, ``_P`` the joint covariance (full mode), ``_etab`` each
entity's parameter indices, ``_ptab`` the pair hash table; ``_names`` and ``_eid`` the entity
names in order of first sight. Vocabulary maps (``_vmap``) are a cache, never pickled or saved.
"""

from __future__ import annotations

import copy
import math
from typing import TYPE_CHECKING, Any

import numpy as np

from interfpred.constants import ENTITY_FACTOR_INIT, ENTITY_FULL_MAX_PARAMS
from interfpred.data.entities import Entities
from interfpred.errors import InterfpredError
from interfpred.predictors.entity_rls import _entity_steps as EK
from interfpred.predictors.entity_rls import _rows as ER
from interfpred.predictors.entity_rls import _tables as ET

__all__ = ["EntityStore"]

_EH = EK.ENT_HEADER
_FAST = ER.FAST
_NO_I = np.zeros((0, 2), dtype=np.int64)
_CACHE = ("_vm_key", "_vm_n", "_vmap", "_vm_cache", "_pair_memo", "_weight_memo", "_terms_memo")
_VMAP_CACHE = 4096


class EntityStore:
    """Entity tables (created on first sight), their rollback, persistence and views."""

    # Declared for type checkers: the hyperparameters and state live on EntityRLS.
    population: str
    covariance: str
    rank: int
    seed: int
    hierarchy: bool
    entity_terms: bool
    _d: int | None
    _g: Any
    _est: np.ndarray
    _P: np.ndarray
    _np: int
    _names: list[str]
    _eid: dict[str, int]
    _etab: np.ndarray
    _ptab: np.ndarray
    _n_pairs: int
    _var: dict[str, float]
    _evidence: np.ndarray
    _backoff: Any
    _scale: float

    if TYPE_CHECKING:
        def _allocate(self, d: int, full: bool | None = None) -> None: ...

    def _reset_cache(self) -> None:
        self._vm_key: Any = None
        self._vm_n = -1
        self._vmap = _NO_I
        self._vm_cache: dict[tuple[str, ...], np.ndarray] = {}
        self._pair_memo: tuple[Any, ...] | None = None     # pairwise_terms' last answer, with what it read
        self._weight_memo: tuple[Any, ...] | None = None   # backoff_terms' weights, with the evidence read
        self._terms_memo: tuple[Any, ...] | None = None    # projection_terms' last answer, with what it read

    def __getstate__(self) -> dict[str, Any]:
        return {k: v for k, v in self.__dict__.items() if k not in _CACHE}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        if self._g is not None:
            self._reset_cache()

    def _snapshot(self) -> dict[str, Any]:
        snap = {k: (v.copy() if isinstance(v, np.ndarray) else (type(v)(v) if isinstance(v, (list, dict)) else v))
                for k, v in self.__dict__.items()}
        if "_backoff" in snap:
            snap["_backoff"] = copy.deepcopy(self._backoff)
        return snap

    def _restore(self, snap: dict[str, Any]) -> None:
        self.__dict__.clear()
        self.__dict__.update(snap)

    # ------------------------------------------------------------------ entities
    def _is_full(self) -> bool:
        """Whether the state keeps the joint covariance of every parameter (exact RLS)."""
        return self._g is not None and self._g[EK.ENT_N_FULL] > 0.0

    def _to_blocks(self) -> None:
        """Keep only the global block and each entity parameter's own variance from now on."""
        g0, m, N = self._g, int(self._g[EK.N_WEIGHTS]), int(self._g[EK.ENT_N_FULL])
        g = np.zeros(_EH + 3 * m + m * m)
        g[:_EH] = g0[:_EH]
        g[EK.ENT_N_FULL] = 0.0
        g[EK.RLS_CYCLE] = g0[EK.RLS_CYCLE] if g0[EK.RLS_CYCLE] < m else 0.0
        g[EK.ENT_MARGINAL] = float(self.population == "marginal")
        est, P = self._est, self._P
        g[_EH:_EH + m] = est[EK.EST_MEAN, :m]
        g[_EH + m:_EH + 2 * m] = est[EK.EST_PRIOR_MEAN, :m]
        g[_EH + 2 * m:_EH + 2 * m + m * m] = P[:m, :m].reshape(-1)
        new = np.zeros((4, max(16, 2 * (N - m))))
        new[EK.EST_MEAN, :N - m] = est[EK.EST_MEAN, m:N]
        new[EK.EST_INFO, :N - m] = 1.0 / np.diag(P)[m:N]
        new[EK.EST_PRIOR_INFO, :N - m] = est[EK.EST_PRIOR_INFO, m:N]
        self._g, self._est, self._P = g, new, np.zeros((1, 1))

    def _new_param(self, var: float, value: float = 0.0) -> int:
        p = self._np
        m = int(self._g[EK.N_WEIGHTS])
        if self._is_full() and self.covariance == "auto" and m + p + 1 > ENTITY_FULL_MAX_PARAMS:
            self._to_blocks()
        full = self._is_full()
        off = int(self._g[EK.N_WEIGHTS]) if full else 0
        old = self._est.shape[1]
        if off + p >= old:
            est = np.zeros((4, 2 * old))
            est[:, :old] = self._est
            self._est = est
            if full:
                P = np.zeros((2 * old, 2 * old))
                P[:old, :old] = self._P
                self._P = P
        est = self._est
        est[EK.EST_MEAN, off + p] = value
        est[EK.EST_INFO, off + p] = 1.0 / var
        est[EK.EST_PRIOR_INFO, off + p] = 1.0 / var
        if full:
            self._P[off + p, off + p] = var
            self._g[EK.ENT_N_FULL] = off + p + 1
        self._np = p + 1
        return p

    def _new_entity(self, name: str) -> int:
        e = len(self._names)
        if e == self._etab.shape[0]:
            cap = 2 * e
            etab = np.full((cap, 4), -1, dtype=np.int64)
            etab[:e] = self._etab
            self._etab = etab
        if e == self._evidence.shape[0]:
            self._evidence = np.concatenate([self._evidence, np.zeros(max(8, e))])
        row = self._etab[e]
        var = self._var
        if var["sensitivity_var"] > 0:
            row[EK.ETAB_SENSITIVITY] = self._new_param(var["sensitivity_var"])
        if var["aggressiveness_var"] > 0:
            row[EK.ETAB_AGGRESSIVENESS] = self._new_param(var["aggressiveness_var"])
        r = int(self.rank)
        if r and var["factor_var"] > 0:
            init = np.random.default_rng([int(self.seed), e]).normal(
                0.0, ENTITY_FACTOR_INIT * math.sqrt(var["factor_var"]), 2 * r)
            base = [self._new_param(var["factor_var"], float(v)) for v in init]
            row[EK.ETAB_U], row[EK.ETAB_V] = base[0], base[r]
        self._names.append(name)
        self._eid[name] = e
        return e

    def _new_pair(self, eo: int, ec: int, p: int | None = None) -> None:
        if 2 * (self._n_pairs + 1) > self._ptab.shape[0]:
            old = self._ptab
            self._ptab = np.full((2 * old.shape[0], 3), -1, dtype=np.int64)
            for a, b, q in old[old[:, 0] >= 0].tolist():
                ET.pair_put(self._ptab, a, b, q)
        if p is None:
            p = self._new_param(self._var["pair_var"])
        ET.pair_put(self._ptab, eo, ec, p)
        self._n_pairs += 1

    def _new_pairs(self, pairs: list[tuple[int, int]]) -> None:
        """:meth:`_new_pair` of each (own, co) of ``pairs`` in order, the parameters made in one step: the same
        parameters and table entries (the table may be laid out otherwise: it grows once)."""
        k = len(pairs)
        var = self._var["pair_var"]
        full = self._is_full()
        m = int(self._g[EK.N_WEIGHTS])
        if k < 2 or (full and self.covariance == "auto" and m + self._np + k > ENTITY_FULL_MAX_PARAMS):
            for a, b in pairs:       # few, or the joint covariance gives way to blocks among them: one by one
                self._new_pair(a, b)
            return
        need = 2 * (self._n_pairs + k)
        if need > self._ptab.shape[0]:
            old = self._ptab
            size = old.shape[0]
            while need > size:
                size *= 2
            self._ptab = np.full((size, 3), -1, dtype=np.int64)
            for a, b, q in old[old[:, 0] >= 0].tolist():
                ET.pair_put(self._ptab, a, b, q)
        p0 = self._np
        off = m if full else 0
        cap = self._est.shape[1]
        if off + p0 + k > cap:
            new_cap = cap
            while off + p0 + k > new_cap:
                new_cap *= 2
            est = np.zeros((4, new_cap))
            est[:, :cap] = self._est
            self._est = est
            if full:
                P = np.zeros((new_cap, new_cap))
                P[:cap, :cap] = self._P
                self._P = P
        cols = np.arange(off + p0, off + p0 + k)
        self._est[EK.EST_MEAN, cols] = 0.0
        self._est[EK.EST_INFO, cols] = 1.0 / var
        self._est[EK.EST_PRIOR_INFO, cols] = 1.0 / var
        if full:
            self._P[cols, cols] = var
            self._g[EK.ENT_N_FULL] = off + p0 + k
        self._np = p0 + k
        for j, (a, b) in enumerate(pairs):
            ET.pair_put(self._ptab, a, b, p0 + j)
        self._n_pairs += k

    def _pairs(self) -> np.ndarray:
        """(own, co, parameter) of every pair term, in order of creation."""
        rows = self._ptab[self._ptab[:, 0] >= 0]
        return rows[np.argsort(rows[:, 2], kind="stable")]

    def _rollback(self, n_names: int, n_params: int, n_pairs: int) -> None:
        """Forget the entities, parameters and pairs created after the given counts."""
        pairs = self._pairs()
        for a, b, _ in pairs[n_pairs:][::-1].tolist():
            ET.pair_del(self._ptab, a, b)
        self._n_pairs = n_pairs
        for name in self._names[n_names:]:
            del self._eid[name]
        self._etab[n_names:len(self._names)] = -1
        self._evidence[n_names:] = 0.0
        del self._names[n_names:]
        off = int(self._g[EK.N_WEIGHTS]) if self._is_full() else 0
        self._est[:, off + n_params:] = 0.0
        if off:
            self._P[off + n_params:, :] = 0.0
            self._P[:, off + n_params:] = 0.0
            self._g[EK.ENT_N_FULL] = off + n_params
        self._np = n_params

    def _vmap_for(self, ent: Entities) -> np.ndarray:
        """Entity index of each name of ``ent``'s vocabulary (-1: unknown), cached per vocabulary."""
        return self._ids_cached(ent.names)

    def _ids_cached(self, names: tuple[str, ...]) -> np.ndarray:
        """:meth:`_ids_of` of a tuple of names, cached until an entity is created."""
        if names is self._vm_key and self._vm_n == len(self._names):
            return self._vmap
        if self._vm_n != len(self._names) or len(self._vm_cache) > _VMAP_CACHE:
            self._vm_cache = {}
        vmap = self._vm_cache.get(names)
        if vmap is None:
            vmap = self._ids_of(names)
            self._vm_cache[names] = vmap
        self._vmap = vmap
        self._vm_key = names
        self._vm_n = len(self._names)
        return vmap

    def _ids_of(self, names: Any) -> np.ndarray:
        """(entity, parent entity) of each name: -1 unknown / no parent, -2 a parent not created yet."""
        eid = self._eid
        out = np.full((len(names), 2), -1, dtype=np.int64)
        hier = bool(self.hierarchy)
        for i, s in enumerate(names):
            out[i, 0] = eid.get(s, -1)
            if hier and "@" in s:
                out[i, 1] = eid.get(s.rsplit("@", 1)[0], -2)
        return out

    def _create_missing(self, ent: Entities) -> None:
        """Create the entities (and pairs) the rows of ``ent`` name for the first time."""
        want_pairs = self._var["pair_var"] > 0
        vmap = self._vmap_for(ent)
        if not _FAST.count_missing(self._etab, self._ptab, vmap, ent.own, ent.indptr, ent.co, want_pairs):
            return
        # in order of first sight (row order, own before co-runners): the same ids, and so the same
        # seeded factors, whether the rows come in one batch or one by one
        if len(ent) == 1:      # one row (learning row by row): its own entity, then its co-runners
            sighted = list(dict.fromkeys([int(ent.own[0]), *ent.co.tolist()]))
        else:
            counts = np.diff(ent.indptr)
            seq = np.concatenate([ent.own, ent.co])
            row = np.concatenate([np.arange(len(ent)), np.repeat(np.arange(len(ent)), counts)])
            pos = np.concatenate([np.full(len(ent), -1), np.arange(ent.co.shape[0])])
            seq = seq[np.lexsort((pos, row))]
            _, first = np.unique(seq, return_index=True)
            sighted = seq[np.sort(first)].tolist()
        hier = bool(self.hierarchy)
        for v in sighted:
            name = ent.names[v]
            if hier and "@" in name and name.rsplit("@", 1)[0] not in self._eid:
                self._new_entity(name.rsplit("@", 1)[0])
            if name not in self._eid:
                self._new_entity(name)
        vmap = self._vmap_for(ent)
        if want_pairs:
            self._new_pairs(list(dict.fromkeys(map(tuple, ET.pair_missing(self._ptab, vmap, ent.own, ent.indptr,
                                                                          ent.co).tolist()))))

    # ------------------------------------------------------------------ read-only views
    def _need(self, what: str) -> None:
        if self._g is None:
            raise AttributeError(f"{what} is not available before fit/update")

    def _global(self) -> np.ndarray:
        m = int(self._g[EK.N_WEIGHTS])
        return self._est[EK.EST_MEAN, :m] if self._is_full() else self._g[_EH:_EH + m]

    def _entity_values(self) -> np.ndarray:
        off = int(self._g[EK.N_WEIGHTS]) if self._is_full() else 0
        return self._est[EK.EST_MEAN, off:off + self._np]

    @property
    def coef_(self) -> np.ndarray:
        """Weights of the population model ``g`` on the features (copy)."""
        self._need("coef_")
        return self._global()[:self._d].copy()

    @property
    def intercept_(self) -> float:
        """Intercept of ``g`` (on the log scale with ``log_target``)."""
        self._need("intercept_")
        return float(self._global()[self._d])

    @property
    def n_seen_(self) -> int:
        """Number of observations received (lone rows included)."""
        return 0 if self._g is None else int(self._g[EK.N_SEEN])

    @property
    def covariance_(self) -> np.ndarray:
        """Covariance of the global weights (m, m), m = d + 1; with ``covariance="full"`` the joint
        covariance of every parameter (global weights first, then entity terms in order of creation)."""
        self._need("covariance_")
        m = int(self._g[EK.N_WEIGHTS])
        if self._is_full():
            n = int(self._g[EK.ENT_N_FULL])
            return self._P[:n, :n].copy()
        return self._g[_EH + 2 * m:_EH + 2 * m + m * m].reshape(m, m).copy()

    @property
    def entity_variances_(self) -> np.ndarray:
        """Posterior variance of every entity parameter, in order of creation (copy)."""
        self._need("entity_variances_")
        if self._is_full():
            m = int(self._g[EK.N_WEIGHTS])
            return np.diag(self._P)[m:m + self._np].copy()
        return 1.0 / self._est[EK.EST_INFO, :self._np]

    @property
    def prior_variances_(self) -> dict[str, float]:
        """The prior variances in use: the hyperparameters, or those chosen by ``tune_priors``."""
        self._need("prior_variances_")
        return dict(self._var)

    @property
    def entity_priors_(self) -> np.ndarray:
        """Prior variance of every entity parameter, in order of creation."""
        self._need("entity_priors_")
        off = int(self._g[EK.N_WEIGHTS]) if self._is_full() else 0
        return 1.0 / self._est[EK.EST_PRIOR_INFO, off:off + self._np]

    @property
    def entities_(self) -> tuple[str, ...]:
        """Names of the entities learned so far, in order of first sight."""
        return () if self._g is None else tuple(self._names)

    @property
    def entity_terms_(self) -> dict[str, dict[str, float]]:
        """Per entity: its ``sensitivity`` and ``aggressiveness`` (0.0 for a family turned off)."""
        if self._g is None:
            return {}
        vals = self._entity_values()
        out = {}
        for e, name in enumerate(self._names):
            s, a = int(self._etab[e, EK.ETAB_SENSITIVITY]), int(self._etab[e, EK.ETAB_AGGRESSIVENESS])
            out[name] = {"sensitivity": float(vals[s]) if s >= 0 else 0.0,
                         "aggressiveness": float(vals[a]) if a >= 0 else 0.0}
        return out

    @property
    def pair_terms_(self) -> dict[tuple[str, str], float]:
        """Per (own, co-runner) pair seen: its residual term."""
        if self._g is None:
            return {}
        vals = self._entity_values()
        return {(self._names[a], self._names[b]): float(vals[p]) for a, b, p in self._pairs().tolist()}

    # ------------------------------------------------------------------ persistence
    def _get_state(self) -> dict[str, Any]:
        n = len(self._names)
        full = self._is_full()
        N = int(self._g[EK.ENT_N_FULL]) if full else self._np
        state = {"prior_variances": dict(self._var), "header": self._g.tolist(), "names": list(self._names), "etab": self._etab[:n].tolist(),
                 "pairs": self._pairs().tolist(),
                 "n_params": self._np, "mu": self._est[EK.EST_MEAN, :N].tolist(), "r0": self._est[EK.EST_PRIOR_INFO, :N].tolist(),
                 "evidence": self._evidence[:n].tolist(), "backoff": self._backoff.to_state(),
                 "backoff_scale": self._scale}
        if full:
            state["t0"] = self._est[EK.EST_PRIOR_MEAN, :N].tolist()
            # P is kept exactly symmetric: its upper triangle, row by row, holds all of it at half the size
            state["P_upper"] = self._P[:N, :N][np.triu_indices(N)].tolist()
        else:
            state["info"] = self._est[EK.EST_INFO, :N].tolist()
        return state

    def _set_state(self, state: dict[str, Any], d: int) -> None:
        if "evidence" not in state or "backoff" not in state:
            raise InterfpredError("state holds no backoff model and evidence counts (written before EntityRLS "
                                  "kept them); refit the predictor")
        if "P" in state and "P_upper" not in state:
            raise InterfpredError("state holds its covariance as 'P' (written before EntityRLS stored only its "
                                  "upper triangle, 'P_upper'); refit the predictor")
        header = state["header"]
        self._allocate(d, full=isinstance(header, list) and len(header) > 13 and header[13] > 0)
        var = state.get("prior_variances", self._var)
        if not isinstance(var, dict) or set(var) != set(self._var):
            raise InterfpredError(f"state prior_variances {var!r} must name {', '.join(sorted(self._var))}")
        self._var = {k: float(v) for k, v in var.items()}
        if not all(math.isfinite(v) and v >= 0 for v in self._var.values()):
            raise InterfpredError(f"state prior_variances {var!r} must be finite and >= 0")
        self._create = (1 + int(self._var["pair_var"] > 0)) if self.entity_terms else 0
        full = self._is_full()
        m = d + 1
        g = np.asarray(state["header"], dtype=np.float64)
        if g.shape != self._g.shape or not np.isfinite(g).all() or int(g[EK.N_FEATURES]) != d:
            width = g[EK.N_FEATURES] if g.size > EK.N_FEATURES else None
            raise InterfpredError(f"state header has shape {g.shape} or width {width}, "
                                  f"expected {self._g.shape} and {d}")
        names = [str(s) for s in state["names"]]
        etab = np.asarray(state["etab"], dtype=np.int64).reshape(-1, 4)
        n_params = int(state["n_params"])
        N = m + n_params if full else n_params
        mu = np.asarray(state["mu"], dtype=np.float64)
        r0 = np.asarray(state["r0"], dtype=np.float64)
        if len(names) != etab.shape[0] or len(set(names)) != len(names) or mu.shape != (N,) or r0.shape != (N,):
            raise InterfpredError("state entity tables do not match (names, etab, mu, r0)")
        if etab.size and (etab.max() >= n_params or etab.min() < -1):
            raise InterfpredError("state etab refers to a parameter that does not exist")
        keep = self._g.copy()
        if int(g[EK.ENT_RANK]) != int(keep[EK.ENT_RANK]):  # the rank lays out every entity's parameters
            raise InterfpredError(f"params rank {int(keep[EK.ENT_RANK])} disagrees with the state, which was "
                                  f"learned with rank {int(g[EK.ENT_RANK])}")
        self._g = g
        for slot in EK.ENT_HYPER_SLOTS:   # hyperparameters follow the file's params
            self._g[slot] = keep[slot]
        cap_e = max(8, 1 << max(len(names) - 1, 0).bit_length())
        self._etab = np.full((cap_e, 4), -1, dtype=np.int64)
        self._etab[:len(names)] = etab
        for a, b, p in state["pairs"]:
            if not (0 <= a < len(names) and 0 <= b < len(names) and 0 <= p < n_params):
                raise InterfpredError(f"state pair {[a, b, p]} is out of range")
            self._new_pair(int(a), int(b), int(p))
        cap = max(N + 1, 16)
        self._est = np.zeros((4, cap))
        self._est[EK.EST_MEAN, :N] = mu
        self._est[EK.EST_PRIOR_INFO, :N] = r0
        if full:
            t0 = np.asarray(state["t0"], dtype=np.float64)
            upper = np.asarray(state["P_upper"], dtype=np.float64)
            if t0.shape != (N,) or upper.shape != (N * (N + 1) // 2,) or int(g[EK.ENT_N_FULL]) != N:
                raise InterfpredError("state covariance does not match the number of parameters")
            self._est[EK.EST_PRIOR_MEAN, :N] = t0
            self._P = np.zeros((cap, cap))
            rows, cols = np.triu_indices(N)
            self._P[rows, cols] = upper
            self._P[cols, rows] = upper
        else:
            info = np.asarray(state["info"], dtype=np.float64)
            if info.shape != (N,):
                raise InterfpredError("state info does not match the number of parameters")
            self._est[EK.EST_INFO, :N] = info
        self._np = n_params
        self._names = names
        self._eid = {s: i for i, s in enumerate(names)}
        evidence = np.asarray(state["evidence"], dtype=np.float64)
        if evidence.shape != (len(names),) or not (np.isfinite(evidence).all() and (evidence >= 0).all()):
            raise InterfpredError(f"state evidence must hold one count >= 0 per entity ({len(names)}), "
                                  f"got shape {evidence.shape}")
        self._evidence = np.zeros(cap_e)
        self._evidence[:len(names)] = evidence
        backoff = type(self._backoff).from_state(state["backoff"], source="state backoff")
        if backoff.n_features_in_ not in (None, d) or backoff.get_params() != self._backoff.get_params():
            raise InterfpredError("state backoff does not match the predictor's width or parameters")
        self._backoff = backoff
        scale = state.get("backoff_scale")
        if isinstance(scale, bool) or not isinstance(scale, (int, float)) or not (math.isfinite(scale) and scale > 0):
            raise InterfpredError(f"state backoff_scale must be a finite number > 0, got {scale!r}")
        self._scale = float(scale)
        if not all(np.isfinite(a).all() for a in (self._est, self._P)):
            raise InterfpredError("state contains non-finite values")
