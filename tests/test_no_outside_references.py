"""Code and docs explain in place: they never send a reader to a document users do not have
(the project's internal spec, its shared folder) or to an issue tracker's numbering."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
TREES = ("assay", "tests", "docs", "examples", "benchmarks")
FILES = ("README.md", "ARCHITECTURE.md")
SUFFIXES = {".py", ".md", ".yaml", ".yml", ".txt", ".html", ".js", ".css", ".toml"}
FORBIDDEN = re.compile(r"SPEC ?§|SPEC\.md|\.\./shared|/work/shared|\bshared/(?:SPEC|STYLE|data)")


def sources() -> list[Path]:
    out = [REPO / f for f in FILES]
    for tree in TREES:
        out += [
            p
            for p in (REPO / tree).rglob("*")
            if p.suffix in SUFFIXES and "__pycache__" not in p.parts and p.is_file()
        ]
    return [p for p in out if p.resolve() != Path(__file__).resolve()]


@pytest.mark.parametrize("tree", [*TREES, "top-level pages"])
def test_no_file_cites_a_document_users_do_not_have(tree):
    files = [p for p in sources() if (p.relative_to(REPO).parts[0] == tree) == (tree in TREES)]
    found = []
    for path in files:
        for n, line in enumerate(
            path.read_text(encoding="utf-8", errors="replace").splitlines(), 1
        ):
            if FORBIDDEN.search(line):
                found.append(f"{path.relative_to(REPO)}:{n}: {line.strip()[:100]}")
    assert files and not found, "\n".join(found)
