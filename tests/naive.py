"""Plain-Python reference implementations that the library's fast paths are checked against.

Shared file: each area appends its own clearly named functions; do not rewrite others'.
Tests import it as ``from naive import ...`` (and the shared cases as ``from _timeline_cases
import ...``): pytest puts tests/ on ``sys.path`` because the folder is not a package, whether it
runs as ``pytest`` or ``python -m pytest`` and from whichever folder.
"""

from __future__ import annotations

import math

import numpy as np

# ---------------------------------------------------------------- ingest


def naive_profile_numbers(durations_ms, sm, l2, dram, iterations=1):
    """(solo_ms, sm, l2, dram) of a list of kernel launches: summed time / iterations and
    duration-weighted means, one launch at a time."""
    total = 0.0
    acc = [0.0, 0.0, 0.0]
    for d, a, b, c in zip(durations_ms, sm, l2, dram):
        total += d
        acc[0] += d * a
        acc[1] += d * b
        acc[2] += d * c
    return total / iterations, acc[0] / total, acc[1] / total, acc[2] / total


def naive_details_page(path_or_lines):
    """Read an ncu ``--page details`` CSV the slow obvious way: pivot every metric row into a
    dict per (Process ID, ID), keeping all metrics as (unit, value text) pairs."""
    import csv

    if isinstance(path_or_lines, str):
        with open(path_or_lines, encoding="utf-8") as fh:
            lines = fh.read().splitlines()
    else:
        lines = list(path_or_lines)
    start = next(i for i, line in enumerate(lines) if line.startswith('"ID",'))
    rows = list(csv.reader(lines[start:]))
    header = rows[0]
    kernels: dict = {}
    for row in rows[1:]:
        if len(row) < header.index("Metric Value") + 1 or not row[0].isdigit():
            continue
        rec = dict(zip(header, row))
        key = (rec.get("Process ID", ""), rec["ID"])
        k = kernels.setdefault(key, {"name": rec["Kernel Name"], "metrics": {}})
        if rec["Metric Name"]:
            k["metrics"].setdefault(rec["Metric Name"], (rec["Metric Unit"], rec["Metric Value"]))
    return list(kernels.values())


# --- predictors -------------------------------------------------------------------------------------------
def naive_ew_ridge(X, y, *, forgetting, delta, w0, stabilize):
    """Closed-form exponentially weighted ridge regression, the RLS target.

    Minimises sum_i f**(t-i) [(y_i - w.x_i)^2 + rho (w_j(i) - w0_j(i))^2] + f**t (w - w0)' (w - w0) / delta
    with rho = m (1 - f) / delta and j(i) = (i - 1) mod m the stabilising pseudo-observation of
    step i (rho = 0 for plain RLS).  X already includes any constant column.  Returns the
    solution and the information matrix.
    """
    X = np.asarray(X, dtype=float)
    y = np.asarray(y, dtype=float)
    t, m = X.shape
    weights = forgetting ** np.arange(t - 1, -1, -1, dtype=float)
    A = X.T @ (weights[:, None] * X) + forgetting**t * np.eye(m) / delta
    b = X.T @ (weights * y) + forgetting**t * np.asarray(w0) / delta
    if stabilize:
        rho = m * (1.0 - forgetting) / delta
        for i in range(t):
            j = i % m
            A[j, j] += weights[i] * rho
            b[j] += weights[i] * rho * w0[j]
    return np.linalg.solve(A, b), A


def naive_sgd_constant(X, y, *, learning_rate, intercept_init=1.0):
    """Plain-Python SGD on (y - w.x - b)^2 with a constant rate, weights and intercept alike."""
    w = [0.0] * len(X[0])
    b = intercept_init
    for x, t in zip(X, y):
        yhat = sum(wi * xi for wi, xi in zip(w, x)) + b
        g = 2.0 * (yhat - t)
        b -= learning_rate * g
        w = [wi - learning_rate * g * xi for wi, xi in zip(w, x)]
    return np.array(w), b


def naive_nlms(X, y, *, learning_rate, eps, intercept_init=1.0):
    """Plain-Python normalised LMS with an appended constant feature."""
    m = len(X[0]) + 1
    w = [0.0] * (m - 1) + [intercept_init]
    for x, t in zip(X, y):
        z = list(x) + [1.0]
        e = t - sum(wi * zi for wi, zi in zip(w, z))
        nrm = eps + sum(zi * zi for zi in z)
        w = [wi + learning_rate * e * zi / nrm for wi, zi in zip(w, z)]
    return np.array(w)
# ---------------------------------------------------------------- timeline and features
# O(n^2) on purpose: every definition spelled out the obvious way, no sweep, no sorting tricks.


def naive_segments(gpu, start, end):
    """Segments as ``(gpu, t0, t1, frozenset(rows))``, sorted by (gpu, t0), non-empty only.

    Between two consecutive event times of one GPU nothing changes, and every event time of a
    positive-length execution changes the running set, so these are exactly the segments.
    Intervals are half-open; zero-length executions take part in nothing.
    """
    n = len(start)
    out = []
    for g in sorted({str(x) for x in gpu}):
        rows = [i for i in range(n) if str(gpu[i]) == g and float(end[i]) > float(start[i])]
        times = sorted({float(start[i]) for i in rows} | {float(end[i]) for i in rows})
        for t0, t1 in zip(times, times[1:]):
            members = frozenset(i for i in rows if float(start[i]) <= t0 and float(end[i]) >= t1)
            if members:
                out.append((g, t0, t1, members))
    return out


def naive_exposure(gpu, start, end, i):
    """Co-location timeline of row ``i``: list of ``(duration, sorted co-runner rows)``.

    O(n) per row (a scan of every other row), so O(n^2) over a trace.
    """
    s_i, e_i, g_i = float(start[i]), float(end[i]), str(gpu[i])
    if e_i <= s_i:
        return []
    co = [j for j in range(len(start)) if j != i and str(gpu[j]) == g_i and float(end[j]) > float(start[j])
          and float(start[j]) < e_i and float(end[j]) > s_i]
    times = {s_i, e_i}
    for j in co:
        for t in (float(start[j]), float(end[j])):
            if s_i < t < e_i:
                times.add(t)
    times = sorted(times)
    out = []
    for t0, t1 in zip(times, times[1:]):
        out.append((t1 - t0, sorted(j for j in co if float(start[j]) <= t0 and float(end[j]) >= t1)))
    return out


def naive_feature_map(me, others, feature_map="default", combine="sum"):
    """The built-in feature maps, written out: ``me`` is (sm, l2, dram), ``others`` a list of those."""
    others = [tuple(float(v) for v in o) for o in others]
    me = tuple(float(v) for v in me)
    if combine == "sum":
        other = [sum(o[r] for o in others) for r in range(3)]
    else:
        other = [max([o[r] for o in others], default=0.0) for r in range(3)]
    if feature_map == "gpulets":
        return [me[1], me[2], other[1], other[2]]
    out = list(me) + other
    if feature_map == "rich":
        total = [me[r] + sum(o[r] for o in others) for r in range(3)]
        out += [me[r] * other[r] for r in range(3)]
        out += total
        out += [max(0.0, total[r] - 1.0) for r in range(3)]
        out += [float(len(others))]
    return out


def naive_features(gpu, start, end, demands, feature_map="default", combine="sum",
                   aggregation="time_weighted", alpha=None, map_fn=None):
    """Aggregated features of every row (list of lists), straight from the definitions.

    ``map_fn(me, others)`` replaces the built-in map when given.
    """
    def phi(me, others):
        if map_fn is not None:
            return [float(v) for v in map_fn(me, others)]
        return naive_feature_map(me, others, feature_map, combine)

    rows = []
    for i in range(len(start)):
        me = list(demands[i])
        exp = naive_exposure(gpu, start, end, i)
        if not exp:
            rows.append(phi(me, []))
            continue
        values = [(d, phi(me, [list(demands[j]) for j in co])) for d, co in exp]
        if aggregation == "static":
            rows.append(values[0][1])
        elif aggregation == "ewma":
            s = values[0][1]
            for _, v in values[1:]:
                s = [alpha * a + (1 - alpha) * b for a, b in zip(v, s)]
            rows.append(s)
        else:
            total = sum(d for d, _ in values)
            rows.append([sum(d * v[f] for d, v in values) / total for f in range(len(values[0][1]))])
    return rows


# ---------------------------------------------------------------------------- simulator (interfpred.sim)


def naive_sim_rates(demands, capacities, theta, epsilon):
    """Ground-truth rates by the simulator's definition (docs/simulator.md), in plain Python.

    Pollution uses the explicit sum over the other executions; each progressive-filling round
    finds the common level by bisection on feasibility (not by the kernel's closed form).
    """
    k = len(demands)
    if k == 0:
        return []
    eff = []
    for j in range(k):
        sm, l2, dram = (float(x) for x in demands[j])
        others = sum(float(demands[i][1]) for i in range(k) if i != j)
        eff.append((sm, l2, min(1.0, dram * (1.0 + theta * l2 * others))))
    rate = [0.0] * k
    frozen = [False] * k
    level = 0.0

    def fits(lv):
        for res in range(3):
            load = sum((rate[j] if frozen[j] else lv) * eff[j][res] for j in range(k))
            if load > capacities[res] * (1.0 + 1e-13):
                return False
        return True

    while not all(frozen):
        lo, hi = level, 1.0
        if fits(hi):
            lo = hi
        else:
            for _ in range(200):
                mid = 0.5 * (lo + hi)
                if fits(mid):
                    lo = mid
                else:
                    hi = mid
                if hi - lo <= 1e-16 * max(1.0, hi):
                    break
        level = lo
        for j in range(k):
            if not frozen[j]:
                rate[j] = level
        if level >= 1.0:
            break
        froze_any = False
        for res in range(3):
            load = sum(rate[j] * eff[j][res] for j in range(k))
            if load >= capacities[res] * (1.0 - 1e-9):
                for j in range(k):
                    if not frozen[j] and eff[j][res] > 0.0:
                        frozen[j] = True
                        froze_any = True
        if not froze_any:  # bisection stopped a hair short: the tightest resource is saturated
            res = min(range(3), key=lambda r: capacities[r] - sum(rate[j] * eff[j][r] for j in range(k)))
            for j in range(k):
                if not frozen[j] and eff[j][res] > 0.0:
                    frozen[j] = True
    scale = 1.0 / (1.0 + epsilon * (k - 1))
    return [r * scale for r in rate]


def naive_sim_integrate(work, demands, times, devices, capacities, theta, epsilon, limit, *, dt,
                        clip_to_events=True):
    """Brute-force small-time-step integration of the fluid model; returns (start, end) lists.

    Time advances in steps of at most ``dt``; in each step the running set of each GPU is fixed
    and every execution's remaining work falls by rate x step.

    Why steps are clipped to events: a fixed-step integrator notices an arrival or a completion
    only at the end of the step it falls in, an O(dt) error per event that then propagates; 1e-6
    relative agreement on ~10 ms executions would need dt ~ 1e-8 ms and ~10^9 steps.  With
    ``clip_to_events=True`` a step also stops at the next arrival and at the earliest completion
    at the current rates, so between grid points the integration is exact and the result
    differs from the exact solution only by rounding accumulated over the many small steps;
    the grid still exercises the bookkeeping (queue, ties, launch order) independently of the
    event engine.  ``clip_to_events=False`` is the plain fixed-step scheme (first-order in dt),
    used to show convergence.
    """
    n = len(work)
    start = [math.nan] * n
    end = [math.nan] * n
    for dev in sorted(set(devices)):
        idx = sorted((i for i in range(n) if devices[i] == dev), key=lambda i: (times[i], i))
        queue = []
        running = {}  # execution -> remaining work
        p = 0
        t = 0.0
        while p < len(idx) or queue or running:
            if not running and not queue:
                t = max(t, times[idx[p]])       # idle: jump to the next arrival
            while p < len(idx) and times[idx[p]] <= t:
                queue.append(idx[p])
                p += 1
            while queue and len(running) < limit:
                e = queue.pop(0)
                start[e] = t
                running[e] = float(work[e])
            members = sorted(running)
            rates = naive_sim_rates([demands[e] for e in members], capacities, theta, epsilon)
            step = dt
            if clip_to_events:
                if p < len(idx):
                    step = min(step, times[idx[p]] - t)
                step = min(step, min(running[e] / r for e, r in zip(members, rates)))
            t_next = t + step
            done = []
            for e, r in zip(members, rates):
                running[e] -= r * step
                if running[e] <= 1e-12 * work[e]:
                    done.append(e)
            for e in done:
                end[e] = t_next
                del running[e]
            t = t_next
    return start, end


def naive_ops_integrate(programs, prog, scale, foot, hide, times, devices, spec, limit, *, dt):
    """Brute-force stepping of the phase-structured truth; returns (start, end) lists.

    ``programs[i]`` is a list of (duration_ms, (sm, l2, dram)) operators.  Each step (at most
    ``dt``, clipped to the next arrival and the earliest operator boundary like
    :func:`naive_sim_integrate`) recomputes every rate from scratch: the footprint overflow
    ``min(1, max(0, sum f / l2_mb - 1))`` scales theta, :func:`naive_sim_rates` fills, and each
    rate is raised to the execution's hiding factor.
    """
    n = len(prog)
    start = [math.nan] * n
    end = [math.nan] * n
    for dev in sorted(set(devices)):
        idx = sorted((i for i in range(n) if devices[i] == dev), key=lambda i: (times[i], i))
        queue = []
        running = {}  # execution -> [operator index, remaining work of that operator]
        p = 0
        t = 0.0
        while p < len(idx) or queue or running:
            if not running and not queue:
                t = max(t, times[idx[p]])
            while p < len(idx) and times[idx[p]] <= t:
                queue.append(idx[p])
                p += 1
            while queue and len(running) < limit:
                e = queue.pop(0)
                start[e] = t
                running[e] = [0, programs[prog[e]][0][0] * scale[e]]
            members = sorted(running)
            over = min(1.0, max(0.0, sum(foot[e] for e in members) / spec.l2_mb - 1.0))
            theta = spec.theta * (1.0 + spec.kappa * over)
            dem = [programs[prog[e]][running[e][0]][1] for e in members]
            fair = naive_sim_rates(dem, spec.capacities, theta, spec.epsilon)
            rates = [r ** hide[e] for e, r in zip(members, fair)]
            step = dt
            if p < len(idx):
                step = min(step, times[idx[p]] - t)
            step = min(step, min(running[e][1] / r for e, r in zip(members, rates)))
            t_next = t + step
            for e, r in zip(members, rates):
                st = running[e]
                st[1] -= r * step
                if st[1] <= 1e-12 * programs[prog[e]][st[0]][0] * scale[e]:
                    st[0] += 1
                    if st[0] == len(programs[prog[e]]):
                        end[e] = t_next
                        del running[e]
                    else:
                        st[1] = programs[prog[e]][st[0]][0] * scale[e]
            t = t_next
    return start, end


def naive_merge_phases(durations, demands, max_phases):
    """Greedy Ward merging of neighbouring operators, by its definition, in plain Python.

    Returns (durations, demands) of the phases.  Ties go to the leftmost pair.
    """
    ph = [(float(d), [float(x) for x in u]) for d, u in zip(durations, demands)]
    while len(ph) > max_phases:
        costs = []
        for i in range(len(ph) - 1):
            (da, ua), (db, ub) = ph[i], ph[i + 1]
            costs.append(da * db / (da + db) * sum((a - b) ** 2 for a, b in zip(ua, ub)))
        i = costs.index(min(costs))
        (da, ua), (db, ub) = ph[i], ph[i + 1]
        ph[i:i + 2] = [(da + db, [(da * a + db * b) / (da + db) for a, b in zip(ua, ub)])]
    return [d for d, _ in ph], [u for _, u in ph]


# ---------------------------------------------------------------------------- tracker


def naive_tracker_projection(events, t, candidates, rate_fn, *, min_remaining=0.01):
    """What-if projection of ColocationTracker by its definition, in plain Python.

    ``events``: list of ``("start", id, demand (3,), solo_ms, time)`` and ``("finish", id, time)``
    in order; ``candidates``: list of ``(id, demand, solo_ms)`` launched at ``t``;
    ``rate_fn(list of demands) -> list of rates`` (already clamped). Remaining solo work is
    integrated between events with the rates of the running set of that interval, floored at
    ``min_remaining * solo``; then every execution progresses at its rate for the projected
    running set until the next completion. Returns id -> projected end time.
    """
    running = {}              # id -> [demand, solo, remaining]
    order = []
    last = None
    for ev in events:
        te = ev[-1]
        if last is not None and te > last and running:
            ids = list(order)
            rates = rate_fn([running[i][0] for i in ids])
            for i, r in zip(ids, rates):
                running[i][2] = max(running[i][2] - r * (te - last), min_remaining * running[i][1])
        last = te if last is None else max(last, te)
        if ev[0] == "start":
            running[ev[1]] = [list(ev[2]), float(ev[3]), float(ev[3])]
            order.append(ev[1])
        else:
            del running[ev[1]]
            order.remove(ev[1])
    if last is not None and t > last and running:
        ids = list(order)
        rates = rate_fn([running[i][0] for i in ids])
        for i, r in zip(ids, rates):
            running[i][2] = max(running[i][2] - r * (t - last), min_remaining * running[i][1])
    work = {i: running[i][2] for i in order}
    dem = {i: running[i][0] for i in order}
    for cid, d, solo in candidates:
        work[cid] = float(solo)
        dem[cid] = list(d)
    active = list(work)
    end = {}
    now = float(t)
    while active:
        rates = rate_fn([dem[i] for i in active])
        taus = [work[i] / r for i, r in zip(active, rates)]
        step = min(taus)
        now_next = now + step
        keep = []
        for i, r, tau in zip(active, rates, taus):
            if tau <= step * (1 + 1e-12):
                end[i] = now_next
            else:
                work[i] -= r * step
                keep.append(i)
        active = keep
        now = now_next
    return end
# ---------------------------------------------------------------- prequential evaluation
def naive_prequential(predictor, X, y, start_ms=None, end_ms=None):
    """Predict-then-learn, one row at a time, written for clarity (O(n^2) bookkeeping).

    With times: before predicting row i, learn every not-yet-learned row whose end_ms is at or
    before row i's start_ms, in order of end_ms (ties by row index).
    """
    n = len(y)
    out = []
    learned = [False] * n
    for i in range(n):
        if start_ms is not None:
            ready = sorted((float(end_ms[j]), j) for j in range(n)
                           if not learned[j] and end_ms[j] <= start_ms[i])
            for _, j in ready:
                predictor.update(np.asarray(X[j], dtype=float), float(y[j]))
                learned[j] = True
        out.append(float(predictor.predict(np.asarray(X[i], dtype=float))))
        if start_ms is None:
            predictor.update(np.asarray(X[i], dtype=float), float(y[i]))
    return np.array(out)


# --- per-entity terms (EntityRLS) -------------------------------------------------------------------------------------
def naive_entity_blocks(rows, *, d, forgetting, delta, entity_forgetting, variances, rank, seed_factors, log_target=False,
                        population="joint"):
    """Plain-Python decoupled Kalman filter of EntityRLS's "blocks" mode, without stabilisation.

    ``rows``: (x, y, own, {co: w}); ``variances``: (sensitivity, aggressiveness, pair, factor);
    ``seed_factors(e) -> 2 * rank`` initial factor values of the e-th entity seen (u then v).
    Returns a function predicting (x, own, {co: w}).
    """
    m = d + 1
    w = np.zeros(m)
    w[d] = 0.0 if log_target else 1.0
    P = np.eye(m) * delta
    mu, var = {}, {}          # key -> mean, variance
    ents = []

    def ensure(name):
        if name not in ents:
            e = len(ents)
            ents.append(name)
            mu[("s", name)], var[("s", name)] = 0.0, variances[0]
            mu[("a", name)], var[("a", name)] = 0.0, variances[1]
            init = seed_factors(e)
            for k in range(rank):
                mu[("u", name, k)], var[("u", name, k)] = init[k], variances[3]
                mu[("v", name, k)], var[("v", name, k)] = init[rank + k], variances[3]

    def terms(own, co):
        tot = sum(co.values())
        t = [(("s", own), min(1.0, tot))] if ("s", own) in mu else []
        for c, wc in co.items():
            if ("a", c) in mu:
                t.append((("a", c), wc))
            if ("p", own, c) in mu:
                t.append((("p", own, c), wc))
        return t

    def value(x, own, co, mean):
        xt = np.append(x, 1.0)
        s = float(w @ xt) + sum(h * mean(k) for k, h in terms(own, co))
        if rank and ("u", own, 0) in mu:
            V = [sum(wc * mean(("v", c, k)) for c, wc in co.items() if ("v", c, k) in mu) for k in range(rank)]
            s += sum(mean(("u", own, k)) * V[k] for k in range(rank))
        return s

    for x, y, own, co in rows:
        if sum(co.values()) == 0.0:
            continue
        if log_target:
            y = np.log(y)
        ensure(own)
        for c in co:
            ensure(c)
            if ("p", own, c) not in mu:
                mu[("p", own, c)], var[("p", own, c)] = 0.0, variances[2]
        keys = [k for k, _ in terms(own, co)]
        if rank:
            keys += [("u", own, k) for k in range(rank)] + [("v", c, k) for c in co for k in range(rank)]
        tvar = {k: var[k] / entity_forgetting for k in keys}
        h = dict(terms(own, co))
        for k in range(rank):
            h[("u", own, k)] = sum(wc * mu[("v", c, k)] for c, wc in co.items())
            for c, wc in co.items():
                h[("v", c, k)] = wc * mu[("u", own, k)]
        xt = np.append(x, 1.0)
        Pt = P / forgetting
        ent = sum(h[k] ** 2 * tvar[k] for k in keys)
        full_pred = value(x, own, co, lambda k: mu[k])
        if population == "joint":
            S = S_e = 1.0 + xt @ Pt @ xt + ent
            e = e_e = y - full_pred
        else:   # g learns y alone; the entity terms learn what the updated g leaves
            S, S_e = 1.0 + xt @ Pt @ xt, 1.0 + ent
            e = y - float(w @ xt)
        kg = Pt @ xt / S
        w_new = w + kg * e
        if population != "joint":
            e_e = y - (full_pred - float(w @ xt) + float(w_new @ xt))
        w = w_new
        P = Pt - np.outer(Pt @ xt, Pt @ xt) / S
        for k in keys:
            mu[k] = mu[k] + tvar[k] * h[k] / S_e * e_e
            var[k] = tvar[k] - tvar[k] ** 2 * h[k] ** 2 / S_e

    def predict(x, own, co):
        if sum(co.values()) == 0.0:
            return 1.0
        s = value(x, own, co, lambda k: mu.get(k, 0.0))
        return float(np.exp(s)) if log_target else s

    return predict


def naive_trace_entities(trace, aggregation, alpha=0.5):
    """Per row, (own model, {co-runner model: weight}) from the timeline's exposure, in plain Python."""
    from interfpred import build_timeline

    tl = build_timeline(trace)
    out = []
    for i in range(len(trace)):
        segs = tl.exposure(i)
        counts = []
        for dur, rows in segs:
            c = {}
            for j in rows:
                c[trace.model[j]] = c.get(trace.model[j], 0.0) + 1.0
            counts.append((dur, c))
        acc = {}
        if aggregation == "static" and counts:
            acc = dict(counts[0][1])
        elif aggregation == "ewma" and counts:
            acc = dict(counts[0][1])
            for _, c in counts[1:]:
                acc = {k: alpha * c.get(k, 0.0) + (1 - alpha) * acc.get(k, 0.0) for k in set(acc) | set(c)}
        elif aggregation == "time_weighted" and counts:
            total = sum(dur for dur, _ in counts)
            for dur, c in counts:
                for k, v in c.items():
                    acc[k] = acc.get(k, 0.0) + v * dur / total
        out.append((str(trace.model[i]), {k: v for k, v in acc.items() if v > 0}))
    return out
# ---------------------------------------------------------------- calibrated bounds (interfpred.Calibrated)


def naive_conformal_stream(scores, levels, *, window, method, gamma, tau_range=(-1.0, 2.0)):
    """Thresholds in force before each score of a stream, per level, recomputed from scratch.

    Window: a plain list of the last ``window`` scores; threshold: the sorted window at rank
    ceil((k + 1) tau) for tau >= 0.5, floor((k + 1) tau) below (clipped to 1..k; 0 with no score);
    ACI: tau += gamma * (level - [s <= threshold]), clipped to ``tau_range``; ``fixed`` freezes
    the window once full. Returns (thresholds (n, L) before each score, hits (L,), taus (L,)).
    """
    win: list[float] = []
    taus = [float(v) for v in levels]
    hits = [0] * len(levels)
    out = []
    for s in scores:
        srt = sorted(win)
        k = len(srt)
        row = []
        for li, lv in enumerate(levels):
            tau = taus[li] if method == "aci" else lv
            if k == 0:
                row.append(0.0)
                continue
            r = math.ceil((k + 1) * tau - 1e-9) if tau >= 0.5 else math.floor((k + 1) * tau + 1e-9)
            row.append(srt[min(max(r, 1), k) - 1])
        out.append(row)
        for li, lv in enumerate(levels):
            ok = 1.0 if s <= row[li] else 0.0
            hits[li] += ok
            if method == "aci":
                taus[li] = min(max(taus[li] + gamma * (lv - ok), tau_range[0]), tau_range[1])
        if method == "fixed" and len(win) == window:
            continue
        win.append(float(s))
        if len(win) > window:
            win.pop(0)
    return np.array(out), np.array(hits, dtype=float), np.array(taus)


# ---------------------------------------------------------------- kernel blocking


def naive_blocking_log_slowdown(state, X, entities):
    """log slowdown of each row under KernelBlocking's saved ``state`` (its ``to_state()["state"]``), one
    co-runner at a time: ``log(1 + sum_c w_c exp(b + <w, x> + k rate[own] + h hold[c] + s[own] + a[c] +
    p[own, c]))`` with kernel terms centred on ``state["center"]``; terms not held count 0, names without
    kernel terms take the mean of the known ones (0 when none is known)."""
    names = list(state["names"])
    theta = [float(v) for v in state["theta"]]
    d = len(X[0])
    g = 1 + d + 2
    pos = {tuple(k): g + i for i, k in enumerate(state["terms"])}
    known = [row for row in state["covariates"] if row[0] is not None and row[1] is not None]
    fill = [sum(r[0] for r in known) / len(known), sum(r[1] for r in known) / len(known)] if known else [0.0, 0.0]
    given = entities.covariates

    def cov(k):
        if given is not None and not math.isnan(given[k][0]) and not math.isnan(given[k][1]):
            return [float(given[k][0]), float(given[k][1])]
        name = entities.names[k]
        if name in names:
            row = state["covariates"][names.index(name)]
            if row[0] is not None and row[1] is not None:
                return [float(row[0]), float(row[1])]
        return fill

    def term(*key):
        return theta[pos[key]] if key in pos else 0.0

    out = []
    for i in range(len(X)):
        own = int(entities.own[i])
        me = entities.names[own]
        excess = 0.0
        for j in range(int(entities.indptr[i]), int(entities.indptr[i + 1])):
            c, w = int(entities.co[j]), float(entities.weight[j])
            if w <= 0.0:
                continue
            eta = theta[0] + sum(theta[1 + q] * float(X[i][q]) for q in range(d))
            eta += theta[1 + d] * (cov(own)[0] - state["center"][0]) + theta[2 + d] * (cov(c)[1] - state["center"][1])
            eta += term("s", me) + term("a", entities.names[c]) + term("p", me, entities.names[c])
            excess += w * math.exp(eta)
        out.append(math.log1p(excess))
    return out
