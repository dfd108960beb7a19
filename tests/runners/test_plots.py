"""Every plot a runner writes keeps its title, axis labels, tick labels and the judges' names
inside the PNG: each text's extent, taken as the saved image is drawn, lies inside it.

The harness's heatmap, cost-vs-accuracy and samples-needed plots come from a real harness run
(scripted judges with long names, ``stochastic_stability`` among its tests); ``compare``'s
Pareto plot and ``evaluate``'s reliability diagram are drawn by their functions with the
labels those runners give them."""

from __future__ import annotations

import matplotlib
import pytest
from matplotlib.figure import Figure
from matplotlib.text import Text

from assay.comparison._plots import pareto_plot
from assay.metrics import plot_reliability_diagram
from assay.metrics._calibration import ReliabilityBin
from assay.reliability import HarnessConfig, run_harness
from tests.web.conftest import harness_config, register_models

matplotlib.use("Agg")

LONG = "judge tokens (prompt + completion, all probes and sources; no USD price)"


@pytest.fixture
def drawn(monkeypatch) -> dict[int, list[str]]:
    """Each figure drawn: the texts drawn outside it at its latest draw — the one that writes
    the PNG (``bbox_inches="tight"`` draws it on the saved area)."""
    outside: dict[int, list[str]] = {}
    extents: dict[int, list[tuple[str, object]]] = {}
    draw_figure, draw_text = Figure.draw, Text.draw

    def figure(self: Figure, renderer) -> None:
        extents[id(self)] = []
        draw_figure(self, renderer)
        box = self.bbox
        outside[id(self)] = [
            text
            for text, e in extents[id(self)]
            if e.x0 < box.x0 - 1 or e.y0 < box.y0 - 1 or e.x1 > box.x1 + 1 or e.y1 > box.y1 + 1
        ]

    def text(self: Text, renderer) -> None:
        draw_text(self, renderer)
        root = self.get_figure(root=True)
        if self.get_visible() and self.get_text().strip() and id(root) in extents:
            extents[id(root)].append((self.get_text(), self.get_window_extent(renderer)))

    monkeypatch.setattr(Figure, "draw", figure)
    monkeypatch.setattr(Text, "draw", text)
    return outside


def test_the_harness_plots_hold_their_texts(tmp_path, drawn):
    register_models()
    config = harness_config(tmp_path).model_dump(mode="json")
    for judge, name in zip(config["judges"], ("lenient-judge-of-long-name", "clean"), strict=True):
        judge["name"] = name
    config["tests"] = {**config["tests"], "stochastic_stability": {"k": 3, "temperature": 1.0}}
    config["judges"].append({**config["judges"][1], "name": "another-judge-of-a-long-name"})
    res = run_harness(HarnessConfig.model_validate(config), workdir=tmp_path, progress=False)
    for png in ("heatmap.png", "cost_accuracy.png", "samples_needed.png"):
        assert (res.run_dir / png).is_file(), png
    assert len(drawn) >= 3
    assert {k: v for k, v in drawn.items() if v} == {}


def test_the_pareto_plot_and_the_reliability_diagram_hold_their_texts(tmp_path, drawn):
    names = ["local", "claude-3-5-haiku-latest-strict", "gpt-4o-mini-judge-of-a-long-name"]
    pareto_plot(
        [(n, 1000.0 * i, 0.5 + i / 10, i != 1) for i, n in enumerate(names)],
        tmp_path / "pareto.png",
        xlabel=LONG,
        ylabel="worst_test_rate (higher is better)",
        title="Cost vs metric (filled: Pareto-optimal)",
    )
    bins = [
        ReliabilityBin(lower=0.0, upper=0.5, mean_predicted=0.3, observed=0.2, count=5),
        ReliabilityBin(lower=0.5, upper=1.0, mean_predicted=0.8, observed=0.9, count=1000),
    ]
    plot_reliability_diagram(bins, tmp_path / "reliability.png", title=f"Reliability — {names[2]}")
    assert len(drawn) == 2
    assert {k: v for k, v in drawn.items() if v} == {}


def test_the_check_sees_a_text_outside_the_figure(drawn, tmp_path):
    """A label wider than its figure is reported — until the figure is saved with
    ``bbox_inches="tight"``."""
    fig = Figure(figsize=(2, 2))
    fig.subplots().set_xlabel(LONG)
    fig.savefig(tmp_path / "cut.png")
    assert LONG in drawn[id(fig)]
    fig.savefig(tmp_path / "whole.png", bbox_inches="tight")
    assert drawn[id(fig)] == []
