"""Kill a run mid-way (SIGKILL) and re-run it: nothing lost, nothing judged twice."""

from __future__ import annotations

import json
import shutil
import signal
import time
from pathlib import Path

import pytest

from tests.processes import REPO, assay_process

FIXTURE = REPO / "tests" / "fixtures" / "evaluate"


@pytest.mark.slow
def test_killed_run_resumes_without_loss_or_repeat(tmp_path: Path):
    cfg = tmp_path / "cfg"
    shutil.copytree(FIXTURE, cfg)
    sheet = json.loads((cfg / "sheet.json").read_text())
    sheet["delay_s"] = 0.4  # slow enough to be killed mid-run
    (cfg / "sheet.json").write_text(json.dumps(sheet))

    proc = assay_process("evaluate", str(cfg / "config.yaml"), "--quiet", "--json", cwd=tmp_path)
    deadline = time.time() + 120
    judged: list[Path] = []
    while time.time() < deadline:
        judged = (
            list((tmp_path / "runs").glob("*/judgments.jsonl"))
            if (tmp_path / "runs").exists()
            else []
        )
        if judged and len(judged[0].read_text().splitlines()) >= 3:
            break
        if proc.poll() is not None:  # ended before it could be killed: say why
            pytest.fail(f"the run ended (rc {proc.returncode}) early: {proc.stderr.read()[-800:]}")
        time.sleep(0.05)
    assert judged, "the run never wrote a judgment"
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    before = [
        json.loads(x)["item_id"] for x in judged[0].read_text().splitlines() if x.endswith("}")
    ]
    assert 3 <= len(before) < 12
    assert not (judged[0].parent / "metrics.json").exists()

    second = assay_process("evaluate", str(cfg / "config.yaml"), "--quiet", "--json", cwd=tmp_path)
    out, err = second.communicate(timeout=300)
    assert second.returncode == 0, err
    result = json.loads(out.strip().splitlines()[-1])
    ids = [json.loads(x)["item_id"] for x in judged[0].read_text().splitlines()]
    assert sorted(ids) == [f"q{i:02d}" for i in range(12)]  # none lost, none twice
    assert result["new_judgments"] == 12 - len(set(before))  # only the missing ones were judged
    assert result["counts"]["scored"] == 12

    third = assay_process("evaluate", str(cfg / "config.yaml"), "--quiet", "--json", cwd=tmp_path)
    out, err = third.communicate(timeout=300)
    assert json.loads(out.strip().splitlines()[-1])["new_judgments"] == 0


def test_records_with_unicode_line_separators_read_back_whole(tmp_path: Path):
    """U+2028, U+0085 and friends stay raw inside JSON strings: a record holding one (a judge's
    reasoning, a HarmBench response) is still one line, not two torn ones."""
    from assay.runs import RunStore
    from assay.types import Judgment

    store = RunStore(tmp_path, "h")
    store.open({})
    first = Judgment(item_id="a", judge="j", score=1, reasoning="one\u2028two\x85three\u2029")
    store.append(first)
    store.append(first.model_copy(update={"item_id": "b"}))
    assert store.judgments() == {"a": first, "b": first.model_copy(update={"item_id": "b"})}
