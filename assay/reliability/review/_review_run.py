"""A harness run directory read back, as its report and the review app (:mod:`assay.web`) see
it: probes with their current review state, their seeds, and every judge's verdicts on the
source and on the probe.

Files are read again when they change (size and modification time), so decisions made by
other reviewers and judgments written by a running harness show up on the next request.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Container
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from assay import _json
from assay._yaml import load as load_yaml
from assay.errors import DataError, RunError
from assay.reliability._probe import Probe, criterion_verdict, judged_id
from assay.reliability.review._review import (
    PROBES,
    SEEDS,
    apply_reviews,
    iter_probes,
    read_probes,
    read_reviews,
    read_seeds,
    review_counts,
)
from assay.scale import Scale
from assay.types import Item, Judgment

FLAGS = {
    "disagrees": "a judge disagrees with the target",
    "changed": "a judge's verdict changed vs the source",
}
INTENT_KEYS = ("intent", "planner_intent", "plan", "goal")  # agent planners' notes in probe.meta


@dataclass
class Verdict:
    """One judge's verdicts on a probe and on its source; ``probe_score`` and ``source_score``
    are the verdicts the probe is about: on its rubric criterion for a probe made for one."""

    judge: str
    probe: Judgment | None
    source: Judgment | None
    on_generated: bool = False  # the probe verdict is on the text before a later edit
    probe_score: int | None = None
    source_score: int | None = None

    @classmethod
    def of(
        cls, judge: str, probe: Probe, on_probe: Judgment | None, on_source: Judgment | None, **kw
    ) -> Verdict:
        """``judge``'s verdicts on ``probe`` and on its source, scored as the probe asks."""
        return cls(
            judge,
            on_probe,
            on_source,
            probe_score=None if on_probe is None else criterion_verdict(probe, on_probe),
            source_score=None if on_source is None else criterion_verdict(probe, on_source),
            **kw,
        )


@dataclass
class ProbeView:
    probe: Probe
    seed: Item | None
    version: int  # number of decisions recorded for the probe
    history: list[dict[str, Any]]
    verdicts: list[Verdict] = field(default_factory=list)

    @property
    def criterion(self) -> str | None:
        """The rubric criterion the probe was made for (agent probes), or None."""
        return self.probe.meta.get("criterion") or None

    @property
    def disagrees(self) -> bool:
        t = self.probe.target
        return t is not None and any(
            v.probe_score is not None and v.probe_score != t for v in self.verdicts
        )

    @property
    def changed(self) -> bool:
        """A judge's verdict on the probe is not its verdict on the source (on the probe's
        criterion, for a probe made for one)."""
        return any(
            v.probe_score is not None
            and v.source_score is not None
            and v.probe_score != v.source_score
            for v in self.verdicts
        )

    @property
    def intent(self) -> str | None:
        for key in INTENT_KEYS:
            value = self.probe.meta.get(key)
            if value:
                return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
        return None


def _signature(path: Path) -> tuple[int, int] | None:
    try:
        st = path.stat()
    except FileNotFoundError:
        return None
    return st.st_mtime_ns, st.st_size


def _read_judgments(path: Path, ids: Container[str] | None = None) -> dict[str, Judgment]:
    """A judgments file by item id (those in ``ids`` alone when given; every line is
    checked); a torn last line (a harness being killed) is skipped."""
    out: dict[str, Judgment] = {}
    for lineno, record in _json.records(path):
        try:
            j = Judgment.model_validate(record)
        except ValueError:
            raise DataError("not a judgment", path=path, row=lineno) from None
        if ids is None or j.item_id in ids:
            out.setdefault(j.item_id, j)
    return out


def _judgment_files(run_dir: Path) -> dict[str, Path]:
    """Each judge's judgments file by judge name: the files of the run's judges as its last
    finish named them in ``metrics.json`` — a file a judge's earlier config (another rubric,
    another price) left in the directory is no judge of the run —, else (a run not finished,
    or finished before the files were named) every file, by the file name without its config
    hash (a second config of the same judge by its whole file name)."""
    named = _named_judgment_files(run_dir)
    if named is not None:
        return named
    out: dict[str, Path] = {}
    for f in sorted((run_dir / "judgments").glob("*.jsonl")):
        name = f.stem.rsplit("-", 1)[0] if "-" in f.stem else f.stem
        out[f.stem if name in out else name] = f
    return out


def _named_judgment_files(run_dir: Path) -> dict[str, Path] | None:
    """The judgments file of each judge ``metrics.json`` names (None: none named, or one
    missing)."""
    try:
        judges = json.loads((run_dir / "metrics.json").read_text(encoding="utf-8"))["judges"]
        named = {name: run_dir / j["judgments"] for name, j in judges.items()}
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return named if named and all(f.is_file() for f in named.values()) else None


def _views(
    reviewed: list[Probe],
    reviews: list[dict[str, Any]],
    seeds: dict[str, Item],
    judgments: dict[str, dict[str, Judgment]],
) -> list[ProbeView]:
    """Probes with the review decisions applied (``reviewed``), each with its decisions, its
    seed and every judge's verdicts."""
    by_probe: dict[str, list[dict[str, Any]]] = {}
    for r in reviews:
        by_probe.setdefault(r["probe_id"], []).append(r)
    out = []
    for probe in reviewed:
        history = by_probe.get(probe.id, [])
        view = ProbeView(probe, seeds.get(probe.source_id), len(history), history)
        for judge, js in judgments.items():
            verdict = js.get(judged_id(probe))
            on_generated = False
            if verdict is None and probe.review.status == "edited":
                verdict, on_generated = js.get(probe.id), probe.id in js
            source = js.get(f"source:{probe.source_id}")
            view.verdicts.append(
                Verdict.of(judge, probe, verdict, source, on_generated=on_generated)
            )
        out.append(view)
    return out


class ReviewRun:
    """The probes of one harness run, ready to review. Raises a one-line error (RunError or
    DataError) when the directory is not a harness run or a file in it cannot be read."""

    def __init__(self, run_dir: Path, *, read_now: bool = True):
        self.path = Path(run_dir).resolve()
        if not self.path.is_dir():
            raise RunError(f"{run_dir}: not a directory")
        try:
            config = load_yaml((self.path / "config.yaml").read_text(encoding="utf-8"))
            self.scale = Scale.parse(config["scale"])
        except (OSError, KeyError, TypeError, ValueError, yaml.YAMLError):
            raise RunError(
                f"{run_dir}: not a harness run directory (no config.yaml with a scale)"
            ) from None
        for name in (PROBES, SEEDS):
            if not (self.path / name).is_file():
                raise RunError(f"{run_dir}: not a harness run directory (no {name})")
        self.name = str(config.get("name") or self.path.name)
        self.required = bool((config.get("review") or {}).get("required"))
        self._cache: dict[str, tuple[Any, Any]] = {}
        if read_now:  # read everything once now: a corrupt file is reported at start
            apply_reviews(list(self.probes().values()), self.reviews())
            self.seeds()
            self.judgments()

    # -- cached file reads ---------------------------------------------------------------------
    def _cached(self, key: str, paths: list[Path], load):
        sig = tuple(_signature(p) for p in paths)
        hit = self._cache.get(key)
        if hit is not None and hit[0] == sig:
            return hit[1]
        value = load()
        self._cache[key] = (sig, value)
        return value

    def probes(self) -> dict[str, Probe]:
        """The generated probes, as written by the harness, by id in file order."""
        path = self.path / PROBES
        return self._cached("probes", [path], lambda: {p.id: p for p in read_probes(self.path)})

    def seeds(self) -> dict[str, Item]:
        return self._cached("seeds", [self.path / SEEDS], lambda: read_seeds(self.path))

    def reviews(self) -> list[dict[str, Any]]:
        path = self.path / "reviews.jsonl"
        return self._cached("reviews", [path], lambda: read_reviews(self.path, self.scale))

    def history(self, probe_id: str) -> list[dict[str, Any]]:
        """One probe's decisions, oldest first (its version is their number)."""
        return [r for r in self.reviews() if r["probe_id"] == probe_id]

    def judgments(self) -> dict[str, dict[str, Judgment]]:
        """Judgments by judge (the file name without its config hash) and item id."""
        files = _judgment_files(self.path)

        def load() -> dict[str, dict[str, Judgment]]:
            return {name: _read_judgments(f) for name, f in files.items()}

        paths = list(files.values())
        return self._cached("judgments:" + ",".join(f.name for f in paths), paths, load)

    # -- views ---------------------------------------------------------------------------------
    def views(self) -> list[ProbeView]:
        """Every probe with its current state, in the order the harness wrote them."""
        reviews = self.reviews()
        reviewed = apply_reviews(list(self.probes().values()), reviews)
        return _views(reviewed, reviews, self.seeds(), self.judgments())

    def some_views(self, keep: Callable[[Probe], bool]) -> tuple[list[ProbeView], int]:
        """The views of the probes ``keep`` says yes to (asked of each in file order), and how
        many probes there are: the files read line by line and every line checked, but only what
        those probes need kept (their seeds, their verdicts and their sources'): the memory of
        the probes kept, whatever the run's size. Not cached."""
        kept: list[Probe] = []
        total = 0
        for probe in iter_probes(self.path):
            total += 1
            if keep(probe):
                kept.append(probe)
        reviews = self.reviews()
        reviewed = apply_reviews(list(kept), reviews)  # an edited probe is judged by a new id
        ids = {i for p in reviewed for i in (p.id, judged_id(p), f"source:{p.source_id}")}
        seeds = read_seeds(self.path, {p.source_id for p in kept})
        judgments = {n: _read_judgments(f, ids) for n, f in _judgment_files(self.path).items()}
        return _views(reviewed, reviews, seeds, judgments), total

    def counts(self, views: list[ProbeView]) -> dict[str, int]:
        return review_counts(v.probe for v in views)

    @staticmethod
    def select(
        views: list[ProbeView], *, test: str = "", status: str = "", flag: str = ""
    ) -> list[ProbeView]:
        """The queue under the given filters (empty: no filter)."""
        out = views
        if test:
            out = [v for v in out if v.probe.test == test]
        if status:
            out = [v for v in out if v.probe.review.status == status]
        if flag == "disagrees":
            out = [v for v in out if v.disagrees]
        elif flag == "changed":
            out = [v for v in out if v.changed]
        return out

    def label(self, score: int | None) -> str:
        if score is None:
            return "—"
        name = self.scale.label_of(score)
        return f"{name} ({score})" if name is not None else str(score)
