"""What a reviewer types in a review file is read as the file asks for it — "a label or a score"
of the scale, a score as the file lists it (``True (0)``) — not as a reference's 0/1, which on a
``["True", "False"]`` scale reads by meaning: a typed 0 (True's score) was recorded as False."""

from __future__ import annotations

import json

import yaml

from assay.decisions._review_files import export_queue, import_queue
from assay.decisions.review_queue import _LABEL_HEADER, ReviewQueue
from assay.scale import Scale


class Queue(ReviewQueue):
    kind = "test"
    items_file = "q.jsonl"
    noun = "items"
    item_noun = "item"
    file_header = _LABEL_HEADER


def test_a_score_typed_in_a_review_file_is_that_score_on_a_true_false_scale(tmp_path):
    rows = [{"item_id": k, "request": "q", "response": f"r {k}"} for k in ("a", "b", "c")]
    (tmp_path / "q.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    scale = Scale(kind="binary", labels=["True", "False"])  # True is score 0 here
    queue = Queue(tmp_path, scale, "t")
    export_queue(queue, tmp_path / "review.yaml")
    entries = yaml.safe_load((tmp_path / "review.yaml").read_text())
    for entry, typed in zip(entries, (0, "1", "true"), strict=True):
        entry["verdict"], entry["reviewer"] = typed, "ana"
    (tmp_path / "review.yaml").write_text(yaml.safe_dump(entries))
    import_queue(queue, tmp_path / "review.yaml")
    recorded = [json.loads(x) for x in (tmp_path / "human_verdicts.jsonl").read_text().splitlines()]
    got = {r["item_id"]: (r["score"], r["label"]) for r in recorded}
    assert got == {"a": (0, "True"), "b": (1, "False"), "c": (0, "True")}
