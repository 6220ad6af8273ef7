"""Build the wheel and the sdist, install the wheel with its dependencies into an isolated virtual environment and
run it there.

Offline and isolated: the test builds a local wheelhouse holding exactly the dependency closure the wheel's own
``Requires-Dist`` asks for (with the extras a suite needs), each distribution repacked from the environment running
the tests (its files and metadata, as installed), and pip installs the wheel from that wheelhouse alone
(``--no-index --find-links``) into a venv that sees nothing else. A dependency missing from ``pyproject.toml`` is
therefore missing there too, and the import fails. Both suites use it: the 1.x one with ``[haystack1,serve]``,
the 2.x one with ``[haystack2]``.
"""

import importlib.metadata as metadata
import re
import subprocess
import sys
import venv
import zipfile
from pathlib import Path
from typing import Iterable, List, Sequence, Set, Tuple

from packaging.markers import default_environment
from packaging.requirements import Requirement
from packaging.tags import sys_tags

ROOT = Path(__file__).resolve().parents[2]
PIP_OWN = ("INSTALLER", "REQUESTED", "direct_url.json", "RECORD")  # pip writes these afresh on install


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


def _key(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _wanted(requirements: Iterable[str], extras: Sequence[str]) -> List[Requirement]:
    found = []
    for text in requirements:
        requirement = Requirement(text)
        marker = requirement.marker
        if marker is None or any(marker.evaluate({**default_environment(), "extra": e}) for e in ("", *extras)):
            found.append(requirement)
    return found


def dependency_closure(wheel: Path, extras: Sequence[str]) -> List[str]:
    """Every distribution the wheel's ``Requires-Dist`` needs with ``extras``, transitively, as installed here."""
    requirements = [v for k, v in _metadata_fields(wheel_metadata(wheel, "METADATA")) if k == "Requires-Dist"]
    pending: List[Tuple[str, Tuple[str, ...]]] = [(r.name, tuple(r.extras)) for r in _wanted(requirements, extras)]
    seen: Set[Tuple[str, Tuple[str, ...]]] = set()
    names: Set[str] = set()
    while pending:
        name, wanted_extras = pending.pop()
        if (_key(name), wanted_extras) in seen:
            continue
        seen.add((_key(name), wanted_extras))
        distribution = metadata.distribution(name)  # PackageNotFoundError: the test environment lacks it
        names.add(distribution.metadata["Name"])
        pending += [(r.name, tuple(r.extras)) for r in _wanted(distribution.requires or [], wanted_extras)]
    return sorted(names, key=_key)


def repack(name: str, out: Path) -> Path:
    """The installed distribution ``name`` as a wheel in ``out``: its files under site-packages and its metadata
    (scripts are rebuilt by pip from ``entry_points.txt``), tagged with its WHEEL tag that fits this Python."""
    distribution = metadata.distribution(name)
    info = Path(distribution._path)  # the .dist-info folder
    tags = re.findall(r"^Tag: (.+)$", (info / "WHEEL").read_text(), re.M)
    supported = {str(tag) for tag in sys_tags()}
    tag = next((t for t in tags if t in supported), tags[0])
    target = out / f"{re.sub(r'[-_.]+', '_', distribution.metadata['Name'])}-{distribution.version}-{tag}.whl"
    record = []
    with zipfile.ZipFile(target, "w", zipfile.ZIP_STORED) as archive:
        for file in distribution.files or []:
            path = str(file)
            if path.startswith("..") or path.endswith(".pyc") or path in (f"{info.name}/{n}" for n in PIP_OWN):
                continue
            if (info.parent / path).is_file():
                archive.write(info.parent / path, path)
                record.append(f"{path},,")
        archive.writestr(f"{info.name}/RECORD", "\n".join(record + [f"{info.name}/RECORD,,"]) + "\n")
    return target


def clean_venv(folder: Path, wheel: Path, extras: Sequence[str] = ()) -> Path:
    """A new virtual environment with the wheel installed by pip with its dependencies (and ``extras``'), from a
    wheelhouse of exactly their closure; it sees no other package."""
    wheelhouse = folder.parent / f"{folder.name}-wheelhouse"
    wheelhouse.mkdir(parents=True, exist_ok=True)
    for name in dependency_closure(wheel, extras):
        repack(name, wheelhouse)
    venv.create(folder, with_pip=False)
    python = folder / "bin" / "python"
    target = f"{wheel}[{','.join(extras)}]" if extras else str(wheel)
    subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(python), "install", "--quiet", "--no-index", "--no-compile"]
        + ["--find-links", str(wheelhouse), target],
        check=True,
        capture_output=True,
        text=True,
        timeout=900,
    )
    return python


def _metadata_fields(text: str) -> List[Tuple[str, str]]:
    header = text.split("\n\n", 1)[0]
    return [tuple(line.split(": ", 1)) for line in header.splitlines() if ": " in line and not line.startswith(" ")]


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
