"""Plug-ins from outside the package: a scoring kind (scorer, typed metrics model, report section)
and the reliability test that uses it, in one file of the user's, run through ``assay harness``;
``assay schema harness`` documents every registered test's settings, plug-ins included."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest

from assay.cli import main
from assay.lm import ScriptedEngine, register_script

PLUGIN = '''
"""A user's plug-in: the ``echo_copy`` test and its ``echo_agreement`` scoring kind."""

from pydantic import Field

from assay.reliability import Probe, ReliabilityTest, TestSettings, reliability_test
from assay.reliability.scoring import (
    ScoringKind,
    ScoringMetrics,
    cell,
    scoring_kind,
)
from assay.metrics import MetricValue
from assay.report import Table


class EchoMetrics(ScoringMetrics):
    same_as_source: MetricValue | None
    copies_seen: int


@scoring_kind("echo_agreement")
class EchoAgreement(ScoringKind):
    Metrics = EchoMetrics
    headlines = (("same_as_source", "echo"),)

    def score(self, scored, inp):
        rows, _ = inp.with_own(scored)
        same = inp.mean_of(rows, lambda r: r[1] == r[2])
        return EchoMetrics(
            pass_rate=inp.mean_of(rows, lambda r: r[1] == r[0].target),
            consistency=same,
            same_as_source=same,
            copies_seen=len(scored),
        )

    def section(self, rows):
        return Table(
            "Echo agreement (plug-in)",
            ["test", "judge", "same as source", "copies"],
            [[t, n, cell(m["same_as_source"]), m["copies_seen"]] for t, n, m in rows],
        )


class EchoSettings(TestSettings):
    copies: int = Field(default=2, ge=1, description="copies of each source")


@reliability_test("echo_copy")
class EchoCopy(ReliabilityTest):
    scoring = "echo_agreement"
    uses_llm = False
    Settings = EchoSettings

    def generate(self, unit, ctx):
        src = unit.sources[0]
        return [
            Probe.from_source(self.name, src, i, self.settings.model_dump(), meta={"copy": i})
            for i in range(self.settings.copies)
        ]
'''


def load_plugin(tmp_path: Path) -> None:
    """Import the user's file as Python would (its decorators register the plug-ins), once."""
    if "echo_plugin" in sys.modules:
        return
    path = tmp_path / "echo_plugin.py"
    path.write_text(PLUGIN)
    spec = importlib.util.spec_from_file_location("echo_plugin", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules["echo_plugin"] = module
    spec.loader.exec_module(module)


def test_a_scoring_kind_from_outside_the_package_scores_reports_and_prints(
    tmp_path, monkeypatch, capsys
):
    load_plugin(tmp_path)
    # a judge that says "correct" unless the response is "no": a copy gets the source's verdict
    register_script(
        "echo-judge",
        lambda: ScriptedEngine(
            respond=lambda call: {
                "verdict": "incorrect" if call.field("response") == "no" else "correct"
            }
        ),
    )
    (tmp_path / "items.csv").write_text("id,request,response,expected\na,Q?,yes,1\nb,Q?,no,1\n")
    (tmp_path / "h.yaml").write_text(
        "name: echo\n"
        "data: {path: items.csv}\n"
        "scale: {kind: binary, labels: [incorrect, correct]}\n"
        "judges: [{name: j, model: 'scripted:echo-judge'}]\n"
        "tests: {echo_copy: {copies: 3}}\n"
        "tracking: {enabled: false}\n"
    )
    monkeypatch.chdir(tmp_path)
    assert main(["harness", str(tmp_path / "h.yaml"), "--quiet"]) == 0
    out = capsys.readouterr().out

    run_dir = next(tmp_path.rglob("metrics.json")).parent
    m = json.loads((run_dir / "metrics.json").read_text())["judges"]["j"]["tests"]["echo_copy"]
    assert m["probes"] == 6 and m["copies_seen"] == 6
    assert m["same_as_source"]["value"] == 1.0  # every copy judged like its source
    assert m["pass_rate"]["value"] == 0.5  # "b" is labelled correct, judged incorrect
    report = (run_dir / "report.md").read_text()
    assert "Echo agreement (plug-in)" in report
    assert "| echo_copy | j | 1.00" in report
    assert "echo 1.00" in out  # the kind's headline on the console


def test_schema_harness_documents_every_test_s_settings(tmp_path, capsys):
    from assay.reliability import known_tests

    load_plugin(tmp_path)
    assert main(["schema", "harness"]) == 0
    tests = json.loads(capsys.readouterr().out)["properties"]["tests"]
    assert set(tests["properties"]) == set(known_tests())
    assert {"echo_copy", "prompt_injection", "stochastic_stability"} <= set(tests["properties"])
    assert tests["properties"]["echo_copy"]["properties"]["copies"]["description"] == (
        "copies of each source"
    )
    assert set(tests["properties"]["stochastic_stability"]["properties"]) == {"k", "temperature"}
    assert tests["additionalProperties"] is False


@pytest.mark.parametrize("name", ["invariance", "flip", "position", "cue", "stability"])
def test_every_built_in_scoring_kind_is_registered(name):
    from assay.reliability.scoring import get_scoring, known_scorings

    assert name in known_scorings() and get_scoring(name).name == name


def test_a_test_registered_nowhere_here_is_a_warning_naming_it_not_a_silent_gap(caplog):
    """A test its user registered by hand in the process that ran it (not through the run's
    ``plugins:``) is unknown to the helper that draws the report: its section was dropped with
    no word; now a warning names the test and says to list its plug-in — once per process."""
    from assay.reliability.scoring._kind import kind_of

    with caplog.at_level("WARNING"):
        assert kind_of("registered_by_hand_elsewhere") is None
        assert kind_of("registered_by_hand_elsewhere") is None
    said = [
        r.getMessage() for r in caplog.records if "registered_by_hand_elsewhere" in r.getMessage()
    ]
    assert len(said) == 1
    assert "test 'registered_by_hand_elsewhere'" in said[0] and "plugins:" in said[0]
    assert kind_of("format_indent") == "invariance"


# -- a plug-in test whose code goes wrong --------------------------------------------------------

FAILING_TESTS = '''
"""``raising_copies``: a copy of each source, but its ``generate`` raises on one source and
returns what is no list on another; ``raising_units``, ``raising_check``: their ``units``, their
``check`` raise; ``off_target_copies``: a copy whose target is off a binary scale on one
source; ``bool_target_copies``: a copy whose target is ``True`` on one source."""

from assay.reliability import Probe, ReliabilityTest, reliability_test


@reliability_test("raising_copies")
class RaisingCopies(ReliabilityTest):
    scoring = "invariance"
    uses_llm = False

    def generate(self, unit, ctx):
        src = unit.sources[0]
        if src.id == "a":
            raise RuntimeError("a bug in generate")
        if src.id == "b":
            return None
        return [Probe.from_source(self.name, src, 0, {})]


@reliability_test("raising_units")
class RaisingUnits(ReliabilityTest):
    scoring = "invariance"
    uses_llm = False

    def units(self, items):
        raise RuntimeError("a bug in units")

    def generate(self, unit, ctx):
        return []


@reliability_test("raising_check")
class RaisingCheck(ReliabilityTest):
    scoring = "invariance"
    uses_llm = False

    def check(self, items, scale):
        raise KeyError("expected")

    def generate(self, unit, ctx):
        return []


@reliability_test("off_target_copies")
class OffTargetCopies(ReliabilityTest):
    scoring = "invariance"
    uses_llm = False

    def generate(self, unit, ctx):
        src = unit.sources[0]
        target = 7 if src.id == "a" else src.expected
        return [Probe.from_source(self.name, src, 0, {}, target=target)]


@reliability_test("bool_target_copies")
class BoolTargetCopies(ReliabilityTest):
    scoring = "invariance"
    uses_llm = False

    def generate(self, unit, ctx):
        src = unit.sources[0]
        target = True if src.id == "a" else src.expected
        return [Probe.from_source(self.name, src, 0, {}, target=target)]
'''


@pytest.fixture(scope="module")
def failing_tests(tmp_path_factory) -> Path:
    """The failing plug-in tests' file, one for the module's tests (a process registers a
    test's name once, from one file)."""
    path = tmp_path_factory.mktemp("plugins") / "failing_tests.py"
    path.write_text(FAILING_TESTS)
    return path


def failing_harness(tmp_path: Path, plugin: Path, tests: str) -> Path:
    """A harness over three items (a, b, c) with the failing plug-in tests' file."""
    register_script(
        "copy-judge", lambda: ScriptedEngine(respond=lambda call: {"verdict": "correct"})
    )
    (tmp_path / "items.csv").write_text(
        "id,request,response,expected\na,Q?,yes,1\nb,Q?,maybe,1\nc,Q?,no,0\n"
    )
    path = tmp_path / "h.yaml"
    path.write_text(
        "name: failing\n"
        f"plugins: [{plugin}]\n"
        "data: {path: items.csv, columns: {id: id}}\n"
        "scale: {kind: binary, labels: [incorrect, correct]}\n"
        "judges: [{name: j, model: 'scripted:copy-judge'}]\n"
        f"tests: {tests}\n"
        "tracking: {enabled: false}\n"
    )
    return path


def dropped_in(run_dir: Path) -> list[dict]:
    return [
        d
        for line in (run_dir / "units.jsonl").read_text().splitlines()
        for d in json.loads(line)["dropped"]
    ]


def test_a_plugin_test_that_raises_in_generate_drops_its_unit_with_the_reason(
    tmp_path, failing_tests, monkeypatch, capsys
):
    """A plug-in test whose ``generate`` raised (or returned None) ended the harness in a
    traceback; its unit is now dropped as ``plugin_error`` with the error naming the plug-in,
    as a generation the LM failed is dropped, and the run goes on with the other units."""
    config = failing_harness(tmp_path, failing_tests, "{raising_copies: {}}")
    monkeypatch.chdir(tmp_path)
    assert main(["harness", str(config), "--quiet"]) == 0
    out = capsys.readouterr().out

    (run_dir,) = (tmp_path / "runs").glob("failing-*")
    m = json.loads((run_dir / "metrics.json").read_text())
    assert m["probes"] == {"raising_copies": 1}  # c's copy, judged
    assert m["dropped"] == {"raising_copies": {"plugin_error": 2}}
    assert "dropped (never judged): raising_copies: plugin_error 2" in out
    where = f"plugin {failing_tests}: test 'raising_copies'"
    details = {d["source_id"]: d["detail"] for d in dropped_in(run_dir)}
    assert details["a"] == f"{where} generate raised RuntimeError: a bug in generate"
    assert details["b"].startswith(f"{where} generate gave None")


@pytest.mark.parametrize(
    ("test", "error"),
    [("raising_units", "units raised RuntimeError: a bug in units"),
     ("raising_check", "check raised KeyError: 'expected'")],
)  # fmt: skip
def test_a_plugin_test_whose_units_or_check_raises_is_one_line_naming_it(
    tmp_path, failing_tests, monkeypatch, capsys, test, error
):
    """A plug-in test whose ``units`` or ``check`` raised ended the harness in a traceback; it is
    now one line, ``assay: error: plugin <its file>: test '<name>' <method> raised <the
    exception>``, exit 2 as any config error, as a plug-in judge kind's failure is one line."""
    config = failing_harness(tmp_path, failing_tests, f"{{{test}: {{}}}}")
    monkeypatch.chdir(tmp_path)
    capsys.readouterr()
    assert main(["harness", str(config), "--quiet"]) == 2
    err = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert err == [f"assay: error: plugin {failing_tests}: test '{test}' {error}"]


def test_a_plugin_probe_whose_target_is_off_the_scale_is_dropped_and_said(
    tmp_path, failing_tests, monkeypatch, capsys
):
    """A plug-in test's probe with the target 7 on a binary scale was judged and scored as
    failed ("pass 0.00", nothing said): no verdict can equal it. It is dropped as
    ``off_scale_target`` with its target named, said in the summary, and the test's other
    probes are scored."""
    config = failing_harness(tmp_path, failing_tests, "{off_target_copies: {}}")
    monkeypatch.chdir(tmp_path)
    assert main(["harness", str(config), "--quiet"]) == 0
    out = capsys.readouterr().out

    (run_dir,) = (tmp_path / "runs").glob("failing-*")
    m = json.loads((run_dir / "metrics.json").read_text())
    assert m["dropped"] == {"off_target_copies": {"off_scale_target": 1}}
    assert "dropped (never judged): off_target_copies: off_scale_target 1" in out
    (dropped,) = dropped_in(run_dir)
    assert dropped["source_id"] == "a" and dropped["detail"] == (
        f"plugin {failing_tests}: test 'off_target_copies' gave the target 7, "
        "not on the binary 0/1 (incorrect/correct) scale"
    )
    tests = m["judges"]["j"]["tests"]["off_target_copies"]
    assert tests["probes"] == 2 and tests["pass_rate"]["value"] == 0.5  # b passes, c does not
    probes = [json.loads(line) for line in (run_dir / "probes.jsonl").read_text().splitlines()]
    assert sorted(p["target"] for p in probes) == [0, 1]


def test_a_plugin_probe_whose_target_is_a_bool_is_dropped_not_scored(
    tmp_path, failing_tests, monkeypatch, capsys
):
    """A plug-in test's probe with the target ``True`` was made the score 1 by the Probe model,
    then judged and scored: a bool is no score. It is dropped as ``off_scale_target``, its
    target named as what it is, and the test's other probes are scored."""
    config = failing_harness(tmp_path, failing_tests, "{bool_target_copies: {}}")
    monkeypatch.chdir(tmp_path)
    assert main(["harness", str(config), "--quiet"]) == 0
    out = capsys.readouterr().out

    (run_dir,) = (tmp_path / "runs").glob("failing-*")
    m = json.loads((run_dir / "metrics.json").read_text())
    assert m["dropped"] == {"bool_target_copies": {"off_scale_target": 1}}
    assert "dropped (never judged): bool_target_copies: off_scale_target 1" in out
    (dropped,) = dropped_in(run_dir)
    assert dropped["source_id"] == "a" and dropped["detail"] == (
        f"plugin {failing_tests}: test 'bool_target_copies' gave the target True (a bool, not "
        "a score), not on the binary 0/1 (incorrect/correct) scale"
    )
    assert m["judges"]["j"]["tests"]["bool_target_copies"]["probes"] == 2
    probes = [json.loads(line) for line in (run_dir / "probes.jsonl").read_text().splitlines()]
    assert sorted(p["source_id"] for p in probes) == ["b", "c"]


NAN_SCORING = '''
"""``nan_scores``: a scoring kind whose scorer gives nan, and ``nan_copies``, scored by it."""

from assay.metrics import MetricValue
from assay.reliability import Probe, ReliabilityTest, reliability_test
from assay.reliability.scoring import ScoringKind, ScoringMetrics, scoring_kind


class NanMetrics(ScoringMetrics):
    odd: MetricValue | None


@scoring_kind("nan_scores")
class NanScores(ScoringKind):
    Metrics = NanMetrics
    headlines = (("odd", "odd"),)

    def score(self, scored, inp):
        rows, _ = inp.with_own(scored)
        return NanMetrics(
            pass_rate=inp.mean_of(rows, lambda r: float("nan")),
            consistency=inp.mean_of(rows, lambda r: r[1] == r[2]),
            odd=inp.mean_of(rows, lambda r: float("nan") if r[0].source_id == "a" else 1.0),
        )


@reliability_test("nan_copies")
class NanCopies(ReliabilityTest):
    scoring = "nan_scores"
    uses_llm = False

    def generate(self, unit, ctx):
        return [Probe.from_source(self.name, unit.sources[0], 0, {})]
'''


def test_a_scorer_s_nan_is_said_as_what_it_is_and_no_cost_per_point_is_nan(
    tmp_path, monkeypatch, capsys
):
    """A plug-in scorer's nan was reported "undefined: no units" over 3 units, and report.md
    said "cost per accuracy point nan USD". The note now says the scoring kind gave nan, for
    how many probes, in metrics.json, on the console and in report.md; the cost per point is
    undefined, with why."""
    (tmp_path / "nan_scoring.py").write_text(NAN_SCORING)
    config = failing_harness(tmp_path, tmp_path / "nan_scoring.py", "{nan_copies: {}}")
    monkeypatch.chdir(tmp_path)
    assert main(["harness", str(config), "--quiet"]) == 0
    out = capsys.readouterr().out

    (run_dir,) = (tmp_path / "runs").glob("failing-*")
    j = json.loads((run_dir / "metrics.json").read_text())["judges"]["j"]
    m = j["tests"]["nan_copies"]
    said = "undefined: the scoring kind 'nan_scores' gave nan for"
    assert m["pass_rate"]["value"] is None and m["pass_rate"]["note"] == f"{said} 3 of the 3 probes"
    assert m["odd"]["value"] is None and m["odd"]["note"] == f"{said} 1 of the 3 probes"
    assert m["consistency"]["value"] == 1.0
    assert j["mean_pass_rate"] is None and j["cost_per_accuracy_point_usd"] is None
    report = (run_dir / "report.md").read_text()
    for text in (out, report):
        assert f"judge j, test nan_copies: pass_rate {said} 3 of the 3 probes" in text
        assert f"judge j, test nan_copies: odd {said} 1 of the 3 probes" in text
    assert "nan USD" not in report
    assert "cost per accuracy point undefined (no test has a defined pass rate)" in report
