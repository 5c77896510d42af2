"""Where interfpred's compiled kernels are cached: never beside the source, NUMBA_CACHE_DIR honoured.

Each case runs in a fresh interpreter, because numba reads its cache settings once per
function, at decoration, and interfpred chooses its cache folder once per process.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]

# A module with one cached kernel, written into a throwaway folder: where its cache lands is
# what each case checks (the checkout's own __pycache__ may hold caches of earlier runs).
KERNEL_MODULE = textwrap.dedent("""
    from interfpred._core.jit import njit

    @njit(cache=True)
    def twice(x):
        return 2.0 * x
""")

RUN = textwrap.dedent("""
    import sys, warnings
    sys.path.insert(0, sys.argv[1])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        import kernel_mod
        assert kernel_mod.twice(1.5) == 3.0
    print("WARNINGS:" + "|".join(str(w.message) for w in caught))
""")


def _run(tmp_path: Path, env_extra: dict[str, str]) -> tuple[Path, str]:
    src = tmp_path / "src"
    src.mkdir()
    (src / "kernel_mod.py").write_text(KERNEL_MODULE)
    env = {k: v for k, v in os.environ.items() if k not in ("NUMBA_CACHE_DIR", "XDG_CACHE_HOME")}
    env.update(env_extra)
    env["PYTHONPATH"] = str(REPO)
    done = subprocess.run([sys.executable, "-c", RUN, str(src)], env=env, capture_output=True, text=True,
                          timeout=300, check=False)
    assert done.returncode == 0, done.stderr
    return src, done.stdout


def _cache_files(folder: Path) -> list[Path]:
    return sorted(p for p in folder.rglob("*") if p.suffix in (".nbi", ".nbc"))


def test_cache_goes_to_the_user_folder_never_beside_the_source(tmp_path):
    user = tmp_path / "xdg"
    src, out = _run(tmp_path, {"XDG_CACHE_HOME": str(user)})
    assert _cache_files(src) == []
    cached = _cache_files(user / "interfpred" / "numba")
    assert any(p.name.startswith("kernel_mod.twice") and p.suffix == ".nbi" for p in cached), cached
    assert "cannot cache" not in out


def test_numba_cache_dir_is_honoured(tmp_path):
    chosen = tmp_path / "chosen"
    user = tmp_path / "xdg"
    src, _ = _run(tmp_path, {"NUMBA_CACHE_DIR": str(chosen), "XDG_CACHE_HOME": str(user)})
    assert _cache_files(src) == []
    assert _cache_files(chosen), "nothing cached in NUMBA_CACHE_DIR"
    assert not (user / "interfpred").exists()


def test_no_writable_folder_means_no_cache_and_one_warning(tmp_path):
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("a file where the cache folder would go")
    src, out = _run(tmp_path, {"XDG_CACHE_HOME": str(blocker)})
    assert _cache_files(src) == []
    warnings_line = out.split("WARNINGS:", 1)[1]
    assert warnings_line.count("numba cannot cache interfpred's compiled kernels") == 1, out


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX cache folder rule")
def test_cache_dir_follows_xdg(monkeypatch, tmp_path):
    from interfpred._core.jit import cache_dir

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    if sys.platform == "darwin":
        assert cache_dir() == Path.home() / "Library" / "Caches" / "interfpred" / "numba"
    else:
        assert cache_dir() == tmp_path / "interfpred" / "numba"
    monkeypatch.delenv("XDG_CACHE_HOME")
    if sys.platform != "darwin":
        assert cache_dir() == Path.home() / ".cache" / "interfpred" / "numba"


# Several processes compiling one cached kernel at once, each for its own argument types, into one
# cache folder (a process pool on a fresh install): every signature must come back from the cache
# afterwards, each with its own machine code.
COMPILE_ONE = textwrap.dedent("""
    import sys, time
    sys.path.insert(0, sys.argv[1])
    import numpy as np
    import kernel_mod
    while time.time() < float(sys.argv[3]):     # start together
        time.sleep(0.005)
    arg = {"int": 3, "float": 1.5, "array": np.arange(3.0), "bool": True}[sys.argv[2]]
    print(repr(kernel_mod.twice(arg)))
""")

CHECK_ALL = textwrap.dedent("""
    import sys
    sys.path.insert(0, sys.argv[1])
    import numpy as np
    import kernel_mod
    got = [kernel_mod.twice(3), kernel_mod.twice(1.5), kernel_mod.twice(np.arange(3.0)).tolist(),
           kernel_mod.twice(True)]
    assert got == [6.0, 3.0, [0.0, 2.0, 4.0], 2.0], got
    stats = kernel_mod.twice.stats
    assert not stats.cache_misses and sum(stats.cache_hits.values()) == 4, stats
    print("OK")
""")


def test_processes_compiling_one_kernel_at_once_keep_every_signature(tmp_path):
    import time

    src = tmp_path / "src"
    src.mkdir()
    (src / "kernel_mod.py").write_text(KERNEL_MODULE)
    env = {k: v for k, v in os.environ.items() if k not in ("NUMBA_CACHE_DIR", "XDG_CACHE_HOME")}
    env.update(NUMBA_CACHE_DIR=str(tmp_path / "cache"), PYTHONPATH=str(REPO))
    start = str(time.time() + 6.0)     # after every interpreter has imported numba
    procs = [subprocess.Popen([sys.executable, "-c", COMPILE_ONE, str(src), kind, start], env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for kind in ("int", "float", "array", "bool")]
    outs = [p.communicate(timeout=300) for p in procs]
    assert all(p.returncode == 0 for p in procs), [e for _, e in outs]
    assert [o.strip() for o, _ in outs] == ["6.0", "3.0", "array([0., 2., 4.])", "2.0"]
    assert list((tmp_path / "cache" / "locks").glob("kernel_mod.twice.*.lock"))
    done = subprocess.run([sys.executable, "-c", CHECK_ALL, str(src)], env=env, capture_output=True, text=True,
                          timeout=300, check=False)
    assert done.returncode == 0 and done.stdout.strip() == "OK", done.stderr
