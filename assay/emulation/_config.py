"""The typed config of ``assay toolemu run`` (YAML ⇄ pydantic), shared by the API and the CLI."""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar, Literal

from pydantic import Field, model_validator

from assay._files import resolve
from assay.inputs import RunConfig, load_config
from assay.lm import ModelSpec, Role, StrictInt
from assay.programs import JudgeConfig
from assay.types import PlainName, stable_hash

EvaluatorTask = Literal["toolemu_safety", "toolemu_helpfulness", "emulator_quality"]
TASK_SUFFIX: dict[str, str] = {
    "toolemu_safety": "safety",
    "toolemu_helpfulness": "helpfulness",
    "emulator_quality": "emulator_quality",
}


class AgentConfig(ModelSpec):
    """The agent under test."""

    role: ClassVar[Role] = "agent"
    max_steps: StrictInt = Field(
        default=15, ge=1, le=100, description="agent steps per case (at most 100: each is LM calls)"
    )


class EmulatorConfig(ModelSpec):
    """The tool emulator: ``standard`` or ``adversarial`` (sees the case's risks and steers
    toward consequential situations); ``critique`` adds a self-critique call per tool call."""

    role: ClassVar[Role] = "emulator"
    mode: Literal["standard", "adversarial"] = Field(
        default="standard",
        description=(
            "standard, or adversarial (sees the case's risks and steers toward "
            "consequential situations)"
        ),
    )
    critique: bool = Field(
        default=False, description="add a self-critique call per emulated tool call"
    )


class EvaluatorConfig(ModelSpec):
    """One evaluator model, running ToolEmu's safety and helpfulness evaluators and the
    emulator-quality judge (or the ``tasks`` listed)."""

    role: ClassVar[Role] = "evaluator"
    name: PlainName = Field(
        default="evaluator",
        description=(
            "the evaluator's name (its judges are NAME-safety, NAME-helpfulness, NAME-emulator)"
        ),
    )
    program: Literal["predict", "chain_of_thought"] = Field(
        default="predict", description="predict, or chain_of_thought (reasoning before the score)"
    )
    tasks: list[EvaluatorTask] = Field(
        default_factory=lambda: ["toolemu_safety", "toolemu_helpfulness", "emulator_quality"],
        min_length=1,
        description="which evaluators run: toolemu_safety, toolemu_helpfulness, emulator_quality",
    )

    def judge_config(self, task: EvaluatorTask) -> JudgeConfig:
        spec = self.model_dump(exclude={"name", "program", "tasks"})
        return JudgeConfig(
            **spec, name=f"{self.name}-{TASK_SUFFIX[task]}", task=task, program=self.program
        )


class ToolEmuRunConfig(RunConfig):
    """An ``assay toolemu run``: cases → agent with emulated tools → trajectories → evaluators
    → metrics. Relative paths are relative to the config file."""

    cases: str = Field(description="ToolEmu's test cases (a JSON file)")
    toolkits: str = Field(description="ToolEmu's toolkit specifications (a JSON file)")
    select: str | list[int] | None = Field(
        default=None, description="case indices: '0-14', '0,3,7-9' or a list (default: all)"
    )
    limit: StrictInt | None = Field(
        default=None, ge=1, description="keep the first N selected cases"
    )
    agent: AgentConfig = Field(
        default_factory=AgentConfig,
        description="the agent under test (a model and its step budget)",
    )
    emulator: EmulatorConfig = Field(
        default_factory=EmulatorConfig, description="the model that emulates the tools"
    )
    evaluators: list[EvaluatorConfig] = Field(
        default_factory=lambda: [EvaluatorConfig()],
        min_length=1,
        description="the models running ToolEmu's evaluators on each trajectory",
    )
    annotations: str | None = Field(
        default=None,
        description="human annotations of some of the trajectories (the file `assay toolemu "
        "agreement` reads; rows about cases the run does not have are left out): the agent's "
        "failure incidence is then also estimated from them and the safety evaluator's score on "
        "every trajectory (PPI++), in the report",
    )

    @model_validator(mode="after")
    def _check(self) -> ToolEmuRunConfig:
        names = [e.name for e in self.evaluators]
        dup = {n for n in names if names.count(n) > 1}
        if dup:
            raise ValueError(f"evaluator names must differ: {', '.join(sorted(dup))}")
        return self

    def judge_configs(self) -> list[tuple[EvaluatorConfig, JudgeConfig]]:
        return [(e, e.judge_config(t)) for e in self.evaluators for t in e.tasks]

    def trajectory_hash(self, data_fingerprint: str) -> str:
        """Identity of the run directory: what makes the trajectories (not the evaluators, not
        the case selection — more cases or another evaluator reuse the trajectories made), and
        the agent's and emulator's prices where set (their cost is part of the run's: at another
        price the trajectories are made again, through the LM cache)."""
        identity: dict[str, object] = {
            "agent": self.agent.identity(),
            "emulator": self.emulator.identity(),
            "data": data_fingerprint,
        }
        prices = [self.agent.price_identity(), self.emulator.price_identity()]
        if prices != [None, None]:  # unpriced runs keep their hash
            identity["prices"] = prices
        return stable_hash(identity)


def load_toolemu_config(
    path: str | Path, overrides: dict | None = None
) -> tuple[ToolEmuRunConfig, Path]:
    """Read a ``toolemu run`` YAML config; ``cases``, ``toolkits`` and ``annotations`` resolved
    against its folder."""
    config, base = load_config(path, overrides, model=ToolEmuRunConfig)
    for key in ("cases", "toolkits", "annotations"):
        if getattr(config, key) is None:
            continue
        value = Path(getattr(config, key)).expanduser()
        setattr(config, key, str(value if value.is_absolute() else resolve(base / value)))
    return config, base
