"""Plug-ins from outside the package — a reliability test, a scoring kind, a judge kind, a
runner —, each one file in a folder of the user's, loaded as a user loads it (a config's
``plugins:``, ``--plugin``, an ``assay.plugins`` entry point) by a command run in a process of
its own with its helper interpreters, as by default. What the plug-in adds is in report.md,
report.html, metrics.json and the MLflow run; a finished run is read back by another process;
a plug-in is part of its run's identity; one that cannot be imported is one line naming it.

The judge is a scripted answer sheet (``scripted:sheet.json``): a verdict decided by the text
it is shown, which :func:`verdict` restates to compute the expected figures independently."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.plugin_files import first_sentence_kind
from tests.processes import REPO, assay_process

pytestmark = pytest.mark.slow

LABELS = ["incorrect", "correct"]
SHEET = {
    "rules": [
        {"match": "SKY IS BLUE", "output": {"verdict": "incorrect"}},
        {"match": "is red", "output": {"verdict": "incorrect"}},
    ],
    "default": {"verdict": "correct"},
}
ITEMS = [  # (request, response, reference)
    ("What colour is the sky?", "The sky is blue.", 1),
    ("What colour is grass?", "Grass is green.", 1),
    ("What colour is snow?", "Snow is red.", 0),
]


def verdict(shown: str) -> int:
    """What the answer sheet says of a response shown to the judge (1: correct)."""
    return 0 if "SKY IS BLUE" in shown or "is red" in shown else 1


def project(tmp_path: Path, items=ITEMS) -> Path:
    """A folder with the data and the answer sheet."""
    rows = ["request,response,expected", *(f"{q},{r},{e}" for q, r, e in items)]
    (tmp_path / "items.csv").write_text("\n".join(rows) + "\n")
    (tmp_path / "sheet.json").write_text(json.dumps(SHEET))
    return tmp_path


def harness_config(folder: Path, tests: str, *, judge: str = "", extra: str = "") -> Path:
    path = folder / "harness.yaml"
    path.write_text(
        "name: plugged\n"
        "data: {path: items.csv}\n"
        f"scale: {{kind: binary, labels: [{', '.join(LABELS)}]}}\n"
        f"judges: [{{name: j, model: 'scripted:sheet.json'{judge}}}]\n"
        f"tests: {tests}\n" + extra
    )
    return path


def run_assay(
    *args: str, cwd: Path, path: tuple[Path, ...] = (), env: dict[str, str] | None = None
) -> str:
    """``assay *args`` in a process of its own (helper interpreters as by default; ``env``:
    variables set): its standard output; the command must succeed."""
    proc = assay_process(*args, cwd=cwd, path=path, env=env)
    out, err = proc.communicate(timeout=600)
    assert proc.returncode == 0, err
    return out


def failing_assay(*args: str, cwd: Path, path: tuple[Path, ...] = ()) -> str:
    """The one line of standard error of an ``assay`` command that must fail with exit 2."""
    proc = assay_process(*args, cwd=cwd, path=path)
    out, err = proc.communicate(timeout=600)
    assert proc.returncode == 2, (out, err)
    assert err.startswith("assay: error: ") and err.count("\n") == 1, err
    return err


def the_run(folder: Path) -> Path:
    (run_dir,) = [p for p in (folder / "runs").iterdir() if (p / "run.json").is_file()]
    return run_dir


def mlflow_runs(folder: Path, run_dir: Path) -> tuple[object, list]:
    """The MLflow run a run directory logged, and its child runs (a harness run's judges)."""
    import mlflow

    client = mlflow.MlflowClient(tracking_uri=f"sqlite:///{folder / 'mlflow.db'}")
    run_id = json.loads((run_dir / "run.json").read_text())["mlflow_run_id"]
    parent = client.get_run(run_id)
    children = client.search_runs(
        [parent.info.experiment_id], filter_string=f"tags.mlflow.parentRunId = '{run_id}'"
    )
    return parent, children


def entry_point(site: Path, dist: str, name: str, module: str) -> Path:
    """An installed distribution in ``site`` (a folder for ``PYTHONPATH``) whose one entry
    point in the ``assay.plugins`` group names ``module``."""
    info = site / f"{dist}-0.1.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(f"[assay.plugins]\n{name} = {module}\n")
    return site


def rebuilt_report(run_dir: Path, cwd: Path, path: tuple[Path, ...] = ()) -> str:
    """report.html written again from the finished run by a fresh interpreter that was told
    nothing about plug-ins (the Python API, as a notebook calls it), with the signing key the
    run was sealed with: the seal is checked before the report is drawn again."""
    (run_dir / "report.html").unlink()
    code = "import sys, assay.api; assay.api.write_html_report(sys.argv[1])"
    key = {"ASSAY_SIGNING_KEY_FILE": os.environ["ASSAY_SIGNING_KEY_FILE"]}
    proc = subprocess.run(
        [sys.executable, "-c", code, str(run_dir)],
        cwd=cwd,
        env={
            "PYTHONPATH": os.pathsep.join(map(str, (REPO, *path))),
            "PATH": "/usr/bin:/bin",
            **key,
        },
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr
    return (run_dir / "report.html").read_text()


# -- a reliability test --------------------------------------------------------------------------

SHOUTING = '''
"""``shouting``: the response in capital letters; a reliable judge keeps its verdict."""

from assay.reliability import Probe, ReliabilityTest, reliability_test


@reliability_test("shouting")
class Shouting(ReliabilityTest):
    scoring = "invariance"  # pass: the reference label; consistency: the source's verdict
    uses_llm = False

    def generate(self, unit, ctx):
        source = unit.sources[0]
        return [Probe.from_source(self.name, source, 0, {}, response=source.response.upper())]
'''


def test_a_reliability_test_given_with_plugin_is_scored_reported_and_logged(tmp_path):
    folder = project(tmp_path)
    (folder / "mine").mkdir()
    (folder / "mine" / "shouting.py").write_text(SHOUTING)
    config = harness_config(folder, "{shouting: {}}")
    out = run_assay("harness", str(config), "--quiet", "--plugin", "mine/shouting.py", cwd=folder)

    run_dir = the_run(folder)
    recorded = yaml.safe_load((run_dir / "config.yaml").read_text())
    assert recorded["plugins"] == [str(folder / "mine" / "shouting.py")]
    own = [verdict(r) for _, r, _ in ITEMS]
    shouted = [verdict(r.upper()) for _, r, _ in ITEMS]
    consistency = sum(a == b for a, b in zip(own, shouted, strict=True)) / len(ITEMS)
    passed = sum(v == e for v, (_, _, e) in zip(shouted, ITEMS, strict=True)) / len(ITEMS)
    m = json.loads((run_dir / "metrics.json").read_text())["judges"]["j"]["tests"]["shouting"]
    assert m["probes"] == 3 and m["judged"] == 3
    assert m["consistency"]["value"] == pytest.approx(consistency)
    assert m["pass_rate"]["value"] == pytest.approx(passed)
    assert re.search(r"shouting\s+pass 0\.33", out)
    for report in ("report.md", "report.html"):
        assert "shouting" in (run_dir / report).read_text()

    parent, (child,) = mlflow_runs(folder, run_dir)
    assert parent.data.params["test.shouting"] == "{}"
    assert child.data.metrics["shouting.consistency"] == pytest.approx(consistency)
    assert child.data.metrics["shouting.pass_rate"] == pytest.approx(passed)


# -- a scoring kind -----------------------------------------------------------------------------

MOVED = '''
"""The ``moved`` scoring kind — how often the verdict left the judge's own verdict on the
source — and ``loud``, the test scored by it (the response in capitals)."""

from assay.reliability import Probe, ReliabilityTest, reliability_test
from assay.reliability.scoring import ScoringKind, ScoringMetrics, cell, scoring_kind
from assay.metrics import MetricValue
from assay.report import Table


class MovedMetrics(ScoringMetrics):
    moved: MetricValue | None
    probes_seen: int


@scoring_kind("moved")
class Moved(ScoringKind):
    Metrics = MovedMetrics
    headlines = (("moved", "moved"),)
    tracked = ("moved",)

    def score(self, scored, inp):
        rows, _ = inp.with_own(scored)  # (probe, verdict, the source's verdict)
        return MovedMetrics(
            pass_rate=inp.mean_of(rows, lambda r: r[1] == r[0].target),
            consistency=inp.mean_of(rows, lambda r: r[1] == r[2]),
            moved=inp.mean_of(rows, lambda r: r[1] != r[2]),
            probes_seen=len(scored),
        )

    def section(self, rows):
        return Table(
            "Verdicts moved (plug-in)",
            ["test", "judge", "moved", "probes"],
            [[test, judge, cell(m["moved"]), m["probes_seen"]] for test, judge, m in rows],
        )


@reliability_test("loud")
class Loud(ReliabilityTest):
    scoring = "moved"
    uses_llm = False

    def generate(self, unit, ctx):
        source = unit.sources[0]
        return [Probe.from_source(self.name, source, 0, {}, response=source.response.upper())]
'''


def test_a_scoring_kind_from_an_entry_point_has_its_section_metrics_and_mlflow(tmp_path):
    """An installed package's scoring kind (its module imports the harness's package, which
    the reports helper interpreter is importing when it first looks a name up): its section
    in both reports, drawn there, and again by a process that reads the finished run back."""
    folder = project(tmp_path)
    site = entry_point(tmp_path / "site", "moved-kind", "moved", "moved_kind")
    (site / "moved_kind.py").write_text(MOVED)
    config = harness_config(folder, "{loud: {}}")
    out = run_assay("harness", str(config), "--quiet", cwd=folder, path=(site,))

    run_dir = the_run(folder)
    moved = sum(verdict(r) != verdict(r.upper()) for _, r, _ in ITEMS) / len(ITEMS)
    m = json.loads((run_dir / "metrics.json").read_text())["judges"]["j"]["tests"]["loud"]
    assert m["moved"]["value"] == pytest.approx(moved) and m["probes_seen"] == 3
    assert f"moved {moved:.2f}" in out
    row = f"| loud | j | {moved:.2f}"
    assert "Verdicts moved (plug-in)" in (run_dir / "report.md").read_text()
    assert row in (run_dir / "report.md").read_text()
    html = (run_dir / "report.html").read_text()
    assert "Verdicts moved (plug-in)" in html and f"{moved:.2f}" in html

    _, (child,) = mlflow_runs(folder, run_dir)
    assert child.data.metrics["loud.moved"] == pytest.approx(moved)
    assert "Verdicts moved (plug-in)" in rebuilt_report(run_dir, folder, path=(site,))


def test_a_module_plugin_on_the_callers_sys_path_is_found_by_its_helper_interpreters(tmp_path):
    """A module plug-in found through a folder the caller put on ``sys.path`` (a notebook's,
    a script's): the helper interpreters, started with the environment's path, could not import
    it, and the run failed at its very end — after its LM calls — and again on every re-run."""
    folder = project(tmp_path)
    package = tmp_path / "pkgs" / "mypkg"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "moved.py").write_text(MOVED)
    config = harness_config(folder, "{loud: {}}", extra="tracking: {enabled: false}\n")
    script = (
        "import sys; sys.path.insert(0, sys.argv[1]); import assay; "
        "print(assay.harness(sys.argv[2], plugins=['mypkg.moved'], progress=False).run_dir)"
    )
    env = {k: v for k, v in os.environ.items() if k != "ASSAY_SIDECAR"}  # helpers on, as by default
    proc = subprocess.run(
        [sys.executable, "-c", script, str(tmp_path / "pkgs"), str(config)],
        cwd=folder,
        env={**env, "PYTHONPATH": str(REPO)},  # the package is on the caller's sys.path only
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr
    run_dir = Path(proc.stdout.strip().splitlines()[-1])
    assert json.loads((run_dir / "run.json").read_text())["status"] == "finished"
    assert "Verdicts moved (plug-in)" in (run_dir / "report.md").read_text()
    assert "Verdicts moved (plug-in)" in (run_dir / "report.html").read_text()


def test_editing_an_installed_plugin_test_makes_its_probes_again(tmp_path):
    """An entry point's test is in no run's identity (the same config, the same directory),
    so its units' keys carry its code: an edit of its ``generate`` reused the old code's
    probes ("probes reused from an earlier run (same inputs): 3 of 3")."""
    folder = project(tmp_path)
    site = entry_point(tmp_path / "site", "shouting-probes", "shouting", "shouting_installed")
    module = site / "shouting_installed.py"
    module.write_text(SHOUTING)
    config = harness_config(folder, "{shouting: {}}")

    def probes() -> list[str]:
        lines = (the_run(folder) / "probes.jsonl").read_text().splitlines()
        return sorted(json.loads(line)["response"] for line in lines)

    run_assay("harness", str(config), cwd=folder, path=(site,))
    assert probes() == sorted(r.upper() for _, r, _ in ITEMS)
    again = run_assay("harness", str(config), cwd=folder, path=(site,))
    assert "probes reused from an earlier run (same inputs): 3 of 3" in again

    module.write_text(SHOUTING.replace(".upper()", ".swapcase()"))
    edited = run_assay("harness", str(config), cwd=folder, path=(site,))
    assert "probes reused" not in edited
    assert probes() == sorted(r.swapcase() for _, r, _ in ITEMS)  # the same run directory


# -- a judge kind -------------------------------------------------------------------------------

TWO_SENTENCES = [
    ("What colour is the sky?", "The sky is blue. Snow is red.", 1),
    ("What colour is snow?", "Snow is red. The sky is blue.", 0),
]


def test_a_judge_kind_named_in_the_config_gets_the_scale_and_runs_again(tmp_path):
    """The harness gives a plug-in kind's judges the harness scale, as it does a built-in
    kind's; its run ends (the reports helper validates the config), and a re-run re-reads
    it."""
    folder = project(tmp_path, TWO_SENTENCES)
    (folder / "kinds").mkdir()
    (folder / "kinds" / "first_sentence.py").write_text(first_sentence_kind("first_sentence"))
    config = harness_config(
        folder,
        "{format_vertical: {}}",
        judge=", task: first_sentence",
        extra="plugins: [kinds/first_sentence.py]\n",
    )
    run_assay("harness", str(config), "--quiet", cwd=folder)

    run_dir = the_run(folder)
    (judgments,) = (run_dir / "judgments").glob("*.jsonl")
    scores = [json.loads(line)["score"] for line in judgments.read_text().splitlines()]
    first = [verdict(r.split(". ")[0] + ".") for _, r, _ in TWO_SENTENCES]
    assert first == [1, 0] and [verdict(r) for _, r, _ in TWO_SENTENCES] == [0, 0]
    assert sorted(set(scores)) == [0, 1]  # what the first sentences say, not the responses
    m = json.loads((run_dir / "metrics.json").read_text())["judges"]["j"]["tests"]
    assert m["format_vertical"]["consistency"]["value"] == 1.0  # blank lines between them
    assert "format_vertical" in (run_dir / "report.md").read_text()
    assert "format_vertical" in (run_dir / "report.html").read_text()
    _, (child,) = mlflow_runs(folder, run_dir)
    assert child.data.params["judge.task"] == "first_sentence"
    assert child.data.params["judge.scale.labels"] == str(LABELS)

    out = run_assay("harness", str(config), "--json", cwd=folder)
    assert json.loads(out)["mlflow_run_id"] == child.data.tags["mlflow.parentRunId"]
    assert the_run(folder) == run_dir


MISBEHAVING_KIND = '''
"""``task: misbehaving``: a judge kind whose own code goes wrong on some items — a verdict off
the scale, or not a number; an exception in ``inputs`` or ``forward`` —, and asks the judge's
model on the rest. ``BROKEN`` (an environment variable, part of no identity) says whether it
still raises: a fixed installation, retried in the same run."""

import os

import dspy

from assay.programs import JudgeKind, judge_kind
from assay.signatures import JudgeResponse

OWN = {"seven": 7, "half": 0.5, "nan": float("nan"), "purple": 1}


@judge_kind("misbehaving")
class Misbehaving(JudgeKind):
    signature = JudgeResponse
    judged_field = "response"
    scaled = True

    @classmethod
    def inputs(cls, config, item):
        if "inputs-bug" in item.response and os.environ.get("BROKEN") == "1":
            raise KeyError("a bug in inputs")
        return {"rubric": config.rubric or "", "request": item.request, "response": item.response}

    @classmethod
    def forward(cls, judge, inputs):
        word = inputs["response"].split()[0]
        if word == "forward-bug:" and os.environ.get("BROKEN") == "1":
            raise RuntimeError("a bug in forward")
        if word in OWN:
            label = "purple" if word == "purple" else "correct"
            return dspy.Prediction(score=OWN[word], label=label, reasoning=None)
        return None  # one call of the judge's model
'''

MISBEHAVING_ITEMS = {  # id: response (every reference: correct)
    "seven": "seven is the answer",
    "half": "half is the answer",
    "nan": "nan is the answer",
    "purple": "purple is the answer",
    "inputs": "inputs-bug: the sky is blue",
    "forward": "forward-bug: grass is green",
    "model": "The sky is blue.",
}


def test_a_judge_kind_s_own_verdict_is_checked_and_its_errors_are_unscored_judgments(tmp_path):
    """A plug-in kind's own prediction was written as it came: 7 on a binary scale a scored,
    signed judgment (label "purple") and the run a traceback in its metrics, on every resume;
    0.5 or nan a pydantic traceback; an exception in its ``inputs`` or ``forward`` a traceback.
    Now a verdict off the scale (or a label naming another score) is an unscored ``off_scale``
    judgment, as an LM's answer off the scale is, and the kind's exception an unscored
    ``plugin_error`` naming the plug-in — counted, said, and judged again by
    ``--retry-unscored`` once it no longer raises."""
    folder = project(tmp_path)
    rows = [f"{i},Q?,{r},correct" for i, r in MISBEHAVING_ITEMS.items()]
    (folder / "items.csv").write_text("\n".join(["id,request,response,expected", *rows]) + "\n")
    plugin = folder / "misbehaving.py"
    plugin.write_text(MISBEHAVING_KIND)
    (folder / "m.yaml").write_text(
        "name: misbehaving\nplugins: [misbehaving.py]\n"
        "data: {path: items.csv, columns: {id: id}}\n"
        "judge: {name: j, task: misbehaving, model: 'scripted:sheet.json', "
        f"scale: {{kind: binary, labels: [{', '.join(LABELS)}]}}}}\n"
        "tracking: {enabled: false}\n"
    )
    out = run_assay("evaluate", "m.yaml", env={"BROKEN": "1"}, cwd=folder)

    run_dir = the_run(folder)
    by = latest_judgments(run_dir)
    for word in ("seven", "half", "nan", "purple"):
        assert by[word]["score"] is None and by[word]["unscored"] == "off_scale", by[word]
        assert f"judge kind 'misbehaving' (plugin {plugin})" in by[word]["error"]
    assert "gave the score 7: 7 is not on the binary 0/1" in by["seven"]["error"]
    assert (
        "score 1 with the label 'purple', which is not a name of that score"
        in by["purple"]["error"]
    )
    for word in ("inputs", "forward"):
        assert by[word]["score"] is None and by[word]["unscored"] == "plugin_error"
        assert by[word]["error"].startswith(
            f"PluginFailed: plugin {plugin}: judge kind 'misbehaving' {word} raised "
        )
    assert by["model"]["score"] == 1 and by["model"]["unscored"] is None  # the model's verdict
    assert "unscored 6 {'off_scale': 4, 'plugin_error': 2}" in out
    assert f"note: 2 items are unscored by errors of plugin {plugin}" in out

    again = run_assay("evaluate", "m.yaml", "--retry-unscored", env={"BROKEN": "0"}, cwd=folder)
    assert the_run(folder) == run_dir
    assert "(2 unscored items judged again)" in again
    assert "unscored 4 {'off_scale': 4}" in again
    by = latest_judgments(run_dir)
    assert by["inputs"]["score"] == 1 and by["inputs"]["attempt"] == 2
    assert by["forward"]["score"] == 1 and by["forward"]["attempt"] == 2


def latest_judgments(run_dir: Path) -> dict[str, dict]:
    """Each item's latest judgment in the run's judgments.jsonl, by item id."""
    lines = (run_dir / "judgments.jsonl").read_text().splitlines()
    return {j["item_id"]: j for j in map(json.loads, lines)}


PROMPTED_KIND = '''
"""``task: prompted``: the rubric is the text of ``prompt.txt``, a file of the package."""

from pathlib import Path

from assay.programs import JudgeKind, judge_kind
from assay.signatures import JudgeResponse


@judge_kind("prompted")
class Prompted(JudgeKind):
    signature = JudgeResponse
    judged_field = "response"
    scaled = True

    @classmethod
    def inputs(cls, config, item):
        rubric = (Path(__file__).parent / "prompt.txt").read_text()
        return {"rubric": rubric, "request": item.request, "response": item.response}
'''


def test_a_module_plugin_counts_by_every_file_of_its_package_but_python_s_bytecode(tmp_path):
    """A judge kind reading its prompt from a file of its package: the prompt edited, the
    finished run was read back with the old verdicts (no LM call) — only the package's ``.py``
    files counted. Every file counts now; the bytecode Python writes beside them does not."""
    folder = project(tmp_path)
    (folder / "sheet.json").write_text(
        json.dumps(
            {
                "rules": [{"match": "STRICT", "output": {"verdict": "incorrect"}}],
                "default": {"verdict": "correct"},
            }
        )
    )
    package = tmp_path / "site" / "prompted_kind"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text(PROMPTED_KIND)
    (package / "prompt.txt").write_text("Lenient: any colour will do.\n")
    (folder / "p.yaml").write_text(
        "name: prompted\nplugins: [prompted_kind]\ndata: {path: items.csv}\n"
        "judge: {name: j, task: prompted, model: 'scripted:sheet.json', "
        f"scale: {{kind: binary, labels: [{', '.join(LABELS)}]}}}}\n"
        "tracking: {enabled: false}\n"
    )
    site = (tmp_path / "site",)

    def scores(run_dir: Path) -> list[int]:
        return sorted(j["score"] for j in latest_judgments(run_dir).values())

    run_assay("evaluate", "p.yaml", "--quiet", cwd=folder, path=site)
    first = the_run(folder)
    assert scores(first) == [1, 1, 1]
    (package / "__pycache__").mkdir(exist_ok=True)
    (package / "__pycache__" / "stray.cpython-311.pyc").write_bytes(b"bytecode")
    (package / "old.pyc").write_bytes(b"bytecode")
    again = run_assay("evaluate", "p.yaml", cwd=folder, path=site)
    assert "re-read (finished before; no LM call)" in again and the_run(folder) == first

    (package / "prompt.txt").write_text("STRICT: only the exact colour.\n")
    run_assay("evaluate", "p.yaml", "--quiet", cwd=folder, path=site)
    (edited,) = [
        p for p in (folder / "runs").iterdir() if (p / "run.json").is_file() and p != first
    ]
    assert scores(edited) == [0, 0, 0]  # judged again, on the edited prompt


# -- a runner -----------------------------------------------------------------------------------

WORDCOUNT = '''
"""``assay wordcount CONFIG``: count the words of a config's list (no LM call)."""

from typing import Any

from pydantic import BaseModel

from assay.inputs import RunConfig
from assay.runners import Runner, RunOptions, argument, runner, write_report
from assay.runs import Run, TrackedRun
from assay.report import Report, Table, report_markdown


class WordsConfig(RunConfig):
    words: list[str]


class WordsSummary(BaseModel):
    words: int
    longest: str


@runner("wordcount")
class WordCount(Runner):
    """count the words of a config's list"""

    class Options(RunOptions):
        config: Any = argument(help="YAML wordcount config")

    config = WordsConfig
    summary = WordsSummary

    def run(self, options, *, workdir, progress):
        config, _ = options.load(WordsConfig)
        key = f"w{len(config.words)}"
        with Run.open(config, key, command="wordcount", workdir=workdir, reports_aside=True) as run:
            summary = WordsSummary(words=len(config.words), longest=max(config.words, key=len))
            run.store.write_json("metrics.json", summary.model_dump(mode="json"))
            run.store.write_text("report.md", report_markdown(self.report(run.dir)))
            run.at_end(f"{__name__}:write_page", run_dir=str(run.dir))  # the reports lane's
            tracked = TrackedRun(
                name=config.name,
                params={"longest": summary.longest},
                metrics={"words": float(summary.words)},
            )
            run.finish(tracked)
            return summary

    def report(self, run_dir, **options):
        summary = self.read_summary(run_dir)
        return Report(
            kind="wordcount",
            title="Word count",
            facts=[("words", str(summary.words))],
            tables=[Table("Longest word", ["word"], [[summary.longest]])],
        )

    def print(self, result, options, *, json):
        print(result.model_dump_json() if json else f"{result.words} words")
        return 0


def write_page(run_dir):
    write_report(run_dir)
'''


def test_a_runner_is_a_command_with_plugin_before_it_or_from_an_entry_point(tmp_path):
    (tmp_path / "wordcount.py").write_text(WORDCOUNT)
    (tmp_path / "words.yaml").write_text("name: words\nwords: [judge, reliability, probe]\n")
    out = run_assay("--plugin", "wordcount.py", "wordcount", "words.yaml", cwd=tmp_path)
    assert out == "3 words\n"

    run_dir = the_run(tmp_path)
    assert json.loads((run_dir / "metrics.json").read_text()) == {
        "words": 3,
        "longest": "reliability",
    }
    assert (run_dir / "report.md").read_text() == (
        "# Word count\n\n- words: 3\n\n\n## Longest word\n\n| word |\n|---|\n| reliability |\n"
    )
    assert "Longest word" in (run_dir / "report.html").read_text()
    run, _ = mlflow_runs(tmp_path, run_dir)
    assert run.data.params["longest"] == "reliability" and run.data.metrics["words"] == 3.0
    assert "Longest word" in rebuilt_report(run_dir, tmp_path)  # its config.yaml names it

    # the same file edited: another run; from an entry point (not recorded): another again
    (tmp_path / "wordcount.py").write_text(WORDCOUNT + "\n# counts words\n")
    run_assay("wordcount", "words.yaml", "--plugin", "wordcount.py", cwd=tmp_path)
    (tmp_path / "site").mkdir()
    (tmp_path / "wordcount.py").rename(tmp_path / "site" / "wordcount.py")
    site = entry_point(tmp_path / "site", "wordcount", "wordcount", "wordcount")
    out = run_assay("wordcount", "words.yaml", "--json", cwd=tmp_path, path=(site,))
    assert json.loads(out) == {"words": 3, "longest": "reliability"}
    assert len(list((tmp_path / "runs").iterdir())) == 3


# -- what cannot be imported --------------------------------------------------------------------


def test_a_plugin_that_cannot_be_imported_is_one_line_naming_it(tmp_path):
    folder = project(tmp_path)
    (folder / "broken.py").write_text("import no_such_module_here\n")
    config = harness_config(folder, "{shouting: {}}", extra="plugins: [broken.py]\n")
    err = failing_assay("harness", str(config), cwd=folder)
    assert str(config) in err and str(folder / "broken.py") in err
    assert "ModuleNotFoundError: No module named 'no_such_module_here'" in err

    err = failing_assay("--plugin", "missing.py", "harness", str(config), cwd=folder)
    assert f"plugin {folder / 'missing.py'}: no such file" in err
    err = failing_assay("harness", str(config), "--plugin", "no_such.plugin", cwd=folder)
    assert "plugin no_such.plugin cannot be imported: ModuleNotFoundError" in err

    # a finished run read back once its plug-in is gone: that plug-in named
    kind = folder / "kind.py"
    kind.write_text(first_sentence_kind("first_sentence"))
    (folder / "first.yaml").write_text(
        "name: first\nplugins: [kind.py]\ndata: {path: items.csv}\n"
        "judge: {name: j, task: first_sentence, model: 'scripted:sheet.json', "
        f"scale: {{kind: binary, labels: [{', '.join(LABELS)}]}}}}\n"
    )
    run_assay("evaluate", "first.yaml", "--quiet", cwd=folder)
    kind.unlink()
    (run_dir,) = (folder / "runs").glob("first-*")
    (folder / "policy.yaml").write_text("name: lax\nbars: {accuracy: 0.01}\n")
    err = failing_assay("certify", str(run_dir), "--policy", "policy.yaml", cwd=folder)
    assert err == f"assay: error: plugin {kind}: no such file\n"

    site = entry_point(tmp_path / "site", "broken-plugin", "broken", "broken_entry")
    (site / "broken_entry.py").write_text("raise RuntimeError('not configured')\n")
    err = failing_assay("schema", "harness", cwd=folder, path=(site,))
    assert "entry point broken = broken_entry of broken-plugin 0.1" in err
    assert "RuntimeError: not configured" in err


# -- a built-in's name ---------------------------------------------------------------------------

SHADOWS = {  # a plug-in file taking a built-in's name, for each registry
    "shadow_test.py": SHOUTING.replace('"shouting"', '"format_indent"'),
    "shadow_scoring.py": (
        "from assay.reliability.scoring import ScoringKind, ScoringMetrics, scoring_kind\n\n\n"
        '@scoring_kind("invariance")\nclass Mine(ScoringKind):\n    Metrics = ScoringMetrics\n'
    ),
    "shadow_kind.py": first_sentence_kind("response"),
    # a name its package holds in no file of that name: known from the runners' own list
    "shadow_runner.py": (
        "from assay.runners import Runner, runner\n\n\n"
        '@runner("toolemu_agreement")\nclass Mine(Runner):\n    """mine"""\n'
    ),
}


def test_a_plugin_taking_a_builtin_name_is_one_line_naming_it_for_every_command(tmp_path):
    """Built-ins are imported when first looked up, so a plug-in's ``format_indent`` silently
    replaced the built-in test on the command line (and a scoring kind's ``invariance`` was a
    ValueError naming no plug-in, ``assay schema`` a traceback)."""
    folder = project(tmp_path)
    for name, text in SHADOWS.items():
        (folder / name).write_text(text)
    config = harness_config(folder, "{format_indent: {}}")
    what = {
        "shadow_test.py": "reliability test 'format_indent'",
        "shadow_scoring.py": "scoring kind 'invariance'",
        "shadow_kind.py": "judge kind 'response'",
        "shadow_runner.py": "runner 'toolemu_agreement'",
    }
    for name, said in what.items():
        expected = (
            f"assay: error: plugin {folder / name}: {said} is the name of a built-in one; "
            "register it under another name\n"
        )
        assert failing_assay("--plugin", name, "harness", str(config), cwd=folder) == expected
        assert failing_assay("schema", "harness", "--plugin", name, cwd=folder) == expected
    (folder / "listed.yaml").write_text(
        config.read_text().replace("name: plugged", "name: listed\nplugins: [shadow_test.py]")
    )
    err = failing_assay("harness", "listed.yaml", cwd=folder)
    assert "plugin" in err and "reliability test 'format_indent' is the name of a built-in" in err
