"""The documentation site: the pages users look for exist, and the build ``make test`` runs fails on a
broken link (``--quiet`` beside ``--strict`` once hid every warning, so nothing failed)."""

import re
import shlex
import subprocess
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
GUIDES = {
    "training and data formats": "guides/training.md",
    "hard negatives": "guides/hard-negatives.md",
    "MEQ tools": "guides/meq.md",
    "the reranker": "guides/reranker.md",
    "int8": "guides/int8.md",
    "index presets": "guides/index-presets.md",
    "Qdrant and scaling out": "guides/scaling-out.md",
    "hybrid": "guides/hybrid.md",
}


def nav_pages(entries) -> list:
    pages = []
    for entry in entries:
        value = next(iter(entry.values())) if isinstance(entry, dict) else entry
        pages += nav_pages(value) if isinstance(value, list) else [value]
    return pages


def test_every_guide_is_a_page_of_the_site():
    config = yaml.load((ROOT / "mkdocs.yml").read_text(), Loader=yaml.BaseLoader)  # no python tags in it
    pages = nav_pages(config["nav"])
    missing = {name: page for name, page in GUIDES.items() if page not in pages or not (ROOT / "docs" / page).is_file()}
    assert not missing, f"guides not in the site's nav: {missing}"
    index = (ROOT / "docs" / "index.md").read_text()
    assert all(f"({page})" in index for page in GUIDES.values()), "docs/index.md links every guide"


def make_docs_commands() -> list:
    makefile = (ROOT / "Makefile").read_text()
    lines = [line for line in makefile.splitlines() if re.search(r"/mkdocs build", line)]
    return [shlex.split(line.split("mkdocs", 1)[1]) for line in lines]


def test_the_make_docs_build_fails_on_a_broken_link(tmp_path):
    commands = make_docs_commands()
    assert len(commands) == 2, "make docs and make test build the site"
    assert all("--strict" in args for args in commands)
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "index.md").write_text("# Home\n\nSee [the guide](guides/missing.md).\n")
    (tmp_path / "mkdocs.yml").write_text("site_name: t\nvalidation:\n  links:\n    not_found: warn\n")
    for args in commands:
        run = subprocess.run(
            [sys.executable, "-m", "mkdocs", *args, "-d", str(tmp_path / "site")],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert run.returncode != 0, f"mkdocs {' '.join(args)} passed a broken link:\n{run.stderr}"
        assert "guides/missing.md" in run.stderr
