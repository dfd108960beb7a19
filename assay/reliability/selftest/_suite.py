"""One harness run of ``assay selftest``, declared as data: its judges — one per implanted
defect, the clean one among them —, the scripted models that play them and its generator and
validator, its data set, scale and tests. Registering the models, building the run's config and
reading which tests flagged which judge are the same for every run, written once here."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

from assay.inputs import DataConfig, TrackingConfig
from assay.lm import ScriptedCall, ScriptedEngine, register_script
from assay.reliability._config import HarnessConfig
from assay.reliability._results import HarnessSummary, ReliabilityScores


class TestFlags(BaseModel):
    """One judge on one test of the self-test: its pass rate (with its interval) and
    consistency."""

    model_config = ConfigDict(extra="forbid")

    pass_rate: float | None
    consistency: float | None
    ci_low: float | None
    ci_high: float | None
    # a bias test: its strongest effect against the placebo (the cell with the smallest
    # adjusted p-value) with its interval, and whether the test flagged the judge
    placebo_effect: float | None = None
    placebo_ci_low: float | None = None
    placebo_ci_high: float | None = None
    placebo_flagged: bool | None = None


class JudgeFlags(BaseModel):
    """One judge of the self-test: the defect implanted in it, the tests meant to catch it and
    the tests that did."""

    model_config = ConfigDict(extra="forbid")

    defect: str
    meant_for: list[str]
    flagged: list[str]
    tests: dict[str, TestFlags]
    # tests that must not flag it (a noisy but unbiased judge: the run's bias tests)
    must_not_flag: list[str] = []


Responder = Callable[[ScriptedCall], dict[str, Any]]


@dataclass(frozen=True)
class Suite:
    """One self-test run. Its scripted models are ``scripted:assay-<models>-<judge>`` (and
    ``-generator`` / ``-validator`` for those in ``scripts``); ``defects`` maps each judge to
    its implanted defect and the tests meant to flag it (``[]`` for the clean judge)."""

    name: str  # the run's config name (and with its config hash, its run directory)
    models: str  # the scripted models' name stem
    clean: str  # the judge without a defect: the reference the others are compared with
    defects: dict[str, tuple[str, list[str]]]
    responder: Callable[[str], Responder]  # defect → the judge's scripted answers
    write_data: Callable[[Path], Path]  # writes the data set into a folder, returns its path
    scale: dict[str, Any]
    judge: dict[str, Any]  # every judge's fields besides its name and model
    tests: dict[str, dict[str, Any]]
    generator: dict[str, Any]
    validator: dict[str, Any]
    data: dict[str, Any] = field(default_factory=dict)  # DataConfig fields besides the path
    scripts: dict[str, Responder] = field(default_factory=dict)  # the suite's own roles
    engine_prefix: str = ""  # a judge engine's name: prefix + judge name
    # judges with noise and no bias: none of the run's bias tests (those with a placebo) may
    # flag them
    unbiased: tuple[str, ...] = ()

    def register(self) -> None:
        """Register the scripted models the suite's config names (one responder per judge,
        shared by the engines made for it: the unstable judge's noise is one stream)."""
        for role, respond in self.scripts.items():
            register_script(
                f"assay-{self.models}-{role}",
                lambda r=respond, n=f"{self.models}-{role}": ScriptedEngine(respond=r, name=n),
            )
        responders = {name: self.responder(name) for name in self.defects}
        for name in self.defects:
            register_script(
                f"assay-{self.models}-{name}",
                lambda r=responders[name], n=self.engine_prefix + name: ScriptedEngine(
                    respond=r, name=n
                ),
            )

    def config(self, data_path: Path, *, tracking: bool = False) -> HarnessConfig:
        judges = [
            {"name": name, "model": f"scripted:assay-{self.models}-{name}", **self.judge}
            for name in self.defects
        ]
        return HarnessConfig(
            name=self.name,
            data=DataConfig(path=str(data_path), **self.data),
            scale=self.scale,
            generator=self.generator,
            validator=self.validator,
            judges=judges,
            tests=self.tests,
            concurrency=4,
            retries=0,
            tracking=TrackingConfig(enabled=tracking),
        )

    def flags(self, summary: HarnessSummary) -> dict[str, JudgeFlags]:
        """Which tests flag which judge: a bias test, by its effect against the placebo (the
        run's Benjamini–Hochberg flag: a judge that is only noisy moves as much on the placebo);
        any other test, by a pass or consistency CI entirely below the clean judge's (the clean
        judge itself: below an absolute floor of 0.9)."""
        clean = summary.judges[self.clean].tests
        bias = sorted({t for r in summary.judges.values() for t, m in r.tests.items() if m.placebo})
        out: dict[str, JudgeFlags] = {}
        for name, r in summary.judges.items():
            flagged, tests = [], {}
            for t, m in r.tests.items():
                row = {}
                below = False
                for key in ("pass_rate", "consistency"):
                    mine, ref = getattr(m, key), getattr(clean[t], key)
                    row[key] = None if mine is None else mine.value
                    if mine and ref and mine.ci_high is not None and ref.ci_low is not None:
                        if name == self.clean:
                            below |= mine.ci_high < 0.9
                        else:
                            below |= mine.ci_high < ref.ci_low
                pr = m.pass_rate
                tests[t] = TestFlags(
                    pass_rate=row["pass_rate"],
                    consistency=row["consistency"],
                    ci_low=pr.ci_low if pr else None,
                    ci_high=pr.ci_high if pr else None,
                    **_placebo_flags(m),
                )
                if m.placebo is not None:
                    below = bool(m.placebo.flagged)
                if below:
                    flagged.append(t)
            out[name] = JudgeFlags(
                defect=self.defects[name][0] if name != self.clean else "none",
                meant_for=self.defects[name][1],
                flagged=flagged,
                tests=tests,
                must_not_flag=bias if name in self.unbiased else [],
            )
        return out


def _placebo_flags(m: ReliabilityScores) -> dict[str, Any]:
    """A bias test's strongest effect against its placebo (the smallest adjusted p-value), its
    interval and the test's flag; nothing for another test."""
    effects = [e for e in (m.placebo.effects.values() if m.placebo else []) if e.n]
    if not effects:
        return {}
    e = min(effects, key=lambda e: e.p_adjusted if e.p_adjusted is not None else e.p_value)
    return {
        "placebo_effect": e.effect,
        "placebo_ci_low": e.ci_low,
        "placebo_ci_high": e.ci_high,
        "placebo_flagged": m.placebo.flagged,  # type: ignore[union-attr]
    }
