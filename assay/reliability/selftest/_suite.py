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
from assay.reliability._results import HarnessSummary


class TestFlags(BaseModel):
    """One judge on one test of the self-test: its pass rate (with its interval) and
    consistency."""

    model_config = ConfigDict(extra="forbid")

    pass_rate: float | None
    consistency: float | None
    ci_low: float | None
    ci_high: float | None


class JudgeFlags(BaseModel):
    """One judge of the self-test: the defect implanted in it, the tests meant to catch it and
    the tests that did."""

    model_config = ConfigDict(extra="forbid")

    defect: str
    meant_for: list[str]
    flagged: list[str]
    tests: dict[str, TestFlags]


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
        """Which tests flag which judge: a pass or consistency CI entirely below the clean
        judge's (the clean judge itself: below an absolute floor of 0.9)."""
        clean = summary.judges[self.clean].tests
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
                )
                if below:
                    flagged.append(t)
            out[name] = JudgeFlags(
                defect=self.defects[name][0] if name != self.clean else "none",
                meant_for=self.defects[name][1],
                flagged=flagged,
                tests=tests,
            )
        return out
