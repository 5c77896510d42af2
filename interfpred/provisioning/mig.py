"""MIG (Multi-Instance GPU) profiles: GPCs, SMs, memory slices and valid placements per GPU.

A MIG GPU instance takes a number of GPCs (compute) and a contiguous run of the GPU's 8 memory
slices starting at one of its profile's allowed placements; instances on one GPU never share a
memory slice. Every GPU here has 7 GPCs and 8 memory slices, and the same placement rules:

======  ==========================  ===============  =========
GPCs    profile (A100-80GB)         placements       slices
======  ==========================  ===============  =========
1       1g.10gb                     0, 1, ..., 6     1
1       1g.20gb                     0, 2, 4, 6       2
2       2g.20gb                     0, 2, 4          2
3       3g.40gb                     0, 4             4
4       4g.40gb                     0                4
7       7g.80gb                     0                8
======  ==========================  ===============  =========

So a 3-GPC instance at slice 4 takes slices 4-7, and 4 + 3 GPCs, 3 + 2 + 2 (2g at 0 and 2, 3g at
4) or 3 + 1 + 1 + 1 + 1 fill a GPU, while 3 + 3 leaves a GPC idle. The media-extension profiles
(``+me``) have the placements of their base profile and are not listed.

Source: NVIDIA Multi-Instance GPU User Guide, "Supported MIG Profiles" (A100-SXM4-40GB/80GB,
H100-SXM5-80GB and H200-SXM5-141GB tables: fraction of SMs and memory, and the placement diagram;
https://docs.nvidia.com/datacenter/tesla/mig-user-guide/supported-mig-profiles.html), with the SM
counts ``nvidia-smi mig -lgip`` reports (A100: 14 per GPC, 98 in 7g; H100 and H200: 16, 26 in
the double-memory 1g, 32, 60, 64 and 132) and the placements of ``nvidia-smi mig -lgipp``.

Examples
--------
>>> [p.name for p in MIG_GPUS["a100-80gb"]]
['1g.10gb', '1g.20gb', '2g.20gb', '3g.40gb', '4g.40gb', '7g.80gb']
>>> mig_profile("h100-80gb", 3).sms, mig_profile("a100-80gb", "4g.40gb").gpcs
(60, 4)
>>> check_layout("a100-80gb", [(2, 0), (2, 2), (3, 4)])
[]
>>> check_layout("a100-80gb", [(3, 4), (1, 6)])
['1 GPCs (1g.10gb) at slice 6 overlaps 3 GPCs (3g.40gb) at slice 4 (slices 4-7)']
>>> layout_sizes("a100-80gb")[:4]
[(7,), (4, 3), (4, 2, 1), (4, 1, 1, 1)]
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import cache

from interfpred._core.numbers import is_int_text
from interfpred.errors import InterfpredError

__all__ = ["GPU_ALIASES", "MIG_GPUS", "MIG_MEMORY_SLICES", "MigProfile", "check_layout", "check_same_gpu",
           "fits_some_layout", "gpu_kind", "layout_sizes", "mig_profile", "place"]

#: Memory slices of every MIG GPU listed here (placements are slice indices 0-7).
MIG_MEMORY_SLICES = 8


@dataclass(frozen=True)
class MigProfile:
    """One MIG GPU-instance profile: its name, GPCs, SMs, memory slices it spans, allowed first slices."""

    name: str
    gpcs: int
    sms: int
    memory_slices: int
    placements: tuple[int, ...]


def _gpu(names: Sequence[str], sms: Sequence[int]) -> tuple[MigProfile, ...]:
    shape = ((1, 1, tuple(range(7))), (1, 2, (0, 2, 4, 6)), (2, 2, (0, 2, 4)), (3, 4, (0, 4)), (4, 4, (0,)),
             (7, 8, (0,)))
    return tuple(MigProfile(n, g, s, w, p) for n, s, (g, w, p) in zip(names, sms, shape, strict=True))


#: MIG profiles by GPU name, smallest first; for each GPC count the first profile listed (the one
#: with the least memory) is the one a partition given in GPCs means.
MIG_GPUS: dict[str, tuple[MigProfile, ...]] = {
    "a100-40gb": _gpu(("1g.5gb", "1g.10gb", "2g.10gb", "3g.20gb", "4g.20gb", "7g.40gb"), (14, 14, 28, 42, 56, 98)),
    "a100-80gb": _gpu(("1g.10gb", "1g.20gb", "2g.20gb", "3g.40gb", "4g.40gb", "7g.80gb"), (14, 14, 28, 42, 56, 98)),
    "h100-80gb": _gpu(("1g.10gb", "1g.20gb", "2g.20gb", "3g.40gb", "4g.40gb", "7g.80gb"), (16, 26, 32, 60, 64, 132)),
    "h200-141gb": _gpu(("1g.18gb", "1g.35gb", "2g.35gb", "3g.71gb", "4g.71gb", "7g.141gb"),
                       (16, 26, 32, 60, 64, 132)),
}


#: Other names of the GPU kinds above, as profile tables and the simulator's presets write them: ``a100`` is
#: the simulator's A100 preset (an A100-40GB), ``h200`` the GPU of the shipped H200 runs.
GPU_ALIASES = {"a100": "a100-40gb", "h100": "h100-80gb", "h200": "h200-141gb"}


def gpu_kind(gpu: str) -> str:
    """The one name of a GPU kind: lower case, with :data:`GPU_ALIASES` resolved (other names kept as given).

    Examples
    --------
    >>> gpu_kind("H200"), gpu_kind("a100-80gb"), gpu_kind("l4")
    ('h200-141gb', 'a100-80gb', 'l4')
    """
    key = str(gpu).strip().lower()
    return GPU_ALIASES.get(key, key)


def check_same_gpu(gpu: str, measured: Sequence[str], *, what: str, scaling: str | None = None) -> None:
    """Refuse ``gpu`` when the profiles were measured on other GPU kinds (``measured``; compared by :func:`gpu_kind`).

    ``what`` names the command's output (``plan``, ``advise``); ``scaling`` the option that would
    allow another GPU's latencies, when there is one.

    Examples
    --------
    >>> check_same_gpu("h200", ["h200-141gb"], what="advise")
    >>> check_same_gpu("h200-141gb", ["a100-80gb"], what="plan", scaling="--scale-latency")
    Traceback (most recent call last):
    ...
    interfpred.errors.InterfpredError: gpu 'h200-141gb': the profiles were measured on a100-80gb; plan for that GPU, give profiles measured on h200-141gb, or name a latency scaling (--scale-latency)
    """
    known = {gpu_kind(g) for g in measured}
    if not known or gpu_kind(gpu) in known:
        return
    tail = f", or name a latency scaling ({scaling})" if scaling else ""
    raise InterfpredError(f"gpu {gpu!r}: the profiles were measured on {', '.join(sorted(known))}; {what} for that "
                          f"GPU{',' if scaling else ' or'} give profiles measured on {gpu_kind(gpu)}{tail}")


def _key(gpu: str) -> str:
    key = gpu_kind(gpu)
    if key not in MIG_GPUS:
        raise InterfpredError(f"gpu {gpu!r} has no MIG profile table; known: {', '.join(MIG_GPUS)}")
    return key


def _profiles(gpu: str) -> tuple[MigProfile, ...]:
    return MIG_GPUS[_key(gpu)]


def mig_profile(gpu: str, partition: int | str) -> MigProfile:
    """The profile a partition names on ``gpu``: GPCs (an int or digits) or a profile name such as ``3g.40gb``."""
    profiles = _profiles(gpu)
    text = str(partition).strip()
    if is_int_text(text):
        for p in profiles:
            if p.gpcs == int(text):
                return p
        sizes = sorted({p.gpcs for p in profiles})
        raise InterfpredError(f"partition {text} GPCs is not a MIG size on {gpu}; sizes: {sizes}")
    for p in profiles:
        if p.name == text.lower():
            return p
    raise InterfpredError(f"partition {partition!r} is not a MIG profile of {gpu}; profiles: "
                          f"{', '.join(p.name for p in profiles)} (or a GPC count)")


def _span(p: MigProfile, start: int) -> str:
    return f"slice {start}" if p.memory_slices == 1 else f"slices {start}-{start + p.memory_slices - 1}"


def check_layout(gpu: str, instances: Iterable[tuple[int | str, int]]) -> list[str]:
    """What is wrong with one GPU's instances, each (partition, first slice); empty when valid."""
    problems: list[str] = []
    owner: dict[int, tuple[MigProfile, int]] = {}
    for partition, start in instances:
        p = mig_profile(gpu, partition)
        what = f"{p.gpcs} GPCs ({p.name}) at slice {start}"
        if start not in p.placements:
            problems.append(f"{what}: {p.name} may start only at slice {', '.join(map(str, p.placements))}")
            continue
        clash = next((owner[s] for s in range(start, start + p.memory_slices) if s in owner), None)
        if clash is not None:
            problems.append(f"{what} overlaps {clash[0].gpcs} GPCs ({clash[0].name}) at slice {clash[1]} "
                            f"({_span(*clash)})")
            continue
        for s in range(start, start + p.memory_slices):
            owner[s] = (p, start)
    return problems


def _default_profiles(gpu: str) -> tuple[MigProfile, ...]:
    seen: dict[int, MigProfile] = {}
    for p in _profiles(gpu):
        seen.setdefault(p.gpcs, p)
    return tuple(seen.values())


@cache
def _layouts(gpu: str) -> tuple[tuple[tuple[int, int], ...], ...]:
    """Every maximal set of (GPCs, first slice) of the default profiles that fits one GPU."""
    options = [(p, s) for p in _default_profiles(gpu) for s in p.placements]
    found: list[tuple[tuple[int, int], ...]] = []

    def grow(chosen: list[tuple[MigProfile, int]], used: set[int], k: int) -> None:
        extended = False
        for i in range(k, len(options)):
            p, s = options[i]
            cells = set(range(s, s + p.memory_slices))
            if cells & used:
                continue
            extended = True
            grow([*chosen, (p, s)], used | cells, i + 1)
        if not extended:
            # maximal only if no option at all (also an earlier one) still fits
            if all(set(range(s, s + p.memory_slices)) & used for p, s in options):
                found.append(tuple(sorted(((p.gpcs, s) for p, s in chosen), key=lambda x: (-x[0], x[1]))))

    grow([], set(), 0)
    return tuple(sorted(set(found), key=lambda lay: ([-g for g, _ in lay], [s for _, s in lay])))


def layout_sizes(gpu: str) -> list[tuple[int, ...]]:
    """The GPC sizes of every maximal layout of ``gpu``, largest instances first, none contained in another."""
    sizes = {tuple(g for g, _ in lay) for lay in _layouts(_key(gpu))}
    kept = [t for t in sizes if not any(o != t and _contains(o, t) for o in sizes)]
    return sorted(kept, key=lambda t: [-g for g in t])


def _contains(big: tuple[int, ...], small: tuple[int, ...]) -> bool:
    pool = list(big)
    for g in small:
        if g not in pool:
            return False
        pool.remove(g)
    return True


def place(gpu: str, sizes: Sequence[int]) -> list[tuple[int, int]] | None:
    """Valid (GPCs, first slice) for instances of the given GPC sizes on one GPU, or None if they do not fit.

    Examples
    --------
    >>> place("a100-80gb", [1, 3, 1, 1, 1])
    [(3, 4), (1, 0), (1, 1), (1, 2), (1, 3)]
    >>> place("a100-80gb", [3, 3, 1]) is None
    True
    """
    want = sorted(sizes, reverse=True)
    for lay in _layouts(_key(gpu)):
        pool = list(lay)
        picked = []
        for g in want:
            hit = next((x for x in pool if x[0] == g), None)
            if hit is None:
                break
            pool.remove(hit)
            picked.append(hit)
        else:
            return picked
    return None


def fits_some_layout(gpu: str, sizes: Sequence[int]) -> bool:
    """Whether instances of these GPC sizes fit one GPU in some valid placement."""
    return place(gpu, sizes) is not None
