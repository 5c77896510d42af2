"""The README's two set-up commands, run in order in one fresh virtual environment, leave a working install.

This is what a new user does: install with the first command and run the main job, then
install the test extras (editable) with the second. Afterwards ``import interfpred`` and the
console script must work from outside the checkout, and ``pip uninstall`` must leave nothing
of interfpred in site-packages. Compiled numba kernels must never land inside the installed
package: files there are not in pip's record, survive the uninstall, and a folder left with
only them is a namespace package that hides the editable install.

It takes several minutes and needs the package index (or a warm pip cache), so it runs only
when ``INTERFPRED_INSTALL_TEST=1`` (CI sets it; see ``.ci/run``). The second command's test
run is the suite itself, which CI runs in its own environment; here only its install part runs.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]

needs_install_run = pytest.mark.skipif(
    os.environ.get("INTERFPRED_INSTALL_TEST") != "1",
    reason="set INTERFPRED_INSTALL_TEST=1 to run the install test (minutes, needs pip)")


def readme_commands() -> list[str]:
    """The README's set-up commands: the bash blocks before its first section heading."""
    text = (REPO / "README.md").read_text(encoding="utf-8")
    top = text.split("\n## ", 1)[0]
    return [block.strip() for block in re.findall(r"```bash\n(.*?)```", top, flags=re.S)]


def test_readme_has_exactly_two_setup_commands():
    commands = readme_commands()
    assert len(commands) == 2, commands
    assert "interfpred reproduce --quick" in commands[0]
    assert commands[1].startswith("pip install -e") and "pytest" in commands[1]


def _copy_checkout(dest: Path) -> Path:
    """The checkout's files as a clean clone has them (tracked and untracked-but-not-ignored)."""
    listed = subprocess.run(["git", "ls-files", "-co", "--exclude-standard", "-z"], cwd=REPO,
                            capture_output=True, check=True).stdout.decode().split("\0")
    for name in filter(None, listed):
        src = REPO / name
        if src.is_file():
            target = dest / name
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, target)
    return dest


def _run(cmd: str, cwd: Path, env: dict[str, str], timeout: float = 1800) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(["bash", "-c", cmd], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=timeout, check=False)
    assert done.returncode == 0, f"{cmd!r} failed ({done.returncode}):\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return done


def _site_packages(python: Path) -> Path:
    out = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                         capture_output=True, text=True, check=True).stdout.strip()
    return Path(out)


def _left_of_interfpred(site: Path) -> list[str]:
    return sorted(p.name for p in site.iterdir() if "interfpred" in p.name.lower())


@needs_install_run
@pytest.mark.skipif(shutil.which("git") is None, reason="needs git to copy the checkout as a clone has it")
def test_readme_commands_in_order_then_uninstall(tmp_path):
    first, second = readme_commands()
    second_install = second.split("&&")[0].strip()
    checkout = _copy_checkout(tmp_path / "checkout")
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    python = venv / "bin" / "python"
    pip_cache = subprocess.run([sys.executable, "-m", "pip", "cache", "dir"], capture_output=True,
                               text=True, check=False).stdout.strip()
    env = {k: v for k, v in os.environ.items()
           if k not in ("NUMBA_CACHE_DIR", "PYTHONPATH", "VIRTUAL_ENV", "INTERFPRED_INSTALL_TEST")}
    env.update(PATH=f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}", VIRTUAL_ENV=str(venv),
               XDG_CACHE_HOME=str(tmp_path / "user-cache"), PIP_DISABLE_PIP_VERSION_CHECK="1")
    if pip_cache and Path(pip_cache).is_dir():
        env["PIP_CACHE_DIR"] = pip_cache  # reuse what this machine already downloaded
    site = _site_packages(python)

    _run(first, checkout, env)
    installed = site / "interfpred"
    assert installed.is_dir()
    stray = sorted(str(p.relative_to(site)) for p in installed.rglob("*") if p.suffix in (".nbi", ".nbc"))
    assert stray == [], f"numba cache files inside the installed package: {stray[:5]}"
    assert list((tmp_path / "user-cache" / "interfpred" / "numba").rglob("*.nbi")), "kernels were not cached"
    assert (checkout / "interfpred-report" / "report.md").is_file()

    _run(second_install, checkout, env)
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    where = _run('python -c "import interfpred; from interfpred import RLS, PairMean, InterferenceModel; '
                 'print(interfpred.__file__)"', outside, env).stdout.strip()
    assert Path(where).resolve() == (checkout / "interfpred" / "__init__.py").resolve(), where
    _run("interfpred fit --measurements dataset:gavel_v100 --out m.json", outside, env)
    assert (outside / "m.json").is_file()
    _run("interfpred predict --help > /dev/null", outside, env)

    _run("python -m pip uninstall -y interfpred", outside, env)
    assert _left_of_interfpred(site) == [], _left_of_interfpred(site)
    gone = subprocess.run([str(python), "-c", "import interfpred"], cwd=outside, env=env,
                          capture_output=True, text=True, check=False)
    assert gone.returncode != 0


def test_every_public_name_the_readme_lists_imports_from_interfpred():
    """Class names the README shows in backticks (``RLS``, ``Fleet.choose_device``) resolve from ``interfpred``."""
    import importlib

    import interfpred

    text = (REPO / "README.md").read_text(encoding="utf-8")
    names = sorted(set(re.findall(r"`([A-Z][A-Za-z0-9]*(?:\.[A-Za-z_][A-Za-z0-9_]*)?)`", text)))
    modules = sorted(set(re.findall(r"`(interfpred(?:\.[a-z_]+)+)`", text)))
    assert "PairMean" in names and "RLS" in names  # the scan itself works
    missing = []
    for dotted in names:
        head, _, attr = dotted.partition(".")
        try:
            obj = getattr(interfpred, head)
            if attr:
                getattr(obj, attr)
        except AttributeError:
            missing.append(dotted)
    assert missing == [], f"the README lists names interfpred does not export: {missing}"
    for module in modules:
        importlib.import_module(module)
