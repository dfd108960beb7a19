"""Review of a harness run's probes by people: the run's probe, seed and review files and the
review status of each probe (``_review``), the decisions' signed chain (``_review_chain``),
decisions recorded one at a time under the run's lock (``_review_decisions``), and review files
exported to and imported from YAML (``_review_files``)."""

from assay.reliability.review._review import (
    PROBES,
    REVIEWS,
    SEEDS,
    STATUSES,
    apply_reviews,
    read_probes,
    read_reviews,
    read_seeds,
    review_counts,
    run_scale,
)
from assay.reliability.review._review_chain import review_lock
from assay.reliability.review._review_decisions import (
    ReviewConflict,
    ReviewRecord,
    decision_history,
    record_decision,
    record_decisions,
)
from assay.reliability.review._review_files import export_review, import_review
from assay.reliability.review._review_run import FLAGS, ProbeView, ReviewRun

__all__ = [
    "FLAGS",
    "ProbeView",
    "ReviewRun",
    "PROBES",
    "REVIEWS",
    "SEEDS",
    "STATUSES",
    "ReviewConflict",
    "ReviewRecord",
    "apply_reviews",
    "decision_history",
    "export_review",
    "import_review",
    "read_probes",
    "read_reviews",
    "read_seeds",
    "record_decision",
    "record_decisions",
    "review_counts",
    "review_lock",
    "run_scale",
]
