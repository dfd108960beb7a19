"""No config key is silently ignored: a data key the format does not read is refused in one
line (``data.expected`` on ToolEmu trajectories ran with no reference and no word), a key it
reads is honoured, a misspelt key is refused at every level of every runner's config, and
``assay schema evaluate`` explains every data field."""

from __future__ import annotations

import json
import typing
from pathlib import Path
from typing import Any

import pytest
import yaml
from pydantic import BaseModel

from assay.cli import main
from assay.inputs import DataConfig, load_items
from assay.runners import get_runner, known_runners
from assay.scale import Scale

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
AGENTHARM = EXAMPLES / "data" / "jrh" / "agentharm" / "agentharm.eval"
TOOLEMU_ANSWER = {
    "evaluator_thought": "The agent asked before acting.",
    "overall_qualitative_label": "Certain No Risk",
    "evaluator_log_summary": "No risky call.",
}


@pytest.fixture(autouse=True)
def _in_tmp(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)  # the command's caches live in its working directory


def toolemu_config(tmp_path: Path, **data: Any) -> Path:
    """``examples/toolemu_safety.yaml`` with its data paths made absolute, a scripted judge,
    and ``data`` changed (a None value removes the key)."""
    config = yaml.safe_load((EXAMPLES / "toolemu_safety.yaml").read_text())
    for key in ("path", "toolkits", "expected_from"):
        config["data"][key] = str(EXAMPLES / config["data"][key])
    config["data"] = {k: v for k, v in {**config["data"], **data}.items() if v is not None}
    (tmp_path / "sheet.json").write_text(json.dumps({"default": TOOLEMU_ANSWER}))
    config["judge"]["model"] = "scripted:sheet.json"
    config["tracking"] = {"enabled": False}
    path = tmp_path / "toolemu.yaml"
    path.write_text(yaml.safe_dump(config))
    return path


def one_line_error(capsys, *args: str) -> str:
    """Run the command line: exit 2, one line on stderr, no traceback, no run directory."""
    code = main(list(args))
    err = capsys.readouterr().err.strip()
    assert code == 2, err
    assert err.splitlines() == [err] and "Traceback" not in err, err
    assert not (Path.cwd() / "runs").exists(), "a run directory was created"
    return err


def test_the_toolemu_example_pairs_every_trajectory_with_its_reference(tmp_path, capsys):
    """What the refusals below are measured against: the same config, as written, judges
    the 15 trajectories against the evaluator file's scores."""
    assert main(["evaluate", str(toolemu_config(tmp_path)), "--quiet", "--json"]) == 0
    counts = json.loads(capsys.readouterr().out.strip().splitlines()[-1])["counts"]
    assert counts["items"] == counts["paired"] == 15


@pytest.mark.parametrize(
    "data, refused",
    [
        (
            {"expected": "scores.ToolCallRisk"},
            "data.expected is for format: inspect; the reference of format toolemu is "
            "data.expected_from (an evaluator file)",
        ),
        ({"columns": {"expected": "label"}}, "data.columns is for format: table"),
        ({"split": "test"}, "data.split is for format: table"),
        ({"pairs": {"score": "s"}}, "data.pairs is for format: table"),
        ({"request": "inputs.question"}, "data.request is for format: mlflow"),
        ({"expectation": "safe"}, "data.expectation is for format: mlflow"),
        (
            {"expected_from": None},  # expected_key left without its file
            "data.expected_key needs data.expected_from",
        ),
        (
            {"expected_from": None, "expected_key": None, "missing_expected": "keep"},
            "data.missing_expected is about reference labels, and this data has none",
        ),
        ({"transcript": {"tool_output_chars": 100}}, "tool_output_chars is for tool_output: cap"),
    ],
)
def test_a_key_toolemu_data_does_not_read_is_refused_in_one_line(tmp_path, capsys, data, refused):
    config = toolemu_config(tmp_path, **data)
    line = one_line_error(capsys, "evaluate", str(config))
    assert line.startswith(f"assay: error: {config}: field 'data")
    assert refused in line


@pytest.mark.parametrize(
    "data, field",
    [
        ({"expected_fron": "evals.jsonl"}, "data.expected_fron"),
        ({"transcript": {"drop_sytem": True}}, "data.transcript.drop_sytem"),
    ],
)
def test_a_misspelt_key_is_refused_at_any_depth(tmp_path, capsys, data, field):
    config = toolemu_config(tmp_path, **data)
    line = one_line_error(capsys, "evaluate", str(config))
    assert line == f"assay: error: {config}: field '{field}': unknown config key"


def table_config(tmp_path: Path, **data: Any) -> Path:
    config = yaml.safe_load((FIXTURES / "evaluate" / "config.yaml").read_text())
    config["data"] = {**config["data"], "path": str(FIXTURES / "evaluate" / "items.csv"), **data}
    config["judge"]["model"] = f"scripted:{FIXTURES / 'evaluate' / 'sheet.json'}"
    path = tmp_path / "table.yaml"
    path.write_text(yaml.safe_dump(config))
    return path


@pytest.mark.parametrize(
    "data, refused",
    [
        (
            {"expected": "label"},
            "data.expected is for format: inspect; the reference of format table is "
            "data.columns.expected (a column)",
        ),
        ({"toolkits": "all_toolkits.json"}, "data.toolkits is for format: toolemu"),
        ({"expected_key": "ToolCallRisk"}, "data.expected_key is for format: toolemu"),
        ({"transcript": {"drop_system": True}}, "data.transcript is for format: toolemu or"),
        ({"response": "outputs.text"}, "data.response is for format: mlflow"),
        ({"errored_samples": "skip"}, "data.errored_samples is for format: inspect"),
    ],
)
def test_a_key_a_table_does_not_read_is_refused_in_one_line(tmp_path, capsys, data, refused):
    config = table_config(tmp_path, **data)
    line = one_line_error(capsys, "evaluate", str(config))
    assert line.startswith(f"assay: error: {config}: field 'data") and refused in line


def test_a_split_on_a_local_file_is_refused(tmp_path, capsys):
    line = one_line_error(capsys, "evaluate", str(table_config(tmp_path, split="test")))
    assert line.endswith(
        "items.csv: split 'test' is for a Hugging Face hub data set; a local file has none"
    )


def test_an_inspect_reference_is_read_by_the_scales_names():
    """``data.expected`` of an Inspect log is read as any reference is: a categorical scale's
    label names (it was read as an integer first, so a name could never be a reference)."""
    data = DataConfig(format="inspect", path=str(AGENTHARM), expected="metadata.category")
    categories = sorted(
        {
            it.meta["metadata"]["category"]
            for it in load_items(
                DataConfig(format="inspect", path=str(AGENTHARM)), Scale.parse("binary")
            )
        }
    )
    scale = Scale(kind="categorical", labels=[c.upper() for c in categories])
    items = load_items(data, scale)
    assert [scale.label_of(it.expected) for it in items] == [  # type: ignore[arg-type]
        it.meta["metadata"]["category"].upper() for it in items
    ]


def test_an_empty_inspect_reference_follows_missing_expected():
    """``scores.combined_scorer.answer`` is null in every sample of this log."""
    path = "scores.combined_scorer.answer"
    data = DataConfig(format="inspect", path=str(AGENTHARM), expected=path)
    with pytest.raises(Exception, match=r"empty reference label in 16 of 16 samples") as refused:
        load_items(data, Scale.parse("binary"))
    assert f"field '{path}'" in str(refused.value)
    kept = load_items(data.model_copy(update={"missing_expected": "keep"}), Scale.parse("binary"))
    assert len(kept) == 16 and all(it.expected is None for it in kept)


# -- every config refuses what it does not know ------------------------------------------------
def models_in(annotation: Any) -> list[type[BaseModel]]:
    """The pydantic models an annotation holds (inside unions, lists, dicts)."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [annotation]
    return [m for arg in typing.get_args(annotation) for m in models_in(arg)]


def config_models() -> dict[str, type[BaseModel]]:
    """Every model a runner's config or options can hold, at every depth, by where it is
    first met (``evaluate.data.columns``) — and each registered reliability test's settings."""
    from assay.reliability._registry import known_tests, registered_test

    roots: list[tuple[str, Any]] = []
    for name in known_runners():
        runner = get_runner(name)
        roots.append((f"{name} options", runner.Options))
        if runner.config is not None:
            roots.append((name, runner.config_model()))
    roots += [(f"harness.tests.{t}", registered_test(t).Settings) for t in known_tests()]
    found: dict[str, type[BaseModel]] = {}
    while roots:
        where, model = roots.pop(0)
        if model in found.values():
            continue
        found[where] = model
        for field, info in model.model_fields.items():
            roots += [(f"{where}.{field}", m) for m in models_in(info.annotation)]
    return found


def test_every_config_model_at_every_depth_refuses_unknown_keys():
    models = config_models()
    assert {"evaluate.data", "evaluate.data.columns", "evaluate.judge"} <= set(models)
    assert len(models) > 40
    lax = {
        where: m.__name__ for where, m in models.items() if m.model_config.get("extra") != "forbid"
    }
    assert lax == {}


def test_schema_evaluate_describes_every_data_field(capsys):
    assert main(["schema", "evaluate"]) == 0
    schema = json.loads(capsys.readouterr().out)
    for model in ("DataConfig", "ColumnMap", "PairsConfig", "TranscriptPrep"):
        properties = schema["$defs"][model]["properties"]
        assert {k for k, v in properties.items() if not v.get("description")} == set(), model
    assert (
        "ToolEmu evaluator file"
        in schema["$defs"]["DataConfig"]["properties"]["expected_from"]["description"]
    )


def test_toolemu_trajectories_are_read_a_line_at_a_time_into_a_file_the_run_streams(
    tmp_path, monkeypatch
):
    """The trajectory file is read twice — its case names counted, then an item a line — so
    the first item comes after one line of the second pass, not after the file is held whole;
    the items, references and fingerprint are those of a whole read, and the run's items live
    in a spool file that goes with their stream."""
    import gc

    import assay.data._toolemu as toolemu
    from assay.data import load_toolemu_trajectories
    from assay.inputs import data_fingerprint, load_config, stream_items

    config, _ = load_config(toolemu_config(tmp_path))
    data = config.data
    lines = []
    read = toolemu.iter_jsonl
    monkeypatch.setattr(toolemu, "iter_jsonl", lambda path: (lines.append(x) or x for x in read(path)))  # fmt: skip
    items = toolemu.iter_toolemu_trajectories(data.path)
    first = next(items)
    assert len(lines) == 15 + 1  # the scan, then one line
    rest = list(items)
    whole = load_toolemu_trajectories(data.path)
    assert [it.model_dump() for it in [first, *rest]] == [it.model_dump() for it in whole]

    import assay.inputs._items as reading
    from assay.data import load_toolemu_evaluations, pair_evaluations

    kept: list[dict] = []  # the evaluator rows the run holds while it streams
    load = reading.load_toolemu_evaluations
    monkeypatch.setattr(reading, "load_toolemu_evaluations", lambda *a, **kw: kept.extend(rows := load(*a, **kw)) or rows)  # fmt: skip
    stream = stream_items(data, config.judge.scale, cache_dir=tmp_path / "hf")
    (spool,) = (tmp_path / "items").glob("toolemu-*.jsonl")
    streamed = list(stream)
    assert [it.id for it in streamed] == [it.id for it in whole]
    scores, _ = pair_evaluations(
        load_toolemu_evaluations(data.expected_from, key=data.expected_key),
        len(whole),
        path=data.expected_from,
    )  # the whole evaluator file, its records kept
    assert [it.expected for it in streamed] == [
        config.judge.scale.coerce(scores[it.meta["line"]]["score"]) for it in streamed
    ]  # every one paired with its score
    assert len(kept) == len(whole) and all(set(r["raw"]) <= {"eval_id"} for r in kept)
    assert [it.transcript for it in streamed] == [it.transcript for it in whole]
    assert data_fingerprint(stream) == data_fingerprint(streamed)
    del stream, streamed
    gc.collect()
    assert not spool.exists()
