"""Code and docs explain in place: they never send a reader to a document users do not have
(the project's internal spec, its shared folder) or to an issue tracker's numbering, and a
comment says what is and why, not what the code once did ("as it did", "once did": that history
belongs in commit messages and docs/performance.md)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
TREES = ("assay", "tests", "docs", "examples", "benchmarks")
FILES = ("README.md", "ARCHITECTURE.md")
SUFFIXES = {".py", ".md", ".yaml", ".yml", ".txt", ".html", ".js", ".css", ".toml"}
FORBIDDEN = re.compile(
    r"SPEC ?§|SPEC\.md|\.\./shared|/work/shared|\bshared/(?:SPEC|STYLE|data)"
    r"|(?i:\bissues? ?[#-]? ?\d|\bas it did\b|\bonce did\b)"
)


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


@pytest.mark.parametrize(
    ("line", "flagged"),
    [
        ("see SPEC §4.2", True),
        ("fixed in issue 23", True),
        ("since Issue #7", True),
        ("between the issue-23 merges", True),
        ("lists review after harness, as it did", True),
        ("(``assay.toolemu`` once did)", True),
        ("an emulator-issue label", False),
        ("the issue's target", False),
        ("a tissue 3 cm thick", False),
        ("a run resumes as it should", False),
    ],
)
def test_the_pattern_tells_a_citation_or_a_story_from_plain_text(line, flagged):
    assert bool(FORBIDDEN.search(line)) is flagged
