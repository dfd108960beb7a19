"""Typed ToolEmu cases and toolkits, loaded through the ToolEmu file loaders of ``assay.data``.

A case names its toolkits; every name is checked against the toolkit specs when cases are
loaded, so an unknown toolkit is one line naming the case, not a crash in the middle of a run.
"""

from __future__ import annotations

import difflib
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from assay.data import load_toolemu_cases, load_toolemu_toolkits
from assay.errors import DataError


class ToolArgument(BaseModel):
    """A parameter of a tool (``required`` defaults to true, as in ToolEmu's specs)."""

    model_config = ConfigDict(extra="allow")

    name: str
    type: str = ""
    description: str = ""
    required: bool = True


class ToolReturn(BaseModel):
    model_config = ConfigDict(extra="allow")

    name: str
    type: str = ""
    description: str = ""


class ToolException(BaseModel):
    model_config = ConfigDict(extra="allow")

    name: str
    description: str = ""


class Tool(BaseModel):
    """One tool API of a toolkit; the agent calls it as ``<toolkit name_for_model><name>``."""

    model_config = ConfigDict(extra="allow")

    name: str
    summary: str = ""
    parameters: list[ToolArgument] = Field(default_factory=list)
    returns: list[ToolReturn] = Field(default_factory=list)
    exceptions: list[ToolException] = Field(default_factory=list)


class Toolkit(BaseModel):
    model_config = ConfigDict(extra="allow")

    toolkit: str
    name_for_model: str
    description_for_model: str = ""
    category: str | None = None
    tools: list[Tool] = Field(default_factory=list)

    def tool_name(self, tool: Tool) -> str:
        """The name the agent uses: ``TodoistSearchTasks`` for tool ``SearchTasks`` of Todoist."""
        return f"{self.name_for_model}{tool.name}"


class Underspecifications(BaseModel):
    model_config = ConfigDict(extra="allow", populate_by_name=True)

    task_information: list[str] = Field(default_factory=list, alias="Task Information")
    safety_constraints: list[str] = Field(
        default_factory=list, alias="Safety & Security Constraints"
    )


class Case(BaseModel):
    """A ToolEmu test case. ``index`` is its position in the cases file (ToolEmu's ``case_idx``)."""

    model_config = ConfigDict(extra="allow", populate_by_name=True)

    index: int = Field(exclude=True)
    name: str
    toolkits: list[str] = Field(alias="Toolkits")
    user_instruction: str = Field(alias="User Instruction")
    underspecifications: Underspecifications = Field(
        default_factory=Underspecifications, alias="Underspecifications"
    )
    expected_achievements: list[str] = Field(default_factory=list, alias="Expected Achievements")
    potential_risky_outcomes: list[str] = Field(
        default_factory=list, alias="Potential Risky Outcomes"
    )
    potential_risky_actions: list[str] = Field(
        default_factory=list, alias="Potential Risky Actions"
    )

    def to_toolemu(self) -> dict[str, Any]:
        """The case as it appears in ``all_cases.json`` (and in a trajectory's ``case``)."""
        return self.model_dump(mode="json", by_alias=True)

    @property
    def risk_types(self) -> list[str]:
        """Distinct risk types of the case: the text before ":" of each potential risky
        outcome, in sentence case (``Financial Loss`` and ``Financial loss`` are one type)."""
        seen: list[str] = []
        for outcome in self.potential_risky_outcomes:
            head = outcome.split(":", 1)[0].strip() if ":" in outcome else "Unspecified"
            kind = head[:1].upper() + head[1:].lower()
            if kind and kind not in seen:
                seen.append(kind)
        return seen


def load_toolkits(path: str | Path) -> dict[str, Toolkit]:
    """Toolkit specs by name (``all_toolkits.json``), typed."""
    out: dict[str, Toolkit] = {}
    for i, (name, spec) in enumerate(load_toolemu_toolkits(path).items(), start=1):
        try:
            out[name] = Toolkit.model_validate(spec)
        except ValidationError as exc:
            err = exc.errors()[0]
            raise DataError(
                f"toolkit '{name}': {err['msg']}",
                path=path,
                row=i,
                field=".".join(str(p) for p in err["loc"]),
            ) from None
    return out


def load_cases(path: str | Path, toolkits: dict[str, Toolkit]) -> list[Case]:
    """All cases of ``all_cases.json``, typed; each case's toolkits must exist in ``toolkits``."""
    cases: list[Case] = []
    for i, raw in enumerate(load_toolemu_cases(path)):
        try:
            case = Case.model_validate({**raw, "index": i})
        except ValidationError as exc:
            err = exc.errors()[0]
            raise DataError(
                f"case {i}: {err['msg']}", path=path, field=".".join(str(p) for p in err["loc"])
            ) from None
        for name in case.toolkits:
            if name not in toolkits:
                close = difflib.get_close_matches(name, list(toolkits), n=1)
                hint = f" (did you mean '{close[0]}'?)" if close else ""
                raise DataError(
                    f"case {i} ({case.name}) names unknown toolkit '{name}'{hint}",
                    path=path,
                    field="Toolkits",
                )
        cases.append(case)
    if not cases:
        raise DataError("no cases in file", path=path)
    return cases


def parse_selection(spec: str | list[int] | None, n: int) -> list[int]:
    """Case indices from ``"0-14"``, ``"0,3,7-9"``, a list, or ``None`` (all ``n`` cases)."""
    if spec is None:
        return list(range(n))
    if isinstance(spec, list):
        picked = [int(x) for x in spec]
    else:
        picked = []
        for part in str(spec).split(","):
            part = part.strip()
            if not part:
                continue
            try:
                if "-" in part:
                    lo, hi = (int(x) for x in part.split("-", 1))
                    if hi < lo:
                        raise ValueError
                    picked.extend(range(lo, hi + 1))
                else:
                    picked.append(int(part))
            except ValueError:
                raise DataError(
                    f"case selection '{spec}': '{part}' is not an index or a range like 0-14"
                ) from None
    bad = [i for i in picked if not 0 <= i < n]
    if bad:
        raise DataError(f"case selection: index {bad[0]} is out of range (0-{n - 1})")
    return list(dict.fromkeys(picked))
