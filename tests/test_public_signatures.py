"""What crosses a package boundary is typed: every public name of every public ``assay`` module
(its ``__all__``, and the public functions and classes it defines itself, listed there or not),
the public methods of those classes, and every registered runner's ``run`` and ``print`` neither
returns ``dict[str, Any]`` nor takes a parameter typed ``Any``, unless :data:`ALLOWED` lists it
with the reason.

A value a function checks or converts whatever it is (a cell of a user's table, a JSON value)
is typed ``object``: the honest type of "anything, narrowed here". Variadic ``*args: Any`` /
``**kwargs: Any`` are passed on to another callable's own typed parameters, and an ``__init__``
pydantic or dataclasses generated is its fields' types; neither is reported."""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType

import assay

ROOT = Path(assay.__file__).resolve().parent

# name (as its package exports it) with ``(parameter)`` or `` -> return``: why it stays loose
_SIGNATURE_INPUTS = "a DSPy signature's input fields by name, as judge(**inputs) takes them"
_SIGNED_JSON = "the canonical JSON a signature or hash covers: the model's own dump"
_FOREIGN_JSON = "ToolEmu's own JSON records (all_cases.json, trajectories), its format not ours"
_QUEUED_RECORD = "read-only keys copied from a queued record, whose keys its queue names"
ALLOWED: dict[str, str] = {
    "assay.programs.Judge.inputs -> return": _SIGNATURE_INPUTS,
    "assay.programs.Panel.inputs -> return": _SIGNATURE_INPUTS,
    "assay.programs.JudgeKind.inputs -> return": _SIGNATURE_INPUTS,
    "assay.programs.task_inputs -> return": _SIGNATURE_INPUTS,
    "assay.programs.kinds.emulator_quality.EmulatorQualityKind.inputs -> return": (
        _SIGNATURE_INPUTS
    ),
    "assay.programs.kinds.mlflow.MlflowKind.inputs -> return": _SIGNATURE_INPUTS,
    "assay.programs.kinds.pairwise.PairwiseKind.inputs -> return": _SIGNATURE_INPUTS,
    "assay.programs.kinds.response.ResponseKind.inputs -> return": _SIGNATURE_INPUTS,
    "assay.programs.kinds.toolemu_helpfulness.ToolEmuHelpfulnessKind.inputs -> return": (
        _SIGNATURE_INPUTS
    ),
    "assay.programs.kinds.toolemu_safety.ToolEmuSafetyKind.inputs -> return": _SIGNATURE_INPUTS,
    "assay.programs.kinds.transcript.TranscriptKind.inputs -> return": _SIGNATURE_INPUTS,
    "assay.optimization.InvariantJudge.inputs -> return": _SIGNATURE_INPUTS,
    "assay.decisions.Certificate.signed_part -> return": _SIGNED_JSON,
    "assay.decisions.selective.Calibration.signed_part -> return": _SIGNED_JSON,
    "assay.lm.ModelSpec.identity -> return": _SIGNED_JSON,
    "assay.lm.ModelSpec.with_layout -> return": _SIGNED_JSON,
    "assay.lm.ModelSpec.resolved -> return": _SIGNED_JSON,
    "assay.emulation.Case.to_toolemu -> return": _FOREIGN_JSON,
    "assay.emulation.toolemu_record -> return": _FOREIGN_JSON,
    "assay.decisions.ReviewQueue.entry_details -> return": _QUEUED_RECORD,
    "assay.runs.SignedHistory.link -> return": (
        "a line of a history with its link and signature: its kind types it (HumanVerdict, "
        "ReviewRecord)"
    ),
    "assay.decisions.selective.AbstentionQueue.entry_details -> return": _QUEUED_RECORD,
    "assay.reliability.scoring.ScoringMetrics.added -> return": (
        "a scoring kind's own fields past the envelope: each kind declares their types"
    ),
    "assay.report.read_yaml -> return": "a YAML file's top-level mapping, as written",
    "assay.runners.ConfigOptions.config_overrides -> return": (
        "dotted config keys and their values: the config's fields type them when it loads"
    ),
    "assay.runs.RunSettings.model_dump -> return": "pydantic's BaseModel.model_dump, mirrored",
}

_ANY = re.compile(r"^(typing\.)?Any( \| None)?$")
_DICT_ANY = re.compile(r"^(dict|Mapping)\[str, (typing\.)?Any\]( \| None)?$")


def _public_modules() -> Iterator[str]:
    """``assay`` and every package or module of it with no private part in its name (the
    command line is no API: it is the user's way in, and takes parsed arguments)."""
    yield "assay"
    for info in pkgutil.walk_packages(assay.__path__, "assay."):
        parts = info.name.split(".")[1:]
        if parts[0] == "cli" or any(p.startswith("_") for p in parts):
            continue
        yield info.name


def _exports(module: ModuleType) -> list[str]:
    """The names a module offers: its ``__all__``, then the public functions and classes it
    defines itself — a module with no ``__all__`` (a runner's, a probe's, a judge kind's file),
    or one that leaves a definition out, is walked all the same."""
    exports = list(getattr(module, "__all__", ()))
    for name, obj in vars(module).items():
        defined_here = getattr(obj, "__module__", None) == module.__name__
        if name.startswith("_") or name in exports or not defined_here:
            continue
        if inspect.isfunction(obj) or inspect.isclass(obj):
            exports.append(name)
    return exports


def _functions(obj: object) -> Iterator[tuple[str, Callable]]:
    """A function itself, or a class's own public methods (and its ``__init__``)."""
    if inspect.isfunction(obj):
        yield "", obj
    elif inspect.isclass(obj):
        for name, member in vars(obj).items():
            if name.startswith("_") and name != "__init__":
                continue
            if isinstance(member, classmethod | staticmethod):
                member = member.__func__
            if inspect.isfunction(member):
                yield f".{name}", member


def _written_in_assay(fn: Callable) -> bool:
    """Whether assay's source defines ``fn`` (not pydantic's or dataclasses' generated code)."""
    code = getattr(fn, "__code__", None)
    return code is not None and Path(code.co_filename).resolve().is_relative_to(ROOT)


def _annotation(a: object) -> str | None:
    if a is inspect.Parameter.empty:
        return None
    return a if isinstance(a, str) else inspect.formatannotation(a)


def _loose(name: str, fn: Callable) -> Iterator[str]:
    """``name(param)`` for each parameter typed ``Any``, ``name -> return`` for a
    ``dict[str, Any]`` return."""
    sig = inspect.signature(fn)
    for p in sig.parameters.values():
        if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD) or fn.__name__ == "model_post_init":
            continue  # passed on; pydantic's own hook
        a = _annotation(p.annotation)
        if a is not None and _ANY.match(a):
            yield f"{name}({p.name})"
    r = _annotation(sig.return_annotation)
    if r is not None and _DICT_ANY.match(r):
        yield f"{name} -> return"


def public_callables() -> dict[str, Callable]:
    """Every public function and method, each registered runner's ``run`` and ``print`` (its
    result) by the runner's name, the rest by the name the first module that offers it
    (:func:`_exports`) gives it."""
    found: dict[str, Callable] = {}
    seen: set[object] = set()
    from assay.runners import get_runner, known_runners

    for runner in known_runners():
        cls = type(get_runner(runner))
        for method in ("run", "print"):
            fn = vars(cls).get(method)
            if fn is not None and fn not in seen:
                seen.add(fn)
                found[f"runner {runner}.{method}"] = fn
    for module_name in _public_modules():
        module = importlib.import_module(module_name)
        for export in _exports(module):
            obj = getattr(module, export)
            for suffix, fn in _functions(obj):
                if fn in seen or not _written_in_assay(fn):
                    continue
                seen.add(fn)
                found[f"{module_name}.{export}{suffix}"] = fn
    return found


def loose_signatures() -> list[str]:
    return sorted(
        entry
        for name, fn in public_callables().items()
        if _written_in_assay(fn)
        for entry in _loose(name, fn)
    )


def test_public_names_are_typed():
    loose = [e for e in loose_signatures() if e not in ALLOWED]
    assert not loose, "typed as Any or returning dict[str, Any]:\n" + "\n".join(loose)


def test_the_allow_list_holds_only_what_is_still_loose():
    stale = sorted(set(ALLOWED) - set(loose_signatures()))
    assert not stale, f"typed now, drop from ALLOWED: {stale}"


def test_the_walk_finds_the_names_it_must():
    """The walk reaches packages' lazy names, class methods, runners, and the definitions of
    modules with no ``__all__`` (a walk that found nothing would pass whatever the code does)."""
    names = public_callables()
    for expected in (
        "assay.runs.Run.open",
        "assay.runs.run_identity",
        "assay.emulation.toolemu_agreement",
        "assay.metrics.inter_annotator_kappa",
        "assay.programs.JudgeKind.inputs",
        "assay.integrations.load_judge",
        "assay.integrations.mlflow.scorer",
        "assay.integrations.inspect.scorer",
        "assay.types.with_work",
        "assay.types.Item.content_id",
        "assay.scale.Scale.index",
        "assay.errors.DataError.__init__",
        "assay.programs.kinds.response.ResponseKind.inputs",
        "assay.reliability.probes.prompt_paraphrase.PromptParaphraseTest.generate",
        "assay.reliability.scoring.stability.samples_needed",
        "runner evaluate.run",
        "runner rank.print",
    ):
        assert expected in names, expected
    probe = {"f": lambda x: x}
    exec("from typing import Any\ndef f(x: Any, *a: Any) -> dict[str, Any]: ...", probe)
    assert list(_loose("f", probe["f"])) == ["f(x)", "f -> return"]


def _members(protocol: type) -> set[str]:
    """The names a protocol declares (its own and its bases', short of ``Protocol``)."""
    names: set[str] = set()
    for base in protocol.__mro__:
        if base is object or base.__name__ in ("Protocol", "Generic"):
            continue
        names |= {n for n in vars(base) if not n.startswith("_")}
        names |= set(getattr(base, "__annotations__", {}))
    return names


def test_the_protocols_name_what_the_models_have(tmp_path):
    """A protocol stands for a model a package cannot import (it lies to the right): every
    member it declares is one the model has, so the model is what the protocol says."""
    import dspy

    from assay.inputs import EvaluateConfig
    from assay.integrations import WithJudge
    from assay.lm import UsageRecords
    from assay.programs import Judge, JudgeConfig
    from assay.programs.kinds import (
        CriterionSettings,
        JudgeProgram,
        JudgeSettings,
        MlflowSettings,
    )
    from assay.runs import RunSettings, TrackingSettings

    judge = JudgeConfig(
        name="t",
        model="scripted:x",
        scale="1-3",
        task="transcript",
        criteria=[{"id": "c", "instructions": "check it"}],
    )
    mlflow_judge = JudgeConfig(
        name="m", model="openai/x", task="mlflow", mlflow={"builtin": "Safety"}
    )
    config = EvaluateConfig(name="e", data={"path": str(tmp_path / "d.csv")}, judge=judge)
    for protocol, instance in (
        (RunSettings, config),
        (TrackingSettings, config.tracking),
        (WithJudge, config),
        (JudgeSettings, judge),
        (CriterionSettings, judge.criteria[0]),
        (MlflowSettings, mlflow_judge.mlflow),
        (JudgeProgram, Judge(judge)),
        (UsageRecords, dspy.utils.usage_tracker.UsageTracker()),
    ):
        missing = sorted(n for n in _members(protocol) if not hasattr(instance, n))
        assert not missing, f"{type(instance).__name__} lacks {protocol.__name__}'s {missing}"
