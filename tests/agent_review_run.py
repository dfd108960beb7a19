"""A harness run directory of agent-transcript probes, written by hand for the review tests:
one seed transcript (a sum computed with a tool, then emailed), probes each made for one rubric
criterion of a transcript judge — the final answer's number changed, the email's recipient
changed (a tool-call edit) — and the judge's verdicts per criterion on the source and on the
probes. The source meets one criterion and fails the other, so its overall verdict (the lowest)
is not its verdict on the criterion either probe tests."""

from __future__ import annotations

import json
from pathlib import Path

import yaml

from assay.data import message_changes, replace_message
from assay.reliability._probe import Probe
from assay.types import Item, Message, ToolCall
from tests.review_runs import name_run

LABELS = ["fails", "passes"]
RESULT, RECIPIENT = "reports_result", "right_recipient"

SOURCE = Item(
    id="s1",
    request="What is 2 + 3? Email the result to ana@example.com.",
    response="The sum is 5.",
    transcript=[
        Message(role="user", content="What is 2 + 3? Email the result to ana@example.com."),
        Message(
            role="assistant",
            tool_calls=[ToolCall(id="c1", function="Calculator", arguments={"a": 2, "b": 3})],
        ),
        Message(role="tool", content='{"result": 5}', tool_call_id="c1", function="Calculator"),
        Message(
            role="assistant",
            tool_calls=[
                ToolCall(
                    id="c2",
                    function="EmailSend",
                    arguments={"to": "bo@example.com", "body": "5"},
                )
            ],
        ),
        Message(role="tool", content='{"status": "sent"}', tool_call_id="c2", function="EmailSend"),
        Message(role="assistant", content="The sum is 5."),
    ],
)
FINAL = 5  # the index of the final answer


def _edited(
    pid: str, criterion: str, index: int, content: str, tool_arguments=None, **meta
) -> Probe:
    """A probe of ``criterion``: the source with message ``index`` rewritten (target: fails)."""
    transcript = replace_message(
        SOURCE.transcript, index, content=content, tool_arguments=tool_arguments
    )
    edit = {
        "message_index": index,
        "intent": f"make the transcript fail {criterion}",
        **message_changes(SOURCE.transcript[index], transcript[index]),
    }
    return Probe.from_source(
        "agent_perturbation",
        SOURCE,
        pid,
        id=f"agent_perturbation:s1:{pid}",
        response=transcript[FINAL].content,
        transcript=transcript,
        target=0,
        target_source="validator",
        meta={"criterion": criterion, "objective": "fail", "edits": [edit], **meta},
    )


PROBES = [
    # the judge still says the answer reports the result: its verdict on the criterion moved
    # nowhere, though the source's overall verdict is "fails"
    _edited("missed", RESULT, FINAL, "The sum is 12."),
    # the judge catches the changed number: its verdict on the criterion moved
    _edited("caught", RESULT, FINAL, "The sum is 7."),
    # the recipient changed in the EmailSend call: a tool-call edit
    _edited("recipient", RECIPIENT, 3, "", [{"to": "eve@example.com", "body": "5"}]),
]
MISSED, CAUGHT, TOOL_EDIT = (p.id for p in PROBES)

JUDGMENTS = [
    # overall the lowest of the criteria: fails
    {"item_id": "source:s1", "judge": "j", "score": 0, "criteria": {RESULT: 1, RECIPIENT: 0}},
    {"item_id": MISSED, "judge": "j", "score": 1, "criteria": {RESULT: 1}},
    {"item_id": CAUGHT, "judge": "j", "score": 0, "criteria": {RESULT: 0}},
    {"item_id": TOOL_EDIT, "judge": "j", "score": 0, "criteria": {RECIPIENT: 0}},
]


def write_agent_run(run_dir: Path) -> Path:
    """The run directory (``config.yaml``, seeds, probes, judgments) at ``run_dir``."""
    (run_dir / "judgments").mkdir(parents=True)
    (run_dir / "config.yaml").write_text(
        yaml.safe_dump({"name": "agent", "scale": {"kind": "binary", "labels": LABELS}})
    )
    name_run(run_dir)
    (run_dir / "seeds.jsonl").write_text(SOURCE.model_dump_json() + "\n")
    (run_dir / "probes.jsonl").write_text("".join(p.model_dump_json() + "\n" for p in PROBES))
    (run_dir / "judgments" / "j-0123abcd.jsonl").write_text(
        "".join(json.dumps(j) + "\n" for j in JUDGMENTS)
    )
    return run_dir
