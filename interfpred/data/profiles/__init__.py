"""Solo profiles: one (model, batch size) measured alone on one GPU.

A :class:`Profile` is one validated record (pydantic, used at the edges: files, CLI,
config).  A :class:`ProfileTable` holds many of them as columns and answers lookups,
interpolating linearly between profiled batch sizes as gpulets does between powers of two;
:func:`profile_arrays` looks up every execution of a trace. CSV layout: docs/data.md.

Examples
--------
>>> table = ProfileTable.from_profiles([
...     Profile(gpu="l4", model="resnet50", batch_size=4, solo_ms=4.0, sm=0.4, l2=0.2, dram=0.3),
...     Profile(gpu="l4", model="resnet50", batch_size=8, solo_ms=6.0, sm=0.6, l2=0.3, dram=0.5),
... ])
>>> p = table.lookup("resnet50", 6)
>>> p.solo_ms, round(p.sm, 3), round(p.dram, 3)
(5.0, 0.5, 0.4)
"""

from interfpred.data.profiles.lookup import profile_arrays
from interfpred.data.profiles.record import Profile
from interfpred.data.profiles.table import ProfileTable

__all__ = ["Profile", "ProfileTable", "profile_arrays"]
