"""The registry of reliability tests: one test = one file + its ``@reliability_test`` registration.

A test turns seed items into probes. Its settings are a typed pydantic model, recorded whole
in the run's config, so any run can be rebuilt exactly from what it logged.
"""

from __future__ import annotations

import threading
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import Future
from contextlib import AbstractContextManager, contextmanager, nullcontext
from dataclasses import dataclass, field
from typing import Any, ClassVar, TypeVar, overload

import dspy
from pydantic import BaseModel, ConfigDict
from pydantic_core import to_jsonable_python

from assay._registry import Registry, plugin_where
from assay.errors import AssayError, ConfigError
from assay.lm import error_text
from assay.programs import JudgeConfig
from assay.reliability._probe import Dropped, Probe
from assay.scale import Scale
from assay.types import Item, Usage, stable_hash

MAX_PER_SOURCE = 100
"""Most probes a test makes of one source item (``variants``, ``k``, ``per_bucket``): each is
an LM call or more per item, and 100 already measures a rate to a percent — a typo of ``1e9``
would be a billion calls."""


class TestSettings(BaseModel):
    """Settings every test accepts; subclasses add their own."""

    model_config = ConfigDict(extra="forbid")

    __test__ = False  # not a pytest class


class ProgramSettings(TestSettings):
    """Settings of a test whose probes an LLM writes and checks: where to load the state of its
    generator and validator programs from (a DSPy JSON file or an MLflow URI, e.g. an optimized
    perturber saved by an earlier run); by default the programs as declared."""

    generator_state: str | None = None
    validator_state: str | None = None


@dataclass
class Unit:
    """One independent piece of generation work (usually one seed item).

    Its identity — what decides whether a stored unit is reused — is its id, its sources, its
    ``payload`` and what the harness adds (the test's settings and programs, the generator and
    validator, the context's inputs it read): whatever else ``generate`` reads from outside the
    unit (a judge's rubric criterion) goes in ``payload``, so an edit makes it anew."""

    id: str
    sources: list[Item]
    payload: dict[str, Any] = field(default_factory=dict)


@dataclass
class GenerationContext:
    """What a test may use to make probes: the scale, LMs by role, and usage accounting.

    ``lm(role, temperature=None, rollout=None)`` returns the DSPy LM of ``generator`` or
    ``validator`` with that temperature actually sent to the model; ``rollout`` gives a distinct
    cache entry (a fresh sample) for the same prompt.

    ``inputs`` are texts of the run a test may read (``rubric``: the benchmark's rubric); the
    names a unit read are recorded in ``read`` and become part of its identity, so editing one
    regenerates exactly the units whose generation read it.
    """

    scale: Scale
    lm: Callable[..., dspy.LM]
    models: dict[str, str] = field(default_factory=dict)
    prices: dict[str, tuple[float, float]] = field(default_factory=dict)
    adapters: dict[str, str] = field(default_factory=dict)
    temperatures: dict[str, float | None] = field(default_factory=dict)
    # each role's ModelSpec.identity(): endpoint, sampling, adapter (the shared calls' memo key)
    identities: dict[str, dict[str, Any]] = field(default_factory=dict)
    inputs: dict[str, str] = field(default_factory=dict)
    read: set[str] = field(default_factory=set)
    seed: int = 0
    usage: dict[str, Usage] = field(default_factory=dict)
    # shared by every unit of a run: identical shared calls made once, LM calls in flight capped
    memo: CallMemo | None = None
    slots: Callable[[], AbstractContextManager[Any]] | None = None

    @property
    def rubric(self) -> str:
        """The benchmark's rubric (the first judge's instruction and rubric); reading it makes
        it part of the unit's identity."""
        self.read.add("rubric")
        return self.inputs.get("rubric", "")

    def call(
        self,
        role: str,
        program: dspy.Module,
        *,
        stage: str,
        temperature: float | None = None,
        rollout: int | None = None,
        shared: bool = False,
        **inputs: Any,
    ) -> tuple[dspy.Prediction, Usage]:
        """Run ``program`` (a test's generator or validator) on the ``role``'s LM; count its
        usage under ``stage`` (also when the call fails) and return the prediction with the
        usage of this call.

        With ``shared``, a call identical to one another unit of the run already made (same
        model identity — endpoint, sampling, adapter —, temperature, rollout, program state and
        inputs) is not sent again: it gets that call's prediction (or failure) and no usage, as
        from a cache — also while the first is still in flight."""
        if shared and self.memo is not None:
            key = _call_key(
                [role, self.identities.get(role), self.adapters.get(role, "json")],
                program,
                temperature,
                rollout,
                inputs,
            )
            return self.memo.once(
                key, lambda: self._call(role, program, stage, temperature, rollout, inputs)
            )
        return self._call(role, program, stage, temperature, rollout, inputs)

    def _call(
        self, role, program, stage, temperature, rollout, inputs
    ) -> tuple[dspy.Prediction, Usage]:
        from assay.lm import gate_calls, kept_nowhere, make_adapter, track_limits, usage_of_tracker

        lm = self.lm(role, temperature=temperature, rollout=rollout)
        adapter = make_adapter(self.adapters.get(role, "json"))
        usage = Usage()
        try:
            with (
                gate_calls(self.slots) if self.slots is not None else nullcontext(),
                dspy.track_usage() as tracker,
                track_limits() as waits,
                kept_nowhere(),
                dspy.context(lm=lm, adapter=adapter),
            ):
                pred = program(**inputs)
        finally:
            usage = usage_of_tracker(tracker, self.prices.get(role), waits)
            self.usage[stage] = self.usage.get(stage, Usage()) + usage
        return pred, usage

    def model_of(self, role: str) -> str:
        return self.models.get(role, role)

    @contextmanager
    def stage(self, name: str) -> Iterator[None]:
        """Count the tokens and cost of every LM call made inside under ``name`` (each holds one
        of the run's LM-call slots while on the wire)."""
        from assay.lm import gate_calls, kept_nowhere, usage_of_tracker

        with (
            gate_calls(self.slots) if self.slots is not None else nullcontext(),
            dspy.track_usage() as tracker,
            kept_nowhere(),
        ):
            yield
        role = "validator" if name == "validate" else "generator"
        price = self.prices.get(role)
        self.usage[name] = self.usage.get(name, Usage()) + usage_of_tracker(tracker, price)


def _call_key(model: Any, program: dspy.Module, temperature, rollout, inputs) -> str:
    """Everything that can change a call's answer: the model (role, its identity and adapter),
    sampling, the program (class and state: instructions, demos) and the inputs, whole (a
    pydantic input by its fields, not its ``str``)."""
    program_class = f"{type(program).__module__}.{type(program).__qualname__}"
    return stable_hash(
        to_jsonable_python(
            [model, temperature, rollout, program_class, program.dump_state(), inputs],
            fallback=repr,
        )
    )


class CallMemo:
    """Single-flight memo of identical LM calls across the units of one run: the first caller
    makes the call, the others wait for it and get its result with no usage."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._calls: dict[str, Future] = {}

    def once(self, key: str, call: Callable[[], tuple[Any, Usage]]) -> tuple[Any, Usage]:
        with self._lock:
            future = self._calls.get(key)
            first = future is None
            if first:
                future = self._calls[key] = Future()
        if not first:
            return future.result()[0], Usage()
        try:
            result = call()
        except BaseException as exc:
            future.set_exception(exc)
            raise
        future.set_result(result)
        return result


class ReliabilityTest(ABC):
    """Base class. ``scoring`` names the registered scoring kind that scores its probes'
    verdicts (``scoring/``, one file per kind):

    - ``invariance``: pass = verdict equals the target; consistency = equals the judge's own
      verdict on the source;
    - ``flip``: pass = verdict equals the (flipped) target; consistency = differs from the own
      source verdict;
    - ``stability``: k samples of the source; an item passes when all k agree;
    - ``ordinal``: generated items per scale bucket; exact match, CCC, Pearson, Spearman, MAE;
    - ``position``, ``injection``, ``cue``, ``polarity``: the bias probes.
    - ``criterion``: agent probes, each for one rubric criterion, scored on the judge's verdict
      for that criterion (pass = the target; consistency = the verdict moved from the judge's
      own verdict on the unperturbed transcript toward the target), per criterion.
    """

    __test__ = False  # not a pytest class

    name: ClassVar[str]
    scoring: ClassVar[str]
    uses_llm: ClassVar[bool] = True
    needs_labels: ClassVar[bool] = True
    # A pool-based test draws on the whole seed sample (e.g. few-shot examples per bucket)
    # instead of perturbing seeds one by one; ``--limit`` does not shrink its pool.
    pool_based: ClassVar[bool] = False
    Settings: ClassVar[type[TestSettings]] = TestSettings

    def __init__(self, settings: TestSettings | None = None):
        self.settings = settings or self.Settings()

    def check(self, items: Sequence[Item], scale: Scale) -> None:
        """Raise :class:`ConfigError` when the test cannot run on these items/scale. ``items``
        (as :meth:`units`') may be a list or the run's seeds read from disk as they are used
        (:class:`~assay.inputs.StoredItems`: ``len``, ``items[i]``, slices, iteration — again
        as often as needed —, no ``+`` or ``.sort()``)."""
        if self.needs_labels and any(it.expected is None for it in items):
            missing = sum(it.expected is None for it in items)
            raise ConfigError(
                f"test '{self.name}' needs reference labels; {missing} seed items have none"
            )

    def check_judges(self, judges: list[JudgeConfig]) -> None:
        """Raise :class:`ConfigError` when the test cannot measure these judges (checked with
        the config, before anything runs). Nothing by default."""
        return None

    def notes(self) -> list[str]:
        """What the report must say about how this test treated the judged items."""
        return []

    def programs(self) -> dict[str, dspy.Module]:
        """The test's DSPy programs by role (``generator``, ``validator``): their state is
        loaded from the settings' ``*_state`` and saved with the run. None by default."""
        return {}

    def units(self, items: Sequence[Item]) -> Iterable[Unit]:
        """Independent pieces of work; by default one per seed item, each made as it is read
        (a sequence holding none). A plug-in's are asked for once and kept for the run: a list,
        a sequence, or any iterable (made a list). A built-in test's are asked for again each
        time the harness goes through them, and are the same units each time."""
        return _UnitPerItem(self.name, items)

    @abstractmethod
    def generate(self, unit: Unit, ctx: GenerationContext) -> list[Probe | Dropped]:
        """Probes (and dropped attempts) for one unit. Must not raise on LM failures: a failed
        generation is a :class:`Dropped` with reason ``generation_failed``."""


class _UnitPerItem(Sequence[Unit]):
    """A test's units, one per item (``<test>:<item id>``, the item its source), each made as
    it is read: the items are not held here beyond their sequence's own."""

    def __init__(self, test: str, items: Sequence[Item]):
        self._test = test
        self._items = items

    def __len__(self) -> int:
        return len(self._items)

    @overload
    def __getitem__(self, index: int) -> Unit: ...

    @overload
    def __getitem__(self, index: slice) -> Sequence[Unit]: ...

    def __getitem__(self, index: int | slice) -> Unit | Sequence[Unit]:
        if isinstance(index, slice):
            return _UnitPerItem(self._test, self._items[index])
        return self._unit(self._items[index])

    def __iter__(self) -> Iterator[Unit]:
        return (self._unit(it) for it in self._items)

    def _unit(self, item: Item) -> Unit:
        return Unit(id=f"{self._test}:{item.id}", sources=[item])


_REGISTRY: Registry[type[ReliabilityTest]] = Registry(
    "reliability test",
    "assay.reliability.probes",
    unknown="unknown reliability test '{name}'; known tests: {known}",
)


def reliability_test(name: str) -> Callable[[type[ReliabilityTest]], type[ReliabilityTest]]:
    """Register a test class under ``name``."""
    return _REGISTRY.register(name)


def known_tests() -> list[str]:
    return _REGISTRY.names()


def registered_test(name: str) -> type[ReliabilityTest]:
    """The class registered as ``name`` (a built-in test is imported on first use)."""
    return _REGISTRY.get(name)


def get_test(name: str, settings: dict[str, Any] | None = None) -> ReliabilityTest:
    """An instance of the registered test ``name`` with validated settings."""
    cls = registered_test(name)
    try:
        return cls(cls.Settings.model_validate(settings or {}))
    except Exception as exc:  # pydantic ValidationError
        from pydantic import ValidationError

        from assay.inputs import first_error

        if isinstance(exc, ValidationError):
            raise ConfigError(f"tests.{name}: {first_error(exc)}") from None
        raise


T = TypeVar("T")


def plugin_call(test: ReliabilityTest, method: str, call: Callable[[], T]) -> T:
    """``call()`` — ``test``'s ``method`` (``check``, ``units``) — with what a plug-in test's own
    code raises as one line naming the plug-in (its file or module, the test's name) and the
    exception: a :class:`ConfigError`, as a plug-in judge kind's failure is one line. An assay
    error it raises on purpose (``check``'s :class:`ConfigError`) keeps its meaning; a built-in
    test's exception is a bug and keeps its traceback."""
    try:
        return call()
    except Exception as exc:
        where = plugin_where(type(test))
        if where is None or isinstance(exc, AssayError):
            raise
        raise ConfigError(
            f"plugin {where}: test '{test.name}' {method} raised {error_text(exc, 500)}"
        ) from exc
