"""Tool specs and case fields as prompt text, at the level each role needs.

- the **emulator** sees one tool in full: arguments, returns and exceptions with descriptions
  (it must check the call against them and shape the observation after ``returns``);
- the **agent** sees every tool of its toolkits by name, summary and arguments (what it needs
  to call them, no more);
- the **evaluators** see ``assay.data.render_toolkit_descriptions`` at its default detail, the
  text the existing evaluator tests and the shared trajectories are judged with.
"""

from __future__ import annotations

import json

from assay.data import render_toolkit_descriptions
from assay.emulation._models import Case, Tool, Toolkit


def _args(tool: Tool, *, describe: bool) -> list[str]:
    lines = []
    for p in tool.parameters:
        flags = ", ".join(x for x in (p.type, "" if p.required else "optional") if x)
        text = f"- {p.name}" + (f" ({flags})" if flags else "")
        if describe and p.description:
            text += f": {p.description}"
        lines.append(text)
    return lines


def emulator_tool_spec(toolkit: Toolkit, tool: Tool) -> str:
    """Everything about one tool: what it does, its arguments, returns and exceptions."""
    lines = [f"Tool: {toolkit.tool_name(tool)}"]
    if toolkit.description_for_model:
        lines.append(f"Toolkit {toolkit.name_for_model}: {toolkit.description_for_model}")
    lines.append(f"Summary: {tool.summary.strip()}")
    lines.append("Arguments:")
    lines.extend("  " + x for x in _args(tool, describe=True) or ["(none)"])
    lines.append("Returns:")
    for r in tool.returns:
        kind = f" ({r.type})" if r.type else ""
        lines.append(f"  - {r.name}{kind}" + (f": {r.description}" if r.description else ""))
    if not tool.returns:
        lines.append("  (nothing)")
    lines.append("Exceptions:")
    if tool.exceptions:
        lines.extend(f"  - {e.name}: {e.description}" for e in tool.exceptions)
    else:
        lines.append("  (none listed)")
    return "\n".join(lines)


def agent_tool_descriptions(toolkits: list[Toolkit]) -> str:
    """The agent's view of its tools: ``Name: summary`` and the arguments, per toolkit."""
    blocks = []
    for tk in toolkits:
        lines = [f"<{tk.name_for_model}> toolkit: {tk.description_for_model}".rstrip(": ")]
        for tool in tk.tools:
            lines.append(f"* {tk.tool_name(tool)}: {tool.summary.strip()}")
            lines.extend("    " + x for x in _args(tool, describe=True))
        blocks.append("\n".join(lines))
    return "\n\n".join(blocks)


def evaluator_tool_descriptions(toolkits: list[Toolkit]) -> str:
    """The evaluators' view (the same text ``assay evaluate`` gives them for shared trajectories)."""
    specs = {tk.toolkit: tk.model_dump(mode="json") for tk in toolkits}
    return render_toolkit_descriptions(specs, [tk.toolkit for tk in toolkits])


# -- case fields in ToolEmu's trajectory format ------------------------------------------------
def _bullets(entries: list[str], indent: str = "") -> str:
    return "".join(f"\n{indent}* {e}" for e in entries)


def underspecifications_text(case: Case) -> str:
    """``underspecifications`` exactly as ToolEmu writes it into a trajectory record."""
    u = case.underspecifications
    parts = []
    for title, entries in (
        ("Task Information Underspecifications", u.task_information),
        ("Safety & Security Constraint Underspecifications", u.safety_constraints),
    ):
        body = _bullets(entries, "    ") if entries else ""
        parts.append(f"\n- {title}: " + (body if entries else "None"))
    return "".join(parts)


def risky_outcomes_text(case: Case) -> str:
    return _bullets(case.potential_risky_outcomes)


def risky_actions_text(case: Case) -> str:
    return _bullets(case.potential_risky_actions)


def tool_input_text(value: object) -> str:
    """A tool input as the JSON text the agent wrote (non-strings are dumped)."""
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
