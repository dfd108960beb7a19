"""report.html of an evaluate run, as a :class:`~assay.report.Report`: ``metrics.json``
(agreement, confusion matrix, cost) and ``judgments.jsonl``, with the item texts read back from
the data set when they are not given."""

from __future__ import annotations

import itertools
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from assay._json import records
from assay.evaluation._report import (
    SHOWN_DISAGREEMENTS,
    cost_section,
    disagreement_table,
    evaluate_tables,
    model_shown,
)
from assay.evaluation._results import DisagreementRecord, EvaluateSummary
from assay.inputs import left_out_line
from assay.metrics import fmt
from assay.report import (
    Block,
    Items,
    Report,
    Row,
    figures,
    load_json,
    load_summary,
    pretty,
    read_yaml,
    verdict,
)
from assay.types import Item, Judgment, Spend, spend_line

ITEM_COLUMNS = [
    ("item", "text"),
    ("reference", "num"),
    ("judge", "num"),
    ("agrees", "text"),
    ("unscored", "text"),
    ("USD", "num"),
    ("latency s", "num"),
]


def build_report(run_dir: Path, items: Iterable[Item] | None = None) -> Report:
    """The report of the evaluate run in ``run_dir``; ``items`` gives the item texts (without
    it they are read back from the run's data set when that is a local file)."""
    run_dir = Path(run_dir)
    config = read_yaml(run_dir / "config.yaml")
    m = load_json(run_dir / "metrics.json")
    judge = config.get("judge") or {}
    r = Report("evaluate", f"assay evaluate — {config.get('name') or run_dir.name}")
    r.facts = _facts(config, m)
    # the tables report.md shows, built once (agreement, confusion matrix, calibration)
    summary = load_summary(run_dir / "metrics.json", EvaluateSummary)
    confidence = (config.get("bootstrap") or {}).get("confidence", 0.95)
    r.tables = evaluate_tables(summary, confidence)
    r.figures = figures(run_dir, r.tables)
    listed = itertools.islice(records(run_dir / "disagreements.jsonl"), SHOWN_DISAGREEMENTS)
    worst = disagreement_table(summary, [DisagreementRecord.model_validate(d) for _, d in listed])
    r.tables += [worst] if worst else []
    r.tables.append(cost_section(summary))
    judgments, total = _first_judgments(run_dir / "judgments.jsonl", ITEM_ROWS)
    shown = {j.item_id for j in judgments}
    source = items if items is not None else _load_items(config)
    by_item = {it.id: it for it in source if it.id in shown}
    labels = _labels(judge.get("scale"))
    notes = (
        [] if by_item else ["The item texts could not be read from the data set; verdicts only."]
    )
    if total > len(judgments):
        notes.append(
            f"The first {len(judgments):,} of {total:,} judgments; every one is in judgments.jsonl."
        )
    r.items = Items(
        "Items",
        list(ITEM_COLUMNS),
        [_item_row(j, by_item.get(j.item_id), labels) for j in judgments],
        " ".join(notes),
    )
    return r


ITEM_ROWS = 1000  # judgments the page lists: a page of a million rows opens in no browser


def _first_judgments(path: Path, n: int) -> tuple[list[Judgment], int]:
    """The first ``n`` judgments of a run's judgments file, and how many it holds."""
    first: list[Judgment] = []
    total = 0
    for _, x in records(path):  # read as it goes
        if total < n:
            first.append(Judgment.model_validate(x))
        total += 1
    return first, total


def _facts(config: dict[str, Any], m: dict[str, Any]) -> list[tuple[str, str]]:
    judge = config.get("judge") or {}
    c = m.get("counts", {})
    return [
        (
            "judge",
            f"{judge.get('name')} · model {model_shown(judge)} · program "
            f"{judge.get('program')} · adapter {judge.get('adapter')} · temperature "
            f"{judge.get('temperature')}",
        ),
        ("config hash", str(m.get("config_hash", ""))),
        ("data", f"{(config.get('data') or {}).get('path')} ({c.get('items')} items)"),
        (
            "counts",
            f"judged {c.get('judged')}, scored {c.get('scored')}, unscored "
            f"{c.get('unscored')} {c.get('unscored_reasons') or ''}; without a reference "
            f"{c.get('without_reference')}; metrics on {c.get('paired')} pairs",
        ),
        *(
            [("left out", left_out_line(m["left_out"], m.get("errored_samples")))]
            if m.get("left_out")
            else []
        ),
        ("intervals", str(m.get("bootstrap", ""))),
        (
            "calls answered",
            spend_line(Spend.model_validate(m["spend"]) if m.get("spend") else None),
        ),
    ]


def _item_row(j: Judgment, it: Item | None, labels) -> Row:
    """One judged item: its verdict against the reference; expands to the texts and reasoning."""
    expected = it.expected if it else None
    shown, score = verdict(j, labels)
    agree = "" if expected is None or score is None else ("yes" if score == expected else "no")
    blocks = []
    if it is not None:
        blocks += [Block("request", it.request), Block("response", it.response)]
        if it.transcript:
            from assay.data import render_transcript

            blocks.append(Block("transcript", render_transcript(it.transcript)))
    blocks += [
        Block("reasoning", j.reasoning),
        Block("error", j.error),
        Block("raw output", pretty(j.raw)),
    ]
    return Row(
        [
            (j.item_id, j.item_id),
            (labels(expected) if expected is not None else "—", expected),
            (shown, score),
            (agree, agree),
            (j.unscored or "", j.unscored or ""),
            (fmt(j.usage.cost_usd, 6), j.usage.cost_usd),
            (fmt(j.latency_s, 2), j.latency_s),
        ],
        [b for b in blocks if b.text],
        "bad" if agree == "no" else ("warn" if score is None else ""),
    )


def _labels(scale_spec: Any):
    """``score -> shown text`` for the run's scale (``label (score)`` where the scale names it)."""
    from assay.scale import Scale

    try:
        scale = Scale.parse(scale_spec) if scale_spec else None
    except Exception:
        scale = None

    def label(score: Any) -> str:
        if score is None:
            return "—"
        name = scale.label_of(score) if scale else None
        return f"{name} ({score})" if name is not None else str(score)

    return label


def _load_items(config: dict[str, Any]) -> Iterable[Item]:
    """The run's items read back from its data set, when that is a local file (best effort: the
    report shows verdicts without texts otherwise)."""
    try:
        from assay.inputs import EvaluateConfig, stream_items

        cfg = EvaluateConfig.model_validate(config)
        if not Path(cfg.data.path).is_file():
            return []
        return stream_items(cfg.data, cfg.judge.scale)
    except Exception:  # noqa: BLE001 - a report never fails for want of texts
        return []
