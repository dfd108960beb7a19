"""ToolEmu files: test cases, toolkit specs, trajectories, evaluator outputs."""

from __future__ import annotations

import difflib
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from assay import _json
from assay.data._common import iter_jsonl, read_json
from assay.data._transcript import with_steps
from assay.errors import DataError
from assay.types import Item, Message, ToolCall

_DETAIL_LEVELS = ("low", "medium", "high")


# -- cases and toolkits -------------------------------------------------------------------------
def load_toolemu_cases(path: str | Path) -> list[dict[str, Any]]:
    """Read ``all_cases.json``: a list of test-case dicts (``name``, ``Toolkits``, ``User Instruction``...)."""
    data = read_json(path)
    if not isinstance(data, list):
        raise DataError(f"expected a JSON list of cases, found {type(data).__name__}", path=path)
    for i, case in enumerate(data, start=1):
        if not isinstance(case, dict):
            raise DataError(f"case is a {type(case).__name__}, not an object", path=path, row=i)
    return data


def load_toolemu_toolkits(path: str | Path) -> dict[str, dict[str, Any]]:
    """Read ``all_toolkits.json`` into a dict keyed by toolkit name (``toolkit``, else ``name_for_model``)."""
    data = read_json(path)
    if isinstance(data, dict):  # already keyed by name
        data = list(data.values())
    if not isinstance(data, list):
        raise DataError(f"expected a JSON list of toolkits, found {type(data).__name__}", path=path)
    toolkits: dict[str, dict[str, Any]] = {}
    for i, spec in enumerate(data, start=1):
        if not isinstance(spec, dict):
            raise DataError(f"toolkit is a {type(spec).__name__}, not an object", path=path, row=i)
        name = spec.get("toolkit") or spec.get("name_for_model")
        if not isinstance(name, str) or not name:
            raise DataError("toolkit has no name", path=path, row=i, field="toolkit")
        if not isinstance(spec.get("tools", []), list):
            raise DataError("'tools' is not a list", path=path, row=i, field="tools")
        if name in toolkits:
            raise DataError(f"duplicate toolkit '{name}'", path=path, row=i, field="toolkit")
        toolkits[name] = spec
    return toolkits


def _field_line(entry: dict[str, Any], *, with_description: bool, optional_flag: bool) -> str:
    """``- name (type[, optional])[: description]`` for one parameter, return value or exception."""
    name = entry.get("name", "?")
    kind = entry.get("type")
    flags = [str(kind)] if kind else []
    if optional_flag and entry.get("required") is False:
        flags.append("optional")
    text = f"- {name}" + (f" ({', '.join(flags)})" if flags else "")
    description = entry.get("description")
    if with_description and description:
        text += f": {description}"
    return text


def render_toolkit_descriptions(
    toolkits: dict[str, dict[str, Any]], names: list[str], detail: str = "medium"
) -> str:
    """Describe the named toolkits' tools for an evaluator prompt.

    ``low``: tool names, summaries, argument and return names/types; ``medium`` (default): also
    their descriptions and the exceptions; ``high``: also each toolkit's own description.
    """
    if detail not in _DETAIL_LEVELS:
        raise ValueError(f"detail must be one of {_DETAIL_LEVELS}, not {detail!r}")
    described = detail in ("medium", "high")
    blocks: list[str] = []
    for name in names:
        spec = toolkits.get(name)
        if spec is None:
            close = difflib.get_close_matches(name, list(toolkits), n=1)
            hint = f" (did you mean '{close[0]}'?)" if close else ""
            raise DataError(f"unknown toolkit '{name}'{hint}", field="Toolkits")
        prefix = spec.get("name_for_model") or name
        lines = [f"<{prefix}> toolkit with tool APIs:"]
        if detail == "high" and spec.get("description_for_model"):
            lines.append(f"  {spec['description_for_model']}")
        for tool in spec.get("tools", []):
            lines.append(
                f"  * {prefix}{tool.get('name', '')}: {str(tool.get('summary', '')).strip()}"
            )
            for title, key in (("Arguments", "parameters"), ("Returns", "returns")):
                entries = tool.get(key) or []
                if entries:
                    lines.append(f"    {title}:")
                    lines.extend(
                        "      "
                        + _field_line(
                            e, with_description=described, optional_flag=key == "parameters"
                        )
                        for e in entries
                    )
            exceptions = tool.get("exceptions") or []
            if described and exceptions:
                lines.append("    Exceptions:")
                lines.extend(
                    "      " + _field_line(e, with_description=True, optional_flag=False)
                    for e in exceptions
                )
        blocks.append("\n".join(lines))
    return "\n\n".join(blocks)


# -- trajectories -------------------------------------------------------------------------------
def _json_type(value: Any) -> str:
    """What a JSON value is, for a message: ``null``, ``an object``, ``a list``, ``a number``…"""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    return "an object" if isinstance(value, dict) else "a list"


def _strip_final_answer(output: Any) -> str:
    """ToolEmu's ``output`` without the ``": "`` its parser leaves in front; an answer that is
    not text (an object, a list, a number) as its JSON text, not Python's (``{'a': 1}``)."""
    if output is None:
        text = ""
    elif isinstance(output, str):
        text = output
    else:
        text = json.dumps(output, ensure_ascii=False)
    return re.sub(r"^\s*:\s?", "", text, count=1).strip()


def load_toolemu_trajectories(
    path: str | Path, *, toolkits_path: str | Path | None = None
) -> list[Item]:
    """One Item per trajectory line: ``request`` = user input, ``response`` = final answer
    (``output``, or where that is null or empty the finish step's output, as the transcript).

    ``id`` is the case name (``official_0``), suffixed ``#<line>`` on every line whose case name
    occurs more than once, or a content hash when there is no case name. ``meta["line"]`` is the
    0-based record index, the ``eval_id`` of the matching evaluator line. With ``toolkits_path``,
    each case's toolkits are checked and their specs stored in ``meta["toolkit_specs"]``.
    """
    return list(iter_toolemu_trajectories(path, toolkits_path=toolkits_path))


@dataclass(frozen=True)
class TrajectoryScan:
    """What a first pass over a trajectory file knows: how often each case name occurs (an id
    is suffixed with its line when its name is not unique) and how many records it holds."""

    names: dict[str, int]
    count: int


def scan_toolemu_trajectories(path: str | Path) -> TrajectoryScan:
    """The first pass over a trajectory file: every line a JSON object, its case names counted."""
    names: dict[str, int] = {}
    count = 0
    for _, lineno, record in iter_jsonl(path):
        if not isinstance(record, dict):
            raise DataError(f"line {lineno} is not a JSON object", path=path, row=lineno)
        count += 1
        case = record.get("case")
        if isinstance(case, dict) and case.get("name"):
            names[str(case["name"])] = names.get(str(case["name"]), 0) + 1
    if not count:
        raise DataError("no trajectories in file", path=path)
    return TrajectoryScan(names, count)


def iter_toolemu_trajectories(
    path: str | Path,
    *,
    toolkits_path: str | Path | None = None,
    scan: TrajectoryScan | None = None,
) -> Iterator[Item]:
    """:func:`load_toolemu_trajectories` a line at a time: the file is read twice (``scan``,
    when not given, then the items), so no step holds every trajectory."""
    scan = scan or scan_toolemu_trajectories(path)
    toolkits = load_toolemu_toolkits(toolkits_path) if toolkits_path is not None else None
    seen: dict[str, int] = {}
    for index, lineno, record in iter_jsonl(path):
        item = _trajectory_item(record, index, lineno, scan.names, path, toolkits, toolkits_path)
        if item.id in seen:
            raise DataError(
                f"duplicate trajectory '{item.id}' (same as line {seen[item.id]})",
                path=path,
                row=lineno,
            )
        seen[item.id] = lineno
        yield item


def _toolkit_names(case: dict[str, Any], path: str | Path, lineno: int) -> list[str]:
    """The case's ``Toolkits``: a list of names. A string is refused, not read as a list of
    its letters (``"Gmail"`` would be the toolkits G, m, a, i, l)."""
    names = case.get("Toolkits", [])
    if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
        what = type(names).__name__ if not isinstance(names, list) else "list with a non-string"
        raise DataError(
            f"not a list of toolkit names (a {what}: {json.dumps(names)[:60]})",
            path=path,
            row=lineno,
            field="case.Toolkits",
        )
    return names


def _trajectory_item(
    record: dict[str, Any],
    index: int,
    lineno: int,
    names: dict[str, int],
    path: str | Path,
    toolkits: dict[str, Any] | None,
    toolkits_path: str | Path | None,
) -> Item:
    """One trajectory line as an Item (``names`` counts each case name over the file)."""
    if "error" in record and "intermediate_steps" not in record:
        raise DataError(
            f"trajectory failed during emulation: {record['error']}", path=path, row=lineno
        )
    for key in ("input", "intermediate_steps"):
        if key not in record:
            raise DataError("missing key", path=path, row=lineno, field=key)
    steps = _checked_steps(record["intermediate_steps"], path, lineno)
    case = record.get("case") if isinstance(record.get("case"), dict) else {}
    if not isinstance(record["input"], str):
        raise DataError(
            f"the user's input must be a text, not {_json_type(record['input'])}",
            path=path,
            row=lineno,
            field="input",
        )
    if record.get("output") is not None and not isinstance(record["output"], str):
        raise DataError(
            f"the agent's final answer must be a text (or null: none), not "
            f"{_json_type(record['output'])}",
            path=path,
            row=lineno,
            field="output",
        )
    request = record["input"]
    response = _strip_final_answer(record.get("output")) or _finish_output(steps)
    toolkit_names = _toolkit_names(case, path, lineno)

    name = str(case["name"]) if case.get("name") else None
    if name is None:
        item_id = Item.content_id(request, response, steps)
    elif names[name] > 1:
        item_id = f"{name}#{index}"
    else:
        item_id = name
    meta: dict[str, Any] = {
        "case": case,
        "case_idx": record.get("case_idx"),
        "line": index,
        "underspecifications": record.get("underspecifications"),
        "risky_outcome": record.get("risky_outcome"),
        "risky_actions": record.get("risky_actions"),
        "intermediate_steps": steps,
        "toolkits": toolkit_names,
    }
    if toolkits is not None:
        unknown = [n for n in toolkit_names if n not in toolkits]
        if unknown:
            close = difflib.get_close_matches(unknown[0], list(toolkits), n=1)
            hint = f"; did you mean '{close[0]}'?" if close else ""
            raise DataError(
                f"unknown toolkit(s) {', '.join(unknown)} (not in {toolkits_path}{hint})",
                path=path,
                row=lineno,
                field="case.Toolkits",
            )
        meta["toolkit_specs"] = {n: toolkits[n] for n in toolkit_names}
    try:
        transcript = toolemu_transcript(request, steps, response)
    except ValueError as exc:
        raise DataError(str(exc), path=path, row=lineno, field="intermediate_steps") from None
    return Item(id=item_id, request=request, response=response, transcript=transcript, meta=meta)


def _finish_output(steps: list[Any]) -> str:
    """The final answer of the trajectory's finish step (ToolEmu's ``AgentFinish``), "" without
    one: a record whose ``output`` is null or empty still has its answer there, which the
    transcript and the scratchpad show — the item's response must be the same text."""
    final = ""
    for step in steps:
        kind, payload, _ = _parse_step(step)
        if kind == "finish":
            final = _strip_final_answer(payload)
    return final


def _tool_input(raw: Any) -> dict[str, Any] | str:
    """A ToolEmu action input as JSON arguments when it is a JSON object, else the text — a
    list, number or boolean as its JSON text (as the scratchpad shows it), not Python's."""
    if isinstance(raw, dict):
        return raw
    if raw is not None and not isinstance(raw, str):
        return json.dumps(raw, ensure_ascii=False)
    text = "" if raw is None else raw.strip()
    try:
        value = _json.loads(text)
    except json.JSONDecodeError:
        return text
    return value if isinstance(value, dict) else text


def toolemu_transcript(request: str, steps: list[Any], response: str = "") -> list[Message]:
    """A ToolEmu trajectory as the common transcript: the user instruction, then per
    intermediate step an assistant message with one tool call (its full input as arguments)
    and the tool's observation, then the final answer. The agent's private thoughts are left
    out, as in the scratchpad ToolEmu's evaluators see. ``ValueError`` on an unreadable step."""
    messages = [Message(role="user", content=request)]
    final: str | None = None
    for n, step in enumerate(steps, start=1):
        try:
            kind, payload, observation = _parse_step(step)
        except ValueError as exc:
            raise ValueError(f"step {n}: {exc}") from None
        if kind == "finish":
            final = _strip_final_answer(payload)
            continue
        tool, tool_input = payload
        call_id = f"step{n}"
        messages.append(
            Message(
                role="assistant",
                tool_calls=[
                    ToolCall(id=call_id, function=str(tool), arguments=_tool_input(tool_input))
                ],
            )
        )
        messages.append(
            Message(
                role="tool",
                content=_observation_text(observation),
                tool_call_id=call_id,
                function=str(tool),
            )
        )
    answer = response or final or ""
    if answer:
        messages.append(Message(role="assistant", content=answer))
    return with_steps(messages)


def _checked_steps(steps: Any, path: str | Path, lineno: int) -> list[Any]:
    """``intermediate_steps`` once every step is known to render (checked at load time, so a
    malformed step stops the run before anything is judged or written)."""
    if not isinstance(steps, list):
        raise DataError("not a list", path=path, row=lineno, field="intermediate_steps")
    for n, step in enumerate(steps):
        try:
            _parse_step(step)
        except ValueError as exc:
            raise DataError(
                str(exc), path=path, row=lineno, field=f"intermediate_steps[{n}]"
            ) from None
    return steps


def _parse_step(step: Any) -> tuple[str, Any, Any]:
    """Classify one intermediate step as ``("action", (tool, input), observation)`` or
    ``("finish", output, None)``; ``ValueError`` for a step that is neither."""
    if isinstance(step, list | tuple):
        if not step:
            raise ValueError("empty intermediate step")
        action, observation = step[0], (step[1] if len(step) > 1 else None)
    else:
        action, observation = step, None
    if isinstance(action, dict):
        if action.get("type") == "AgentFinish" or "return_values" in action:
            values = action.get("return_values") or {}
            return "finish", values.get("output") if isinstance(values, dict) else values, None
        if isinstance(action.get("tool"), str) and action["tool"]:
            return _action(action["tool"], action.get("tool_input"), observation, step)
    if isinstance(action, list | tuple):
        if len(action) >= 2 and isinstance(action[0], str) and action[0]:
            return _action(action[0], action[1], observation, step)
        if action and isinstance(action[0], dict):  # AgentFinish dumped as [return_values, log]
            return "finish", action[0].get("output"), None
    raise ValueError(f"unrecognised intermediate step: {_preview(step)}")


def _action(tool: str, tool_input: Any, observation: Any, step: Any) -> tuple[str, Any, Any]:
    if observation is None:
        raise ValueError(f"tool call '{tool}' has no observation: {_preview(step)}")
    return "action", (tool, tool_input), observation


def _preview(step: Any) -> str:
    return json.dumps(step, default=str, ensure_ascii=False)[:200]


def _observation_text(observation: Any) -> str:
    """The observation the agent saw (ToolEmu stores ``[observation, thought summary, log]``)."""
    if isinstance(observation, list | tuple):
        observation = observation[0] if observation else ""
    if isinstance(observation, dict) and "observation" in observation:
        observation = observation["observation"]
    if isinstance(observation, str):
        return observation.strip()
    return json.dumps(observation, ensure_ascii=False, default=str)


def render_toolemu_scratchpad(item: Item) -> str:
    """The scratchpad ToolEmu's evaluators see: actions, inputs, observations, final answer.

    The agent's private thoughts (the log text around each action, and the log of the finish
    step, which may narrate actions that never ran) are left out; nothing is truncated.
    """
    steps = item.meta.get("intermediate_steps")
    if not isinstance(steps, list):
        raise DataError(
            f"item '{item.id}' has no ToolEmu intermediate_steps", field="intermediate_steps"
        )
    blocks: list[str] = []
    final: str | None = None
    for n, step in enumerate(steps, start=1):
        try:
            kind, payload, observation = _parse_step(step)
        except ValueError as exc:
            raise DataError(
                f"item '{item.id}', step {n}: {exc}", field="intermediate_steps"
            ) from None
        if kind == "finish":
            final = _strip_final_answer(payload)
            continue
        tool, tool_input = payload
        if not isinstance(tool_input, str):
            tool_input = json.dumps(tool_input, ensure_ascii=False)
        blocks.append(
            f"Action: {tool}\nAction Input: {tool_input.strip()}\n"
            f"Observation: {_observation_text(observation)}"
        )
    answer = item.response or final or ""
    blocks.append(f"Final Answer: {answer}")
    return "\n\n".join(blocks)
