"""What a run reads of its config: the fields every runner's config has
(:class:`assay.inputs.RunConfig` declares them; the run lifecycle sits left of the configs, so
it names them as a protocol)."""

from __future__ import annotations

from typing import Any, Protocol


class TrackingSettings(Protocol):
    """Where and whether a run logs to MLflow (``assay.inputs.TrackingConfig``)."""

    @property
    def enabled(self) -> bool: ...

    @property
    def uri(self) -> str | None: ...

    @property
    def experiment(self) -> str: ...


class RunSettings(Protocol):
    """A run's config as :meth:`Run.open <assay.runs.Run.open>` and
    :func:`~assay.runs.run_identity` read it: its name, where its directory goes, its
    plug-ins, its tracking, and its resolved form for ``config.yaml``."""

    @property
    def name(self) -> str: ...

    @property
    def output_dir(self) -> str: ...

    @property
    def plugins(self) -> list[str]: ...

    @property
    def tracking(self) -> TrackingSettings: ...

    def model_dump(self, *, mode: str = ...) -> dict[str, Any]: ...
