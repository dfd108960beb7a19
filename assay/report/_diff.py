"""What a probe changed: word-level diffs of source and probe, computed on the server.

Whitespace is kept as tokens of its own, so the format tests' blank lines, space runs and
indentation show as changes; a change made only of whitespace carries a visible marker
(``↵`` for a line break, ``·`` for a space, ``→`` for a tab) next to the whitespace itself.
Segments are plain text: the templates escape them. The review app (:mod:`assay.web`) diffs
transcripts message by message with the same function.
"""

from __future__ import annotations

import difflib
import re

from assay.report._model import Kind, Segment

_TOKEN = re.compile(r"\s+|\w+|[^\w\s]", re.UNICODE)
_WORD_LIMIT = 20_000  # tokens per side; longer texts are compared line by line


def _marker(text: str) -> str:
    if text.strip():
        return ""
    return text.replace("\r", "").replace("\n", "↵").replace(" ", "·").replace("\t", "→")


def _segment(kind: Kind, text: str) -> Segment:
    return Segment(kind, text, _marker(text) if kind != "same" else "")


def _merge(parts: list[Segment]) -> list[Segment]:
    out: list[Segment] = []
    for p in parts:
        if not p.text:
            continue
        if out and out[-1].kind == p.kind and not out[-1].marker and not p.marker:
            out[-1] = Segment(p.kind, out[-1].text + p.text)
        else:
            out.append(p)
    return out


def diff_texts(source: str, probe: str) -> tuple[list[Segment], list[Segment]]:
    """``(source segments, probe segments)``: deletions marked on the source side,
    insertions on the probe side, the rest ``same`` on both. Remembered per pair of texts (a
    word diff of two long responses rewritten throughout takes milliseconds; the harness
    computes its probes' diffs in the background while the judges run, see
    :func:`warm_diffs`)."""
    key = (source or "", probe or "")
    hit = _CACHE.get(key)
    if hit is None:
        hit = _remember(key, _diff_texts(*key))
    return list(hit[0]), list(hit[1])


Diff = tuple[tuple[Segment, ...], tuple[Segment, ...]]
_CACHE: dict[tuple[str, str], Diff] = {}
_CACHE_MAX = 4096


def _remember(key: tuple[str, str], value: Diff) -> Diff:
    if len(_CACHE) >= _CACHE_MAX:
        _CACHE.clear()
    _CACHE[key] = value
    return value


def remember_diffs(pairs: list[tuple[str, str]] | list[list[str]]) -> int:
    """Compute the diffs of ``pairs`` in this process and remember them (the run's sidecar
    does this as probes are made, then writes report.html); returns how many were new."""
    todo = _not_remembered(pairs)
    for key in todo:
        _remember(key, _diff_texts(*key))
    return len(todo)


def _not_remembered(pairs: list[tuple[str, str]] | list[list[str]]) -> list[tuple[str, str]]:
    """The distinct pairs (None read as empty text) whose diff is not remembered yet, sorted."""
    return sorted({(s or "", p or "") for s, p in pairs} - set(_CACHE))


def warm_diffs(pairs: list[tuple[str, str]]) -> None:
    """Compute (and remember) the diffs of ``pairs`` ahead of the report that shows them — in
    a helper interpreter: the word diffs are pure-Python CPU (seconds for a harness run), which
    would otherwise hold the GIL the LM calls of this process need. (A plain subprocess, not
    multiprocessing: that re-runs the caller's main script, guarded or not.)"""
    import json
    import subprocess
    import sys
    from pathlib import Path

    todo = _not_remembered(pairs)
    if not todo:
        return
    root = str(Path(__file__).resolve().parents[2])  # this assay, wherever it is installed
    code = (
        "import json, sys; sys.path.insert(0, sys.argv[1]); "
        "from assay.report._diff import _diff_texts; "
        "print(json.dumps([[[[g.kind, g.text, g.marker] for g in side] "
        "for side in _diff_texts(s, p)] for s, p in json.load(sys.stdin)]))"
    )
    try:
        proc = subprocess.run(
            [sys.executable, "-c", code, root],
            input=json.dumps(todo),
            capture_output=True,
            text=True,
            timeout=600,
        )
        results = json.loads(proc.stdout) if proc.returncode == 0 else []
    except (OSError, ValueError, subprocess.SubprocessError):
        return  # no helper: the report diffs them itself
    for key, (left, right) in zip(todo, results, strict=False):
        _remember(key, (tuple(Segment(*g) for g in left), tuple(Segment(*g) for g in right)))


def _diff_texts(source: str, probe: str) -> Diff:
    a, b = _TOKEN.findall(source), _TOKEN.findall(probe)
    if max(len(a), len(b)) > _WORD_LIMIT:
        a, b = (source or "").splitlines(keepends=True), (probe or "").splitlines(keepends=True)
    left: list[Segment] = []
    right: list[Segment] = []
    for op, i1, i2, j1, j2 in _opcodes(a, b):
        if op == "equal":
            text = "".join(a[i1:i2])
            left.append(Segment("same", text))
            right.append(Segment("same", text))
            continue
        if i2 > i1:
            left.append(_segment("del", "".join(a[i1:i2])))
        if j2 > j1:
            right.append(_segment("ins", "".join(b[j1:j2])))
    return tuple(_merge(left)), tuple(_merge(right))


def _opcodes(a: list[str], b: list[str]) -> list[tuple[str, int, int, int, int]]:
    """difflib's opcodes, with a lone run of whitespace kept between two changes folded into
    them, so a rewritten sentence reads as one change, not as every word struck separately.

    The tokens the two texts begin and end with alike are kept as they stand and only what lies
    between them goes to difflib, as diff tools do: its matcher compares every occurrence of a
    token with every other (the spaces of a long response: milliseconds a pair, seconds for a
    harness run's probes), and a probe — a resample, a format change, a label flip — mostly
    keeps its source's beginning and end. Texts alike throughout are one unchanged block; texts
    whose words and punctuation are alike, in the same order, differ only in whitespace (what
    the format tests change) and are aligned word for word (:func:`_whitespace_opcodes`)."""
    head = _common_length(a, b)
    tail = _common_length(a[head:][::-1], b[head:][::-1])
    ops = [("equal", 0, head, 0, head)] if head else []
    a_in, b_in = a[head : len(a) - tail], b[head : len(b) - tail]
    if _words(a_in) == _words(b_in):
        inner = _whitespace_opcodes(a_in, b_in)
    else:
        inner = difflib.SequenceMatcher(None, a_in, b_in, autojunk=False).get_opcodes()
    ops += [(op, i1 + head, i2 + head, j1 + head, j2 + head) for op, i1, i2, j1, j2 in inner]
    if tail:
        ops.append(("equal", len(a) - tail, len(a), len(b) - tail, len(b)))
    out: list[list] = []
    for k, (op, i1, i2, j1, j2) in enumerate(ops):
        between = 0 < k < len(ops) - 1 and ops[k - 1][0] != "equal" and ops[k + 1][0] != "equal"
        if op == "equal" and between and not "".join(a[i1:i2]).strip():
            op = "replace"
        if out and op != "equal" and out[-1][0] != "equal":
            out[-1] = ["replace", out[-1][1], i2, out[-1][3], j2]
        else:
            out.append([op, i1, i2, j1, j2])
    return [tuple(o) for o in out]


def _common_length(a: list[str], b: list[str]) -> int:
    """How many tokens ``a`` and ``b`` begin with alike."""
    n = min(len(a), len(b))
    k = 0
    while k < n and a[k] == b[k]:
        k += 1
    return k


def _words(tokens: list[str]) -> list[str]:
    """The tokens that are not whitespace, in order."""
    return [t for t in tokens if not t.isspace()]


def _whitespace_opcodes(a: list[str], b: list[str]) -> list[tuple[str, int, int, int, int]]:
    """Opcodes of two token lists with the same words and punctuation in the same order: each
    word matches its counterpart, and the whitespace before it (at most one token: a run of
    whitespace is one) is unchanged, changed, removed or added."""
    ops: list[tuple[str, int, int, int, int]] = []

    def put(op: str, i1: int, i2: int, j1: int, j2: int) -> None:
        if ops and op == "equal" and ops[-1][0] == "equal":
            ops[-1] = ("equal", ops[-1][1], i2, ops[-1][3], j2)
        else:
            ops.append((op, i1, i2, j1, j2))

    i = j = 0
    while i < len(a) or j < len(b):
        space_a = i < len(a) and a[i].isspace()
        space_b = j < len(b) and b[j].isspace()
        if space_a and space_b and a[i] == b[j]:
            put("equal", i, i + 1, j, j + 1)
        elif space_a or space_b:
            op = "replace" if space_a and space_b else "delete" if space_a else "insert"
            put(op, i, i + space_a, j, j + space_b)
        else:  # a word and its counterpart
            put("equal", i, i + 1, j, j + 1)
        i, j = i + (space_a or not space_b), j + (space_b or not space_a)
    return ops
