"""Build the wheel and the sdist, install the wheel into a clean virtual environment and run it there.

Offline: the wheel is installed with ``--no-index --no-deps``, and the clean environment reads the
dependencies (farm-haystack or haystack-ai, torch, ...) from the environment running the tests
through one ``.pth`` line, after its own site-packages, so ``haystack_dcsr`` itself can only come from
the wheel. Both suites use it: the 1.x one with ``[haystack1]``'s packages, the 2.x one with
``[haystack2]``'s.
"""

import subprocess
import sys
import sysconfig
import venv
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def build(out: Path) -> tuple:
    """(wheel, sdist) built from the checkout with this environment's setuptools (no download)."""
    subprocess.run(
        [sys.executable, "-m", "build", "--no-isolation", "--wheel", "--sdist", "--outdir", str(out), str(ROOT)],
        check=True,
        capture_output=True,
        text=True,
        timeout=600,
    )
    return next(out.glob("*.whl")), next(out.glob("*.tar.gz"))


def clean_venv(folder: Path, wheel: Path) -> Path:
    """A new virtual environment with only the wheel installed (its dependencies seen from ours)."""
    venv.create(folder, with_pip=False)
    python = folder / "bin" / "python"
    purelib = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    (Path(purelib) / "dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(python), "install", "--quiet", "--no-index", "--no-deps"]
        + [str(wheel)],
        check=True,
        capture_output=True,
        text=True,
        timeout=300,
    )
    return python


def wheel_names(wheel: Path) -> list:
    with zipfile.ZipFile(wheel) as archive:
        return archive.namelist()


def wheel_metadata(wheel: Path, name: str) -> str:
    with zipfile.ZipFile(wheel) as archive:
        member = next(n for n in archive.namelist() if n.endswith(f".dist-info/{name}"))
        return archive.read(member).decode("utf-8")


def run_in(python: Path, code: str, cwd: Path, timeout: int = 600) -> subprocess.CompletedProcess:
    env = {"PATH": "/usr/bin:/bin", "HF_HUB_OFFLINE": "1", "HAYSTACK_TELEMETRY_ENABLED": "False"}
    return subprocess.run([str(python), "-c", code], cwd=cwd, capture_output=True, text=True, timeout=timeout, env=env)


def readme_snippet(heading: str) -> str:
    """The first ```python block after ``heading`` in the README."""
    import re

    readme = (ROOT / "README.md").read_text()
    return re.search(r"```python\n(.*?)```", readme[readme.index(heading) :], re.S).group(1)


def quick_start_in(python: Path, heading: str, venv_folder: Path, check: str, cwd: Path) -> subprocess.CompletedProcess:
    """The README's quick start under ``heading`` run by ``python``, after checking that
    ``haystack_dcsr`` is the copy installed in ``venv_folder``; ``check`` is printed code appended."""
    code = (
        "import haystack_dcsr\n"
        f"assert haystack_dcsr.__file__.startswith({str(venv_folder)!r}), haystack_dcsr.__file__\n"
        + readme_snippet(heading)
        + "\n"
        + check
        + "\n"
    )
    return run_in(python, code, cwd=cwd)
