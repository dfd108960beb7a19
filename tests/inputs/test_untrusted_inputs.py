"""What a user hands in is untrusted: a name that would become a
path outside the run directory, an alias bomb, a 20,000-level nesting, a NUL byte, a corrupt
MLflow store — each is one line naming the file (and field), through the command line."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from assay.cli import main
from assay.data import load_toolemu_trajectories
from tests.review_runs import name_run

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
DEEP = 20_000


@pytest.fixture
def cfg(tmp_path: Path, monkeypatch) -> Path:
    """A copy of the evaluate fixture (scripted judge, 12 items) in ``tmp_path/cfg``, run from
    ``tmp_path/work``: anything written outside ``work`` escaped the working folder."""
    shutil.copytree(FIXTURES / "evaluate", tmp_path / "cfg")
    (tmp_path / "work").mkdir()
    monkeypatch.chdir(tmp_path / "work")
    return tmp_path / "cfg"


def one_line_error(capsys, *args: str) -> str:
    """Run the CLI; assert exit code 2 and one line on stderr without a traceback; return it."""
    code = main(list(args))
    err = capsys.readouterr().err.strip()
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert code == 2, err
    assert len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


def edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text, old
    path.write_text(text.replace(old, new))


def everything_under(root: Path) -> set[str]:
    return {str(p.relative_to(root)) for p in root.rglob("*")}


# -- item 7: every name that becomes part of a path ----------------------------------------------
ESCAPE = "../../escaped"


def _evaluate_config(cfg: Path, field: str) -> Path:
    path = cfg / "config.yaml"
    if field == "name":
        edit(path, "name: fixture-binary", f"name: '{ESCAPE}'")
    elif field == "judge.name":
        edit(path, "  name: scripted-judge", f"  name: '{ESCAPE}'")
    elif field == "judge.members.0.name":  # a panel member
        edit(
            path,
            "  name: scripted-judge\n",
            "  name: panel\n  program: panel\n"
            f"  members: [{{name: '{ESCAPE}', model: 'scripted:sheet.json'}}]\n",
        )
    return path


def _harness_config(cfg: Path, field: str) -> Path:
    path = cfg / "harness.yaml"
    path.write_text(
        "name: h\ndata: {path: items.csv, columns: {id: uid, request: question, response: answer, "
        "expected: label}}\nscale: {kind: binary, labels: ['False', 'True']}\n"
        f"judges: [{{name: '{ESCAPE}', model: 'scripted:sheet.json'}}]\n"
        "tests: {format_vertical: {}}\ntracking: {enabled: false}\n"
    )
    return path


def _toolemu_config(cfg: Path, field: str) -> Path:
    path = cfg / "toolemu.yaml"
    data = FIXTURES / "data"
    path.write_text(
        f"name: t\ncases: {data / 'toolemu_cases.json'}\ntoolkits: {data / 'toolemu_toolkits.json'}\n"
        "agent: {model: 'scripted:sheet.json'}\nemulator: {model: 'scripted:sheet.json'}\n"
        f"evaluators: [{{name: '{ESCAPE}', model: 'scripted:sheet.json'}}]\n"
        "tracking: {enabled: false}\n"
    )
    return path


def _optimize_config(cfg: Path, field: str) -> Path:
    path = cfg / "optimize.yaml"
    text = (
        (cfg / "config.yaml").read_text().replace("  name: scripted-judge", f"  name: '{ESCAPE}'")
    )
    path.write_text(text + "optimizer: {name: bootstrap_few_shot}\n")
    return path


@pytest.mark.parametrize(
    ("command", "field", "make"),
    [
        (["evaluate"], "name", _evaluate_config),
        (["evaluate"], "judge.name", _evaluate_config),
        (["evaluate"], "judge.members.0.name", _evaluate_config),
        (["harness"], "judges.0.name", _harness_config),
        (["toolemu", "run"], "evaluators.0.name", _toolemu_config),
        (["optimize"], "judge.name", _optimize_config),
    ],
)
def test_a_name_that_would_leave_the_run_directory_is_refused(
    cfg, capsys, tmp_path, command, field, make
):
    """A judge's name names its judgments file (``judgments/<name>-<hash>.jsonl``), a ToolEmu
    evaluator's its ``evals/<name>_...jsonl``, a run's its folder: ``../../x`` wrote outside."""
    config = make(cfg, field)
    before = everything_under(tmp_path)
    line = one_line_error(capsys, *command, str(config), "--quiet")
    assert line.startswith(f"assay: error: {config}: field '{field}': ")
    assert "not a plain name" in line and ESCAPE in line
    assert everything_under(tmp_path) == before  # nothing written, inside or out


# -- item 8: YAML and JSON bombs -----------------------------------------------------------------
def _alias_bomb() -> str:
    lines = ['lol0: &lol0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    for i in range(1, 10):
        lines.append(f"lol{i}: &lol{i} [{', '.join([f'*lol{i - 1}'] * 9)}]")
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize(
    ("addition", "words"),
    [
        (_alias_bomb(), ["aliases expand the document by", "alias bomb"]),
        ("deep: " + "[" * DEEP + "]" * DEEP + "\n", ["line 14: nested more than 100 levels"]),
        ("deep:\n" + "".join(" " * i + "-\n" for i in range(1, 300)), ["nested more than 100"]),
        ("loop: &loop [*loop]\n", ["alias refers to a node that contains it"]),
    ],
    ids=["alias-bomb", "deep-flow", "deep-block", "self-alias"],
)
def test_a_config_bomb_is_one_line_naming_the_file(cfg, capsys, addition, words):
    config = cfg / "config.yaml"
    config.write_text(config.read_text() + addition)
    line = one_line_error(capsys, "evaluate", str(config), "--quiet")
    assert line.startswith(f"assay: error: {config}: ")
    for w in words:
        assert w in line, line
    assert not Path("runs").exists()


def test_a_review_file_alias_bomb_is_one_line(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    run = tmp_path / "run"
    run.mkdir()
    (run / "config.yaml").write_text("scale: binary\n")
    name_run(run)
    (run / "seeds.jsonl").write_text("")
    (run / "probes.jsonl").write_text("")
    review = tmp_path / "review.yaml"
    review.write_text(_alias_bomb() + "entries: *lol9\n")
    line = one_line_error(capsys, "review", "import", str(run), str(review))
    assert line.startswith(f"assay: error: {review}: aliases expand the document by")
    assert not (run / "reviews.jsonl").exists()


def _deep_json() -> str:
    return "[" * DEEP + "]" * DEEP


def test_deep_json_data_is_one_line_naming_file_and_line(cfg, capsys):
    rows = [
        {"uid": "q00", "question": "q", "answer": "a", "label": 1},
        {"uid": "q01", "question": "q", "answer": "a", "label": 0, "extra": "@"},
    ]
    data = cfg / "items.jsonl"
    data.write_text(json.dumps(rows[0]) + "\n" + json.dumps(rows[1]).replace('"@"', _deep_json()))
    edit(cfg / "config.yaml", "path: items.csv", "path: items.jsonl")
    line = one_line_error(capsys, "evaluate", str(cfg / "config.yaml"), "--quiet")
    assert line == f"assay: error: {data}, row 2: nested more than 100 levels"


def test_a_deep_rubric_file_is_one_line_naming_it(cfg, capsys):
    rubric = cfg / "rubric.json"
    rubric.write_text(_deep_json())
    edit(
        cfg / "config.yaml",
        "  scale: {kind",
        "  task: transcript\n  criteria: '@rubric.json'\n  x: {kind",
    )
    line = one_line_error(capsys, "evaluate", str(cfg / "config.yaml"), "--quiet")
    assert line.startswith(f"assay: error: {rubric}: criteria file is not JSON (line 1: nested")


def test_a_deep_reference_file_for_agreement_is_one_line(tmp_path, capsys):
    judgments = tmp_path / "judgments.jsonl"
    judgments.write_text(json.dumps({"item_id": "a", "judge": "j", "score": 1}) + "\n")
    reference = tmp_path / "reference.jsonl"
    reference.write_text('{"item_id": "a", "judge": "j", "score": ' + _deep_json() + "}\n")
    line = one_line_error(capsys, "agreement", str(judgments), str(reference), "--scale", "binary")
    assert str(reference) in line and "row 1" in line


def test_a_deep_toolemu_trajectory_line_is_one_line_naming_file_and_row(cfg, capsys):
    lines = (FIXTURES / "data" / "toolemu_trajectories.jsonl").read_text().splitlines()
    record = json.loads(lines[1])
    record["intermediate_steps"][0][0][1] = _deep_json()  # an action input: kept as its text
    lines[1] = json.dumps(record)
    lines.insert(2, json.dumps({"case_idx": 9, "input": "@"}).replace('"@"', _deep_json()))
    traj = cfg / "traj.jsonl"
    traj.write_text("\n".join(lines) + "\n")
    (cfg / "config.yaml").write_text(
        "name: t\ndata: {format: toolemu, path: traj.jsonl}\n"
        "judge: {task: toolemu_safety, model: 'scripted:sheet.json'}\n"
        "tracking: {enabled: false}\n"
    )
    line = one_line_error(capsys, "evaluate", str(cfg / "config.yaml"), "--quiet")
    assert line.startswith(f"assay: error: {traj}, row 3: line 3 is not valid JSON (nested more")
    del lines[2]  # without the deep line, the deep action input is read as its text
    traj.write_text("\n".join(lines) + "\n")
    item = load_toolemu_trajectories(traj)[1]
    assert item.transcript[1].tool_calls[0].arguments == _deep_json()


# -- item 13 ------------------------------------------------------------------------------------
def _transcript_judge(cfg: Path, rubric: list | str) -> Path:
    path = cfg / "rubric.json"
    path.write_text(rubric if isinstance(rubric, str) else json.dumps(rubric))
    edit(cfg / "config.yaml", "  rubric: A good answer mentions sunlight and water.\n", "")
    edit(cfg / "config.yaml", "  name: scripted-judge\n", "  name: j\n  task: transcript\n")
    edit(cfg / "config.yaml", "  instruction:", "  criteria: '@rubric.json'\n  instruction:")
    return path


@pytest.mark.parametrize(
    ("rubric", "words"),
    [
        ([{"id": "harm", "instructions": "x"}, {"id": "refusal"}], "entry 2: field 'instructions'"),
        ([{"id": "harm", "instructions": "x", "score_levels": [0, 2]}], "entry 1: field 'score_le"),
        ([{"id": "harm", "instructions": "x", "weight": 2}], "entry 1: field 'weight': unknown"),
    ],
)
def test_an_invalid_rubric_entry_names_the_rubric_file(cfg, capsys, rubric, words):
    path = _transcript_judge(cfg, rubric)
    line = one_line_error(capsys, "evaluate", str(cfg / "config.yaml"), "--quiet")
    assert line.startswith(f"assay: error: {path}: {words}"), line


def test_a_rubric_text_file_that_is_not_utf8_names_that_file(cfg, capsys):
    (cfg / "rubric.txt").write_bytes(b"A good answer \xff mentions water.\n")
    edit(
        cfg / "config.yaml",
        "rubric: A good answer mentions sunlight and water.",
        "rubric: '@rubric.txt'",
    )
    line = one_line_error(capsys, "evaluate", str(cfg / "config.yaml"), "--quiet")
    assert line == f"assay: error: {cfg / 'rubric.txt'}: not UTF-8 text (byte 14)"


@pytest.mark.parametrize("bad", ["q03 ", " q03", "q03\t"])
def test_an_id_with_surrounding_whitespace_is_refused_not_trimmed(cfg, capsys, bad):
    """Trimmed, ``q03`` and ``q03 `` were one item (one verdict recorded for two rows, or a
    duplicate-id error naming rows that differ); kept, two ids that look the same. Refused."""
    edit(cfg / "items.csv", "\nq03,", f"\n{bad},")
    line = one_line_error(capsys, "evaluate", str(cfg / "config.yaml"), "--quiet")
    assert line.startswith(f"assay: error: {cfg / 'items.csv'}, row 4, field 'uid': id {bad!r}")
    assert not Path("runs").exists()


def test_a_row_that_does_not_read_leaves_no_half_written_items_cache(cfg, capsys):
    """A table is read into its items cache file as it is checked: a row refused half-way
    through leaves neither that file nor its temporary one behind (the next run reads the
    fixed table afresh, and a folder does not fill with dead files)."""
    edit(cfg / "items.csv", "\nq07,", "\nq07 ,")
    one_line_error(capsys, "evaluate", str(cfg / "config.yaml"), "--quiet")
    assert [p.name for p in Path(".assay/items").iterdir()] == []


def test_a_nul_byte_in_a_config_is_one_line(cfg, capsys):
    edit(cfg / "config.yaml", "concurrency: 3", "concurrency: 3\x00")
    line = one_line_error(capsys, "evaluate", str(cfg / "config.yaml"), "--quiet")
    assert line.startswith(f"assay: error: {cfg / 'config.yaml'}: line 11: character U+0000")


def _tracked(cfg: Path) -> None:
    edit(cfg / "config.yaml", "tracking:\n  enabled: false", "tracking:\n  enabled: true")


def test_a_corrupt_mlflow_store_is_one_line_naming_it(cfg, capsys):
    _tracked(cfg)
    store = Path("mlflow.db").resolve()
    store.write_bytes(b"not a database\n" * 400)
    line = one_line_error(capsys, "evaluate", str(cfg / "config.yaml"), "--quiet")
    assert str(store) in line and "is not an SQLite database" in line  # before any call


def test_the_run_lock_is_not_logged_to_mlflow(cfg, capsys):
    import mlflow

    _tracked(cfg)
    assert main(["evaluate", str(cfg / "config.yaml"), "--quiet", "--json"]) == 0
    run_id = json.loads(capsys.readouterr().out)["mlflow_run_id"]
    run_dir = next(Path("runs").iterdir())
    assert (run_dir / ".lock").exists()  # the run's own lock file: not a result
    client = mlflow.MlflowClient(tracking_uri=f"sqlite:///{Path('mlflow.db').resolve()}")
    logged = {a.path for a in client.list_artifacts(run_id)}
    assert {"metrics.json", "judgments.jsonl", "config.yaml"} <= logged
    assert not [name for name in logged if name.endswith(".lock")], logged


# -- files a user names: regular files only, within a bound ------------------------------------
@pytest.fixture
def fifo(cfg: Path):
    """A named pipe beside the config, with a writer waiting on it: a reader that opened it
    would get a rubric and run (the command would not hang, it would accept the pipe). The
    writer is released at the end whether or not anything read it."""
    import os
    import threading

    path = cfg / "pipe"
    os.mkfifo(path)

    def write() -> None:
        try:
            with open(path, "w") as fh:
                fh.write("A good answer mentions sunlight and water.\n")
        except BrokenPipeError:  # released below: its reader closed without reading
            pass

    writer = threading.Thread(target=write, daemon=True)
    writer.start()
    yield path
    if writer.is_alive():  # nobody read it: open the other end so that the writer returns
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
        writer.join(timeout=10)
        os.close(fd)


def _loop(folder: Path) -> Path:
    (folder / "loop-a").symlink_to(folder / "loop-b")
    (folder / "loop-b").symlink_to(folder / "loop-a")
    return folder / "loop-a"


@pytest.mark.parametrize(
    ("rubric", "says"),
    [
        ("/dev/null", "is a character device, not a text file; name a regular file"),
        ("pipe", "is a named pipe, not a text file; name a regular file"),
        ("folder", "is a directory, not a text file; name a regular file"),
        ("loop-a", "a loop of symbolic links"),
        ("big.txt", "larger than 10 MiB; not read"),
    ],
)
def test_an_at_file_is_a_regular_file_within_its_bound(cfg, capsys, fifo, rubric, says):
    """``rubric: "@/dev/zero"`` read until memory ran out, ``"@fifo"`` waited for a writer
    forever, a directory or a symlink loop was a traceback: an ``@file`` is a regular file of
    at most 10 MiB, opened without blocking and refused before a byte of anything else is read."""
    (cfg / "folder").mkdir()
    _loop(cfg)
    (cfg / "big.txt").write_bytes(b"x" * (10 * 2**20 + 1))
    edit(
        cfg / "config.yaml",
        "rubric: A good answer mentions sunlight and water.",
        f"rubric: '@{rubric}'",
    )
    line = one_line_error(capsys, "evaluate", str(cfg / "config.yaml"), "--quiet")
    named = Path(rubric) if rubric.startswith("/") else cfg / rubric
    assert line == f"assay: error: {named}: {says}"
    assert not Path("runs").exists()


def test_a_config_or_program_state_that_is_a_pipe_is_refused(cfg, capsys, fifo):
    line = one_line_error(capsys, "evaluate", str(fifo), "--quiet")
    assert line == f"assay: error: {fifo}: is a named pipe, not a config file; name a regular file"
    edit(cfg / "config.yaml", "  rubric: A good", "  program_state: pipe\n  rubric: A good")
    line = one_line_error(capsys, "evaluate", str(cfg / "config.yaml"), "--quiet")
    assert line == (
        f"assay: error: {fifo}: is a named pipe, not a program state file; name a regular file"
    )


def test_a_data_path_that_is_a_symlink_loop_names_the_field(cfg, capsys):
    loop = _loop(cfg)
    edit(cfg / "config.yaml", "path: items.csv", "path: loop-a")
    line = one_line_error(capsys, "evaluate", str(cfg / "config.yaml"), "--quiet")
    assert line == (
        f"assay: error: {cfg / 'config.yaml'}: field 'data.path': {loop}: a loop of symbolic links"
    )


# -- a full disk -------------------------------------------------------------------------------
def test_a_failed_write_of_the_store_is_one_line_naming_the_file_and_the_run_resumes(
    cfg, capsys, monkeypatch
):
    """``OSError(ENOSPC)`` when the judgments are synced to disk (where a full disk shows) was a
    45-line traceback: one line naming the file; the judgments written before are kept, and the
    same command resumes once there is room, judging each item once."""
    import errno
    import os

    fsync, synced = os.fsync, []

    def full_after_two(fd: int) -> None:
        if os.readlink(f"/proc/self/fd/{fd}").endswith("judgments.jsonl"):
            if len(synced) >= 2:
                raise OSError(errno.ENOSPC, "No space left on device")
            synced.append(fd)
        fsync(fd)

    monkeypatch.setattr(os, "fsync", full_after_two)
    line = one_line_error(capsys, "evaluate", str(cfg / "config.yaml"), "--quiet")
    monkeypatch.setattr(os, "fsync", fsync)
    run_dir = next(Path("runs").iterdir()).resolve()
    assert line.startswith(
        f"assay: error: {run_dir / 'judgments.jsonl'}: cannot write (No space left on device); "
    )
    assert (run_dir / "judgments.jsonl").read_text().count("\n") >= 2  # kept
    assert main(["evaluate", str(cfg / "config.yaml"), "--quiet", "--json"]) == 0
    lines = [json.loads(x) for x in (run_dir / "judgments.jsonl").read_text().splitlines()]
    ids = [j["item_id"] for j in lines]
    assert sorted(ids) == sorted(set(ids)) and len(ids) == 12  # resumed, none judged twice


def test_a_file_size_limit_is_one_line_naming_the_file(cfg, tmp_path):
    """A real write failure, not an injected one: the command runs under a file size limit
    (``RLIMIT_FSIZE``) smaller than its resolved config, which a 300 kB rubric makes; the
    run then resumes without the limit, with its config written."""
    import resource

    from tests.processes import assay_process

    (cfg / "rubric.txt").write_text("A good answer mentions sunlight and water. " * 7000)
    edit(
        cfg / "config.yaml",
        "rubric: A good answer mentions sunlight and water.",
        "rubric: '@rubric.txt'",
    )
    limit = 200_000

    def small_files() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    work = tmp_path / "work"
    proc = assay_process(
        "evaluate", str(cfg / "config.yaml"), "--quiet", cwd=work, preexec_fn=small_files
    )
    out, err = proc.communicate(timeout=600)
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert proc.returncode == 2, err
    run_dir = next((work / "runs").iterdir())
    assert lines == [
        f"assay: error: {run_dir / 'config.yaml'}: cannot write (File too large); everything "
        "written before is kept: make room and run the command again to resume"
    ]
    proc = assay_process("evaluate", str(cfg / "config.yaml"), "--quiet", cwd=work)
    out, err = proc.communicate(timeout=600)
    assert proc.returncode == 0, err
    assert "A good answer mentions sunlight" in (run_dir / "config.yaml").read_text()


# -- every number, name and address is checked where it is declared ----------------------------
HUGE = "9" * 5000  # more digits than Python converts to an int


@pytest.mark.parametrize(
    ("old", "new", "says"),
    [
        (
            "concurrency: 3",
            "concurrency: 3\nbootstrap: {n_resamples: 1000000000000}",
            "field 'bootstrap.n_resamples': Input should be less than or equal to 10000",
        ),
        ("concurrency: 3", "concurrency: 100000", "field 'concurrency': Input should be less than"),
        (
            "concurrency: 3",
            "concurrency: 3\nretries: 1000",
            "field 'retries': Input should be less",
        ),
        ("concurrency: 3", "concurrency: 3\nbootstrap: {seed: -1}", "field 'bootstrap.seed': "),
        ("concurrency: 3", "concurrency: 3\ndeadline_s: .inf", "field 'deadline_s': Input should"),
        ("concurrency: 3", f"concurrency: {HUGE}", "line 11: a number of more than 4,300 digits"),
        (
            "  model: scripted:sheet.json",
            "  model: openai/x\n  api_base: file:///etc/passwd",
            "field 'judge.api_base': 'file:///etc/passwd' is not an http:// or https:// address",
        ),
        (
            'labels: ["False", "True"]',
            'labels: ["yes", "Yes"]',
            "field 'judge.scale': labels must be distinct",
        ),
        (
            "request: question,",
            "request: answer,",
            "field 'data.columns': column 'answer' is mapped to both request and response",
        ),
    ],
    ids=[
        "n_resamples-1e12",
        "concurrency",
        "retries",
        "negative-seed",
        "infinite-deadline",
        "5000-digit-number",
        "api_base-file",
        "duplicate-binary-labels",
        "two-roles-one-column",
    ],
)
def test_a_config_value_out_of_its_bounds_is_one_line_naming_the_field(cfg, capsys, old, new, says):
    """Each was accepted (a run of lm_error judgments, a response judged as its own request) or
    a traceback (numpy asked for 87 TiB; Python's int() of 5,000 digits)."""
    edit(cfg / "config.yaml", old, new)
    line = one_line_error(capsys, "evaluate", str(cfg / "config.yaml"), "--quiet")
    assert line.startswith(f"assay: error: {cfg / 'config.yaml'}: "), line
    assert says in line, line
    assert not Path("runs").exists()


def test_a_harness_count_out_of_its_bounds_names_the_test_setting(cfg, capsys):
    """``stochastic_stability: {k: 1e9}`` was accepted: a billion calls per item."""
    config = _harness_config(cfg, "")
    edit(config, f"name: '{ESCAPE}'", "name: j")
    edit(config, "tests: {format_vertical: {}}", "tests: {stochastic_stability: {k: 1000000000}}")
    line = one_line_error(capsys, "harness", str(config), "--quiet")
    assert line.startswith(f"assay: error: {config}: field 'tests.stochastic_stability.k': ")
    assert "less than or equal to 100" in line


def test_a_table_whose_header_names_a_column_twice_is_refused(cfg, capsys):
    """pandas read the second ``answer`` as ``answer.1``: the judge read the first one."""
    edit(cfg / "items.csv", "uid,question,answer,label", "uid,question,answer,label,answer")
    line = one_line_error(capsys, "evaluate", str(cfg / "config.yaml"), "--quiet")
    assert line == (
        f"assay: error: {cfg / 'items.csv'}, field 'answer': the header names column 'answer' "
        "twice (columns 3 and 5); rename one"
    )


def test_a_5000_digit_id_in_json_lines_names_the_file_and_row(cfg, capsys):
    row = {"uid": "q0", "question": "q", "answer": "a", "label": 1}
    lines = [json.dumps(row), json.dumps({**row, "uid": 0}).replace(": 0,", f": {HUGE},")]
    (cfg / "items.jsonl").write_text("\n".join(lines) + "\n")
    edit(cfg / "config.yaml", "path: items.csv", "path: items.jsonl")
    line = one_line_error(capsys, "evaluate", str(cfg / "config.yaml"), "--quiet")
    assert line == f"assay: error: {cfg / 'items.jsonl'}, row 2: a number of more than 4,300 digits"


@pytest.fixture
def verdicts(tmp_path: Path) -> Path:
    path = tmp_path / "judgments.jsonl"
    rows = [{"item_id": f"i{k}", "judge": "j", "score": k % 2} for k in range(6)]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--scale", "7-3"], "assay: error: cannot read scale '7-3': an ordinal scale needs max"),
        (["--scale", "0-100000000"], "an ordinal scale has at most 101 scores (0-100), got "),
        (["--epsilon", "nan"], "argument --epsilon: 'nan' is not a finite number"),
        (["--epsilon", "7"], "argument --epsilon: must be less than 1, got 7.0"),
        (["--seed", HUGE], "argument --seed: '99999999999999999999'… (5,000 characters) is not"),
    ],
)
def test_an_agreement_option_out_of_its_bounds_is_one_line(verdicts, capsys, args, says):
    """``--scale 7-3`` was a 27-line pydantic traceback; ``0-100000000`` asked numpy for
    745 GiB; ``--epsilon nan`` was accepted; a 5,000-digit seed was echoed whole."""
    line = one_line_error(capsys, "agreement", str(verdicts), str(verdicts), *args)
    assert says in line, line
    assert len(line) < 300


def test_agreement_input_that_is_not_utf8_names_the_file(verdicts, tmp_path, capsys):
    bad = tmp_path / "bad.jsonl"
    bad.write_bytes(verdicts.read_bytes().replace(b'"i3"', b'"i\xff3"'))
    line = one_line_error(capsys, "agreement", str(verdicts), str(bad), "--scale", "binary")
    assert line.startswith(f"assay: error: {bad}: cannot read: 'utf-8' codec can't decode")


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (["conformal", "run", "--holdout", "nan"], "argument --holdout: 'nan' is not a finite"),
        (["conformal", "run", "--holdout", "1"], "argument --holdout: must be less than 1, got"),
        (["compare", "--paired", "a", "b", "--power", "inf"], "argument --power: 'inf' is not a"),
        (["review", "serve", "run", "--port", "70001"], "argument --port: must be at most 65535"),
        (["evaluate", "c.yaml", "--deadline", "-1"], "argument --deadline: must be more than 0"),
    ],
)
def test_a_command_line_number_out_of_its_bounds_is_one_line(capsys, argv, says):
    """Refused by the option's own type (its bounds declared once, for the API too), before
    anything is read: ``--holdout nan`` was a traceback, ``--port 70001`` accepted."""
    line = one_line_error(capsys, *argv)
    assert (
        says in line and f"(see assay {' '.join(argv[: 1 if argv[0] != 'review' else 2])}" in line
    )


def test_the_api_refuses_the_same_bounds(tmp_path):
    import assay
    from assay.errors import ConfigError

    with pytest.raises(ConfigError, match="conformal: option 'holdout' must be less than 1"):
        assay.conformal(tmp_path, holdout=1.5)
    with pytest.raises(ConfigError, match="agreement: option 'n_resamples' must be at most 10000"):
        assay.agreement(tmp_path, tmp_path, n_resamples=10**12)


# -- certify: its policy and its outputs, before anything is recorded ---------------------------
@pytest.fixture
def finished_run(cfg, capsys) -> Path:
    assert main(["evaluate", str(cfg / "config.yaml"), "--quiet"]) == 0
    capsys.readouterr()
    return next(Path("runs").iterdir())


def certificates() -> list[Path]:
    return list(Path("runs", "certificates").glob("*/certificate.json"))


def test_a_policy_bar_a_metric_cannot_reach_is_refused(finished_run, tmp_path, capsys):
    """``tpr: 7`` was accepted: a certificate refused by a bar no judge can meet, its items
    consumed."""
    policy = tmp_path / "policy.yaml"
    policy.write_text('bars: {tpr: 7}\npositive: "True"\n')
    line = one_line_error(capsys, "certify", str(finished_run), "--policy", str(policy))
    assert line == f"assay: error: {policy}: bar of tpr (a rate) must be from 0 to 1, got 7"
    assert not certificates()


def test_certify_checks_its_out_file_before_it_consumes_the_items(finished_run, tmp_path, capsys):
    """``--out /`` was a traceback (``/`` has no name to stage the copy beside); like any
    ``--out`` that cannot be written, it now stops certify before an item is consumed."""
    policy = tmp_path / "policy.yaml"
    policy.write_text('bars: {tpr: 0.5}\npositive: "True"\n')
    (tmp_path / "notes").write_text("a file, not a folder\n")
    under_a_file = tmp_path / "notes" / "certificate.json"
    for out, says in [
        ("/", "/: cannot write the certificate there (Is a directory); nothing was issued"),
        (str(under_a_file), f"{under_a_file}: cannot write the certificate there ("),
    ]:
        argv = ["certify", str(finished_run), "--policy", str(policy), "--out", out]
        line = one_line_error(capsys, *argv)
        assert line.startswith(f"assay: error: {says}"), line
        assert not certificates()
    argv = ["certify", str(finished_run), "--policy", str(policy), "--out", "copy.json"]
    assert main(argv) in (0, 1)  # admitted or refused: issued, on items not consumed before
    assert Path("copy.json").is_file() and len(certificates()) == 1
