"""A runner added from outside the package, in one file (this one): its config model, options,
run function (a run directory through ``Run.open``), typed summary, report and console printer,
registered with ``@runner``. It is then a command (``assay.cli.main``), an API function
(``assay.<name>``), an ``assay schema`` kind, and its run gets its report.html through the
registry: the kind written in ``run.json``, never guessed from the files."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

import assay
from assay.cli import main
from assay.inputs import RunConfig
from assay.report import Report, Table
from assay.runners import Runner, RunOptions, argument, option, run_kind, runner, write_report
from assay.runs import Run

# -- the plug-in: what a user writes in one file ------------------------------------------------


class WordsConfig(RunConfig):
    """A run that counts the words of a list (no LM call)."""

    words: list[str]


class WordsSummary(BaseModel):
    words: int
    longest: str


class WordsResult(BaseModel):
    run_dir: Path
    summary: WordsSummary


@runner("wordcount")
class WordCount(Runner):
    """count the words of a config's list"""

    class Options(RunOptions):
        config: Any = argument(help="YAML wordcount config")
        upper: bool = option(False, help="print the longest word in capitals", action="store_true")

    config = WordsConfig
    summary = WordsSummary

    def run(self, options: Options, *, workdir: Path, progress: bool) -> WordsResult:
        config, _ = options.load(WordsConfig)
        with Run.open(
            config, "w" + str(len(config.words)), command="wordcount", workdir=workdir
        ) as run:
            summary = WordsSummary(words=len(config.words), longest=max(config.words, key=len))
            run.store.write_json("metrics.json", summary.model_dump(mode="json"))
            write_report(run.dir)
            run.finish()
            return WordsResult(run_dir=run.dir, summary=summary)

    def report(self, run_dir: Path, **options: Any) -> Report:
        summary = WordsSummary.model_validate_json((run_dir / "metrics.json").read_text())
        return Report(
            kind="wordcount",
            title="Word count",
            facts=[("words", str(summary.words))],
            tables=[
                Table("Longest word", ["word", "length"], [[summary.longest, len(summary.longest)]])
            ],
        )

    def print(self, result: WordsResult, options: Options, *, json: bool) -> int:
        if json:
            print(result.summary.model_dump_json())
            return 0
        longest = result.summary.longest
        print(
            f"{result.summary.words} words; longest {longest.upper() if options.upper else longest}"
        )
        return 0 if longest else 3  # the printer's exit code is the command's


# -- the tests --------------------------------------------------------------------------------


@pytest.fixture
def config(tmp_path: Path) -> Path:
    path = tmp_path / "words.yaml"
    path.write_text("name: words\nwords: [judge, reliability, probe]\ntracking: {enabled: false}\n")
    return path


def test_a_runner_added_from_outside_runs_from_the_command_line(
    config, tmp_path, monkeypatch, capsys
):
    monkeypatch.chdir(tmp_path)
    assert main(["wordcount", str(config), "--upper"]) == 0
    assert capsys.readouterr().out == "3 words; longest RELIABILITY\n"
    (run_dir,) = (tmp_path / "runs").iterdir()
    assert json.loads((run_dir / "run.json").read_text())["kind"] == "wordcount"
    html = (run_dir / "report.html").read_text()
    assert "Longest word" in html and "reliability" in html and "Word count" in html

    assert main(["wordcount", str(config), "--json"]) == 0  # re-opened: the same run directory
    assert json.loads(capsys.readouterr().out) == {"words": 3, "longest": "reliability"}
    assert [p.name for p in (tmp_path / "runs").iterdir()] == [run_dir.name]


def test_with_json_stdout_holds_the_result_alone(config, tmp_path, monkeypatch, capsys):
    """What else prints to stdout while the run works (a library, a thread of its own, as Ray's
    driver prints a raylet's messages) goes to stderr: ``assay ... --json | jq`` reads one object."""
    counted = WordCount.run

    def chatty(self, options, *, workdir, progress):
        print("a library's chatter")
        talker = threading.Thread(target=print, args=("a thread's chatter",))
        talker.start()
        talker.join()
        return counted(self, options, workdir=workdir, progress=progress)

    monkeypatch.setattr(WordCount, "run", chatty)
    monkeypatch.chdir(tmp_path)
    assert main(["wordcount", str(config), "--json"]) == 0
    out, err = capsys.readouterr()
    assert json.loads(out) == {"words": 3, "longest": "reliability"}
    assert "a library's chatter" in err and "a thread's chatter" in err
    assert main(["wordcount", str(config)]) == 0  # without --json the console is left alone
    assert "a library's chatter" in capsys.readouterr().out


def test_its_exit_code_and_errors_are_the_command_lines(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    empty = tmp_path / "empty.yaml"
    empty.write_text("name: empty\nwords: ['']\ntracking: {enabled: false}\n")
    assert main(["wordcount", str(empty)]) == 3  # the printer's exit code
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: bad\nwords: 3\n")
    assert main(["wordcount", str(bad)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("assay: error:") and "words" in err and len(err.strip().splitlines()) == 1
    assert main(["wordcount", str(bad), "--colour"]) == 2  # an option it does not declare
    err = capsys.readouterr().err
    assert "unrecognized arguments: --colour" in err and len(err.strip().splitlines()) == 1


def test_the_same_runner_is_a_python_function(config, tmp_path):
    res = assay.wordcount(config, workdir=tmp_path, upper=True)
    assert res.summary == WordsSummary(words=3, longest="reliability")
    assert run_kind(res.run_dir) == "wordcount"
    assert WordCount.read_summary(res.run_dir) == res.summary  # metrics.json, typed again
    res = assay.api.wordcount(WordsConfig(name="objects", words=["a", "bb"]), workdir=tmp_path)
    assert res.summary.longest == "bb" and res.run_dir.parent == tmp_path / "runs"
    with pytest.raises(TypeError):
        assay.wordcount(config, workdir=tmp_path, colour=True)


def test_its_config_schema_is_printed(capsys):
    assert main(["schema", "wordcount"]) == 0
    schema = json.loads(capsys.readouterr().out)
    assert schema["title"] == "WordsConfig" and "words" in schema["properties"]


def test_the_report_follows_the_kind_in_run_json_not_the_files(tmp_path):
    """A run directory whose files look like an evaluate run's (metrics.json and
    judgments.jsonl) but whose run.json names this runner gets this runner's report."""
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    (run_dir / "run.json").write_text(json.dumps({"run_hash": "x", "kind": "wordcount"}))
    (run_dir / "metrics.json").write_text(json.dumps({"words": 2, "longest": "probe"}))
    (run_dir / "judgments.jsonl").write_text("")
    html = write_report(run_dir).read_text()
    assert "Word count" in html and "probe" in html


def test_every_built_in_runner_is_a_command_and_a_function():
    """The built-ins go through the same registry: each is a subcommand of the parser and an
    ``assay.<name>`` function whose positional arguments are the command line's."""
    import inspect

    from assay.cli import build_parser
    from assay.runners import get_runner, known_runners

    assert set(assay._API) <= set(known_runners())
    parser = build_parser()
    for name in assay._API:
        words = get_runner(name).words()
        with pytest.raises(SystemExit) as exit:
            parser.parse_args([*words, "--help"])
        assert exit.value.code == 0
        assert callable(getattr(assay.api, name))  # (assay.emulation is also a subpackage's name)
    assert list(inspect.signature(assay.estimate).parameters)[:2] == ["run", "validation"]
    assert list(inspect.signature(assay.agreement).parameters)[:2] == ["reference", "candidate"]


def test_a_run_written_before_runs_named_their_kind(tmp_path):
    """A run directory of an earlier version (no ``kind`` in run.json) gets the report its
    files point to; its summary re-reads through the runner's model; re-opened,
    the run names its kind."""
    import shutil

    from assay.runners import get_runner

    fixture = Path(__file__).resolve().parents[1] / "fixtures" / "evaluate"
    shutil.copytree(fixture, tmp_path / "cfg")
    res = assay.evaluate(tmp_path / "cfg" / "config.yaml", workdir=tmp_path, progress=False)
    state = json.loads((res.run_dir / "run.json").read_text())
    assert state.pop("kind") == "evaluate"
    (res.run_dir / "run.json").write_text(json.dumps(state))
    (res.run_dir / "report.html").unlink()
    assert run_kind(res.run_dir) == "evaluate"  # guessed from metrics.json + judgments.jsonl
    assert "Confusion matrix" in write_report(res.run_dir).read_text()
    assert get_runner("evaluate").read_summary(res.run_dir) == res.summary
    again = assay.evaluate(tmp_path / "cfg" / "config.yaml", workdir=tmp_path, progress=False)
    assert again.new_judgments == 0 and again.summary == res.summary
    assert json.loads((res.run_dir / "run.json").read_text())["kind"] == "evaluate"
