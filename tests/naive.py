"""Plain-Python / plain-numpy reference implementations the kernels are checked against.

Shared by every issue: add your own clearly named functions, do not rewrite others'.
"""

from __future__ import annotations

# ---------------------------------------------------------------- timeline and features (issue 3)
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
                   aggregation="time-weighted", alpha=None, map_fn=None):
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
