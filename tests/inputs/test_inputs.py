"""Bad input ends in one line naming the file, row and field — before a run directory exists
. Through the command line where a user meets it, through the library where the
library must refuse too."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from assay.cli import main
from assay.data import ColumnMap, load_table, load_toolemu_trajectories
from assay.errors import ConfigError, DataError
from assay.inputs._config import DataConfig
from assay.inputs._items import load_items
from assay.programs import JudgeConfig
from assay.scale import Scale

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "data"
TRAJECTORIES = FIXTURES / "data" / "toolemu_trajectories.jsonl"


@pytest.fixture
def cfg(tmp_path: Path, monkeypatch) -> Path:
    shutil.copytree(FIXTURES / "evaluate", tmp_path / "cfg")
    monkeypatch.chdir(tmp_path)
    return tmp_path / "cfg"


def one_line_error(capsys, *args: str) -> str:
    """Run the CLI; assert exit code 2 and a single line on stderr, without a traceback, and
    that no run directory was created; return the line."""
    code = main(list(args))
    err = capsys.readouterr().err.strip()
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert code == 2, err
    assert len(lines) == 1 and "Traceback" not in err, err
    assert not (Path.cwd() / "runs").exists(), "a run directory was created before validation"
    return lines[0]


def edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text, old
    path.write_text(text.replace(old, new))


# -- ToolEmu: a malformed step is refused at load time -------------------------------------------
@pytest.mark.parametrize(
    "step",
    [
        ["NotesAdd"],  # was an IndexError while judging, after the run directory existed
        [],
        [["NotesAdd", "{}", "log"]],  # a tool call without its observation
        [{"tool_input": "{}"}, ["obs"]],
        42,
    ],
)
def test_a_malformed_toolemu_step_names_file_row_and_step(tmp_path, step):
    lines = TRAJECTORIES.read_text().splitlines()
    record = json.loads(lines[1])
    record["intermediate_steps"].insert(1, step)
    lines[1] = json.dumps(record)
    path = tmp_path / "traj.jsonl"
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(DataError) as err:
        load_toolemu_trajectories(path)
    assert str(err.value).startswith(f"{path}, row 2, field 'intermediate_steps[1]': ")


def test_a_malformed_toolemu_step_stops_evaluate_before_the_run_directory(cfg, capsys, tmp_path):
    lines = TRAJECTORIES.read_text().splitlines()
    record = json.loads(lines[0])
    record["intermediate_steps"][0] = ["NotesAdd"]
    lines[0] = json.dumps(record)
    (cfg / "traj.jsonl").write_text("\n".join(lines) + "\n")
    (cfg / "config.yaml").write_text(
        "name: t\ndata: {format: toolemu, path: traj.jsonl}\n"
        "judge: {task: toolemu_safety, model: 'scripted:sheet.json'}\n"
        "tracking: {enabled: false}\n"
    )
    line = one_line_error(capsys, "evaluate", str(cfg / "config.yaml"))
    assert "traj.jsonl, row 1, field 'intermediate_steps[0]'" in line


@pytest.mark.parametrize(
    ("toolkits", "says"),
    [
        (["Notes", "NoSuchKit"], "unknown toolkit(s) NoSuchKit (not in "),
        ("Notes", 'not a list of toolkit names (a str: "Notes")'),  # not the toolkits N, o, t...
        (["Notes", 3], "not a list of toolkit names (a list with a non-string"),
    ],
)
def test_a_toolemu_case_with_bad_toolkits_names_file_row_and_field(cfg, capsys, toolkits, says):
    lines = TRAJECTORIES.read_text().splitlines()
    record = json.loads(lines[1])
    record["case"]["Toolkits"] = toolkits
    lines[1] = json.dumps(record)
    (cfg / "traj.jsonl").write_text("\n".join(lines) + "\n")
    shutil.copy(FIXTURES / "data" / "toolemu_toolkits.json", cfg / "toolkits.json")
    (cfg / "config.yaml").write_text(
        "name: t\ndata: {format: toolemu, path: traj.jsonl, toolkits: toolkits.json}\n"
        "judge: {task: toolemu_safety, model: 'scripted:sheet.json'}\n"
        "tracking: {enabled: false}\n"
    )
    line = one_line_error(capsys, "evaluate", str(cfg / "config.yaml"))
    assert f"traj.jsonl, row 2, field 'case.Toolkits': {says}" in line


# -- run directory and name ------------------------------------------------------------------------
def test_an_output_dir_that_is_a_file(cfg, capsys):
    (cfg.parent / "results").write_text("not a folder")
    edit(cfg / "config.yaml", "concurrency: 3", "concurrency: 3\noutput_dir: results/sub")
    line = one_line_error(capsys, "evaluate", str(cfg / "config.yaml"))
    assert "results: output_dir is a file, not a directory" in line


@pytest.mark.parametrize("name", ["../../x", "a/b", ".hidden", ""])
def test_a_run_name_that_is_not_a_plain_name(cfg, capsys, name):
    edit(cfg / "config.yaml", "name: fixture-binary", f"name: {json.dumps(name)}")
    line = one_line_error(capsys, "evaluate", str(cfg / "config.yaml"))
    assert "config.yaml: field 'name'" in line and "not a plain name" in line
    assert not (cfg.parent.parent / "x").exists()


# -- limits ----------------------------------------------------------------------------------------
def test_limit_zero_is_refused_by_the_command_line(cfg, capsys):
    line = one_line_error(capsys, "evaluate", str(cfg / "config.yaml"), "--limit", "0")
    assert line == (
        "assay evaluate: error: argument --limit: must be at least 1, got 0 "
        "(see assay evaluate --help)"
    )


@pytest.mark.parametrize("limit", [0, -1, True, 1.5])
@pytest.mark.parametrize("fmt", ["table", "toolemu", "inspect"])
def test_a_limit_below_one_is_a_config_error_for_every_format(fmt, limit):
    data = {
        "table": DataConfig(path=str(FIXTURES / "evaluate" / "items.csv")),
        "toolemu": DataConfig(path=str(TRAJECTORIES), format="toolemu"),
        "inspect": DataConfig(
            path=str(EXAMPLES / "jrh/agentharm/agentharm.eval"), format="inspect"
        ),
    }[fmt]
    # (taken as a slice, 0 would judge everything and -1 silently drop the last item)
    with pytest.raises(ConfigError, match="limit must be a positive number"):
        load_items(data, Scale.parse("binary"), limit=limit)


def test_limit_one_keeps_the_first_item():
    data = DataConfig(path=str(TRAJECTORIES), format="toolemu")
    items = load_items(data, Scale.parse("0-3"), limit=1)
    assert [it.meta["line"] for it in items] == [0]


# -- the judge config --------------------------------------------------------------------------
def test_duplicate_criterion_ids_are_named(cfg, capsys):
    criteria = [
        {"id": "refusal", "instructions": "a"},
        {"id": "harm", "instructions": "b"},
        {"id": "refusal", "instructions": "c"},
    ]
    edit(
        cfg / "config.yaml",
        "  instruction:",
        f"  task: transcript\n  criteria: {json.dumps(criteria)}\n  instruction:",
    )
    line = one_line_error(capsys, "evaluate", str(cfg / "config.yaml"))
    assert "field 'judge.criteria'" in line and "'refusal' is used more than once" in line


@pytest.mark.parametrize(
    "levels, message",
    [
        ([0, 2], "0..2 is missing 1"),
        ([0, 1, 1], "score 1 listed more than once"),
        ([{"score": 0, "description": "no"}, {"score": 0, "description": "yes"}], "more than once"),
        (["fails", "passes"], "level 0 has no integer score"),
        ([0, 1, 2], "score_levels [2] are not on the judge's"),
    ],
)
def test_score_levels_with_gaps_or_duplicates(levels, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        JudgeConfig(
            task="transcript",
            scale="binary",
            criteria=[{"id": "c", "instructions": "i", "score_levels": levels}],
        )
    JudgeConfig(  # consecutive levels matching the scale are fine
        task="transcript",
        scale="binary",
        criteria=[{"id": "c", "instructions": "i", "score_levels": [1, {"score": 0}]}],
    )


@pytest.mark.parametrize(
    "old, new, field",
    [
        ("concurrency: 3", "concurrency: true", "field 'concurrency'"),
        ("concurrency: 3", "concurrency: 2.5", "field 'concurrency'"),
        ("  scale:", "  max_tokens: -5\n  scale:", "field 'judge.max_tokens'"),
        ("  scale:", "  temperature: -3\n  scale:", "field 'judge.temperature'"),
        ("  scale:", "  temperature: true\n  scale:", "field 'judge.temperature'"),
        ("  scale:", "  timeout: true\n  scale:", "field 'judge.timeout'"),
        ("concurrency: 3", "concurrency: 3\nretries: yes", "field 'retries'"),
        ("concurrency: 3", "concurrency: 3\ndeadline_s: -1", "field 'deadline_s'"),
        ("concurrency: 3", "concurrency: 3\nbootstrap: {seed: true}", "field 'bootstrap.seed'"),
    ],
)
def test_strict_fields_refuse_what_they_would_have_coerced(cfg, capsys, old, new, field):
    edit(cfg / "config.yaml", old, new)
    line = one_line_error(capsys, "evaluate", str(cfg / "config.yaml"))
    assert f"config.yaml: {field}" in line


def test_a_key_set_twice_in_the_yaml_is_named_with_its_lines(cfg, capsys):
    edit(cfg / "config.yaml", "concurrency: 3", "concurrency: 3\nconcurrency: 1")
    line = one_line_error(capsys, "evaluate", str(cfg / "config.yaml"))
    assert "config.yaml: line 12: duplicate key 'concurrency' (already set on line 11)" in line
    edit(cfg / "config.yaml", "concurrency: 1\n", "")
    edit(
        cfg / "config.yaml",
        "  enabled: false",
        "  enabled: false\n  experiment: a\n  enabled: true",
    )
    assert "duplicate key 'enabled'" in one_line_error(capsys, "evaluate", str(cfg / "config.yaml"))


def test_yaml_merge_keys_may_still_be_overridden():
    from assay._yaml import load_input as load_yaml

    text = "base: &b {enabled: true, experiment: e}\ntracking:\n  <<: *b\n  enabled: false\n"
    assert load_yaml(text)["tracking"] == {"enabled": False, "experiment": "e"}


def test_an_unreadable_scale_names_the_file_and_field(cfg, capsys):
    edit(cfg / "config.yaml", 'scale: {kind: binary, labels: ["False", "True"]}', "scale: banana")
    line = one_line_error(capsys, "evaluate", str(cfg / "config.yaml"))
    assert "config.yaml: field 'judge.scale': cannot read scale 'banana'" in line


# -- data ----------------------------------------------------------------------------------------
def test_an_empty_reference_label_is_named_unless_kept(cfg, capsys):
    rows = (cfg / "items.csv").read_text().splitlines()
    rows[3] = rows[3].rsplit(",", 1)[0] + ","
    rows[7] = rows[7].rsplit(",", 1)[0] + ","
    (cfg / "items.csv").write_text("\n".join(rows) + "\n")
    line = one_line_error(capsys, "evaluate", str(cfg / "config.yaml"))
    assert (
        "items.csv, row 3, field 'label': empty reference label in 2 of 12 rows (rows 3, 7)" in line
    )
    edit(cfg / "config.yaml", "  path: items.csv", "  path: items.csv\n  missing_expected: keep")
    assert main(["evaluate", str(cfg / "config.yaml"), "--quiet", "--json"]) == 0
    out = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert out["counts"]["without_reference"] == 2 and out["counts"]["paired"] == 10


def test_a_missing_toolemu_reference_score_is_named(tmp_path):
    evals = (FIXTURES / "data" / "toolemu_eval_safe.jsonl").read_text().splitlines()
    first = json.loads(evals[0])
    first["eval_scores"] = {}
    first.pop("Overall Quantitative Score", None)
    first["Overall Qualitative Label"] = ""
    evals[0] = json.dumps(first)
    path = tmp_path / "evals.jsonl"
    path.write_text("\n".join(evals) + "\n")
    data = DataConfig(path=str(TRAJECTORIES), format="toolemu", expected_from=str(path))
    with pytest.raises(DataError, match=r"evals\.jsonl, row 1, field 'eval_scores': empty"):
        load_items(data, Scale.parse("0-3"))
    kept = load_items(data.model_copy(update={"missing_expected": "keep"}), Scale.parse("0-3"))
    assert kept[0].expected is None and kept[1].expected is not None


def test_a_toolemu_reference_missing_from_a_file_paired_by_eval_id_names_the_right_lines(
    tmp_path,
):
    """An evaluator file paired by ``eval_id`` in another order than the trajectories: a
    trajectory with no evaluator line was reported as "empty reference label ... (rows 4)" of
    the evaluator file — whose line 4 holds another trajectory's score. The trajectory line is
    named; an unreadable score by its own line of the evaluator file."""
    trajectories = EXAMPLES / "toolemu" / "trajectories" / "gpt-4o-mini_r0-15_trajectories.jsonl"
    safe = trajectories.with_name("gpt-4o-mini_r0-15_judge-gpt-5-mini_eval_agent_safe.jsonl")
    rows = [json.loads(line) for line in safe.read_text().splitlines()][::-1]  # eval_id 14..0
    path = tmp_path / "evals.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows if r["eval_id"] != 3))
    data = DataConfig(path=str(trajectories), format="toolemu", expected_from=str(path))
    with pytest.raises(DataError) as err:
        load_items(data, Scale.parse("0-3"))
    assert str(err.value) == (
        f"{path}, field 'eval_id': no evaluator line for 1 of 15 trajectories (trajectory lines "
        "4); evaluate them, or set data.missing_expected: keep to judge those items without a "
        "reference"
    )
    rows[2] = {"eval_id": rows[2]["eval_id"], "eval_scores": {}}  # eval_id 12: no score
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    with pytest.raises(DataError, match=r"evals\.jsonl, row 3, field 'eval_scores': empty"):
        load_items(data, Scale.parse("0-3"))


@pytest.mark.parametrize("name", ["one.json", "one_pretty.jsonl"])
def test_a_single_json_object_is_not_a_one_row_table(tmp_path, name):
    path = tmp_path / name
    row = {"id": "a", "request": "q", "response": "r", "expected": 1}
    path.write_text(json.dumps(row, indent=1 if "pretty" in name else None))
    with pytest.raises(DataError, match="a single JSON object, not a table"):
        load_table(str(path), columns=ColumnMap(id="id"))
    one_line = tmp_path / "one_line.jsonl"  # one JSON Lines record is a one-row table
    one_line.write_text(json.dumps(row) + "\n")
    assert len(load_table(str(one_line), columns=ColumnMap(id="id"))) == 1


def test_a_csv_that_is_not_utf8_names_the_row(cfg, capsys):
    data = (cfg / "items.csv").read_bytes().splitlines()
    data[4] = data[4].replace(b"Answer", "Answ\xe9r".encode("latin-1"))
    (cfg / "items.csv").write_bytes(b"\n".join(data) + b"\n")
    line = one_line_error(capsys, "evaluate", str(cfg / "config.yaml"))
    assert "items.csv, row 4: not UTF-8 text: byte 0xe9 at line 5" in line


def test_a_ragged_csv_names_the_row(cfg, capsys):
    rows = (cfg / "items.csv").read_text().splitlines()
    rows[2] += ",extra"
    (cfg / "items.csv").write_text("\n".join(rows) + "\n")
    line = one_line_error(capsys, "evaluate", str(cfg / "config.yaml"))
    assert line.endswith("items.csv, row 2: line 3 has 5 fields where the header has 4; a cell "
                         "holding the separator is quoted")  # fmt: skip


@pytest.mark.parametrize("command", ["evaluate", "agreement"])
def test_a_table_of_unknown_extension_names_what_its_user_can_do(cfg, capsys, command):
    """It suggested ``format=``, an option of the Python API a config and the command line
    have not got (a config's ``data.format`` is the kind of source)."""
    (cfg / "items.csv").rename(cfg / "items.data")
    edit(cfg / "config.yaml", "path: items.csv", "path: items.data")
    args = [str(cfg / "config.yaml")]
    if command == "agreement":
        args = [str(cfg / "items.data"), str(cfg / "items.data"), "--score-column", "label"]
    line = one_line_error(capsys, command, *args)
    assert line == (
        f"assay: error: {cfg / 'items.data'}: cannot tell the table format from the extension "
        "'.data': rename the file to end in .csv, .json, .jsonl, .ndjson, .parquet, .pq or .tsv"
    )


def test_a_csv_row_short_of_fields_names_the_row_and_is_not_judged(cfg, capsys):
    """pandas padded it with empty cells: the item was judged with an empty response."""
    rows = (cfg / "items.csv").read_text().splitlines()
    rows[3] = rows[3].split(",")[0] + ",only a question"
    (cfg / "items.csv").write_text("\n".join(rows) + "\n")
    line = one_line_error(capsys, "evaluate", str(cfg / "config.yaml"))
    assert line == (
        f"assay: error: {cfg / 'items.csv'}, row 3, field 'answer': line 4 has 2 fields where "
        "the header has 4 (answer and label are missing); an empty cell is a field too"
    )


@pytest.mark.parametrize("limit", [0, -1])
def test_the_harness_refuses_a_limit_below_one(tmp_path, limit):
    from assay.reliability import HarnessConfig, run_harness
    from assay.reliability.selftest._selftest import write_data

    data = write_data(tmp_path / "data", n=4)
    config = HarnessConfig.model_validate(
        {
            "name": "h",
            "data": {"path": str(data)},
            "scale": "binary",
            "generator": {"model": "scripted:nope"},
            "validator": {"model": "scripted:nope"},
            "judges": [{"name": "j", "model": "scripted:nope"}],
            "tests": {"format_vertical": {}},
            "tracking": {"enabled": False},
        }
    )
    with pytest.raises(ConfigError, match="limit must be a positive number"):
        run_harness(config, workdir=tmp_path, limit=limit, progress=False)
    assert not (tmp_path / "runs").exists()
