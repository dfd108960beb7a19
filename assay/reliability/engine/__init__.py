"""The harness run: generation of probes by the registered tests (``_generation``), judging of
sources and probes (``_judging``), the run itself (``_harness``: config → probes → review →
judgments → metrics → report / MLflow), its ``metrics.json`` (``_harness_metrics``), re-reading a
finished run (``_rerun``) and its MLflow record (``_tracking``)."""

from assay.reliability.engine._harness import run_harness
from assay.reliability.engine._judging import judged_id
from assay.reliability.engine._tracking import judge_metrics

__all__ = ["judge_metrics", "judged_id", "run_harness"]
