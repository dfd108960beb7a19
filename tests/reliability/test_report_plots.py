"""The report's plots made side by side in forked copies of the sidecar while the report's text
is made here: the same files, and a copy that fails is made again here (which raises its
error)."""

from __future__ import annotations

import os
import threading

import pytest

from assay.reliability.report import _report


@pytest.fixture
def one_thread(monkeypatch):
    """As in the run's sidecar, where the jobs fork (pytest's process may have other threads;
    the jobs here take no lock)."""
    monkeypatch.setattr(threading, "active_count", lambda: 1)


def test_every_job_is_done_once_and_the_copies_are_other_processes(tmp_path, one_thread):
    parent = os.getpid()

    def job(name):
        return lambda: (tmp_path / name).write_text(str(os.getpid()))

    _report._side_by_side([job("a"), job("b"), job("c")], here=job("text"))
    pids = {n: int((tmp_path / n).read_text()) for n in ["a", "b", "c", "text"]}
    assert pids["text"] == parent  # ``here`` here, while the copies work
    assert parent not in (pids["a"], pids["b"], pids["c"])
    assert len({pids["a"], pids["b"], pids["c"]}) == 3


def test_a_copy_that_fails_is_done_again_here(tmp_path, one_thread):
    parent = os.getpid()

    def flaky():  # fails in a copy only
        if os.getpid() != parent:
            raise RuntimeError("copy")
        (tmp_path / "made").write_text("here")

    _report._side_by_side([flaky], here=lambda: None)
    assert (tmp_path / "made").read_text() == "here"

    def broken():
        raise ValueError("no data to plot")

    with pytest.raises(ValueError, match="no data to plot"):
        _report._side_by_side([broken], here=lambda: None)


def test_with_other_threads_the_jobs_run_here_in_order(tmp_path, monkeypatch):
    monkeypatch.setattr(threading, "active_count", lambda: 3)
    order: list[int] = []
    _report._side_by_side(
        [lambda: order.append(os.getpid()), lambda: order.append(1)], here=lambda: order.append(2)
    )
    assert order == [os.getpid(), 1, 2]


def test_a_run_with_no_usd_price_plots_its_judges_against_tokens(tmp_path):
    """Scripted (like local or unpriced) models cost 0 USD, which drew every judge at
    x = 0 on a −0.04…0.04 axis. The plot shows the cost of the work in tokens instead, and its
    axis says so."""
    from PIL import Image

    from tests.web.conftest import make_harness_run

    res = make_harness_run(tmp_path)
    judges = res.summary.judges.values()
    assert all(j.work.cost_usd == 0 for j in judges)  # no USD price: the case at hand
    label, cost = _report.cost_axis(res.summary)
    assert label.startswith("judge cost of the work in tokens") and "no USD price" in label
    assert cost == {
        n: j.work.prompt_tokens + j.work.completion_tokens for n, j in res.summary.judges.items()
    }
    assert len(set(cost.values())) > 1  # the judges are told apart
    png = Image.open(res.run_dir / "cost_accuracy.png")
    assert png.text["Description"] == label  # what the run drew on x


def test_the_cost_axis_is_usd_when_priced_and_calls_when_nothing_was_counted():
    from assay.reliability import HarnessSummary, JudgeReliability
    from assay.types import Usage

    def summary(**usages: Usage) -> HarnessSummary:
        judges = {
            n: JudgeReliability.model_construct(usage=u, work=u.work(), mean_pass_rate=0.5)
            for n, u in usages.items()
        }
        return HarnessSummary.model_construct(judges=judges)

    priced = summary(a=Usage(cost_usd=0.02, prompt_tokens=9, calls=2), b=Usage(cost_usd=0.01))
    assert _report.cost_axis(priced) == (
        "judge cost of the work (USD, all probes and sources; cached answers priced as first "
        "answered)",
        {"a": 0.02, "b": 0.01},
    )
    mixed = summary(
        a=Usage(cost_usd=0.02, prompt_tokens=9), b=Usage(prompt_tokens=4, unpriced_calls=1)
    )
    assert _report.cost_axis(mixed)[1] == {"a": 9, "b": 4}  # an unpriced judge is not free
    counted = summary(a=Usage(calls=3), b=Usage(calls=5))
    label, cost = _report.cost_axis(counted)
    assert label.startswith("judge cost of the work in LM answers") and cost == {"a": 3, "b": 5}
    # the same work, one judge's answers paid and the other's from the LM cache: the same cost
    cached = summary(
        a=Usage(cost_usd=0.02, prompt_tokens=9, completion_tokens=1, calls=2),
        b=Usage(
            cached_cost_usd=0.02, cached_prompt_tokens=9, cached_completion_tokens=1, cached_calls=2
        ),
    )
    assert _report.cost_axis(cached)[1] == {"a": 0.02, "b": 0.02}


def test_an_interval_of_no_width_is_marked_and_an_exact_one_daggered():
    """``†``: the exact interval standing for a bootstrap of one outcome; ``‡``: a bootstrap
    interval of no width that is none (every item's outcome 0.5, a pair right in one order of
    two); a plain bootstrap interval, and one with no interval, unmarked."""
    from assay.metrics import CLOPPER_PEARSON_CLUSTERS, MetricValue

    flat = MetricValue(0.5, 0.5, 0.5, 10, ci_method="percentile bootstrap")
    exact = MetricValue(1.0, 0.69, 1.0, 10, ci_method=CLOPPER_PEARSON_CLUSTERS)
    wide = MetricValue(0.5, 0.2, 0.8, 10, ci_method="cluster bootstrap")
    assert _report.ci(flat) == "0.50 [0.50, 0.50] ‡"
    assert _report.ci(exact) == "1.00 [0.69, 1.00] †"
    assert _report.ci(wide) == "0.50 [0.20, 0.80]" == _report.ci(wide.to_dict())
    assert _report.ci(MetricValue(0.5, None, None, 1)) == "0.50"


def test_a_kinds_own_headline_marks_an_interval_of_no_width():
    """The kinds' cells (position bias's ``first-position 0.50 [0.50, 0.50]``, stability's
    samples-needed, polarity's agreement) are marked as the pass rate's are: they were printed
    bare."""
    from assay.metrics import MetricValue
    from assay.reliability.scoring import get_scoring

    position = get_scoring("position")
    flat = MetricValue(0.5, 0.5, 0.5, 2, ci_method="cluster bootstrap").to_dict()
    lines = position.headline({k: flat for k, _ in position.headlines})
    assert lines and all(line.endswith("0.50 [0.50, 0.50] ‡") for line in lines)


def test_the_warm_up_loads_the_registries_the_reports_read(monkeypatch):
    """The reports helper's warm-up (while the LM calls are in flight) loads every judge kind
    and scoring kind — their modules and the installed plug-ins' entry points — which
    ``write_reports`` reads (the config's validation, the report's sections) and would
    otherwise load after the last answer."""
    from assay.programs.kinds import _base
    from assay.reliability.scoring import _kind

    for registry in (_base._KINDS, _kind._KINDS):
        monkeypatch.setattr(registry, "_loaded", False)
    _report.preload_plotting()
    assert _base._KINDS._loaded and _kind._KINDS._loaded
