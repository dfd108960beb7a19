"""``assay selftest``: judges with implanted defects, scripted, run through the harness; each
defect must be flagged by the test meant to catch it."""

from assay.reliability.selftest._selftest import run_selftest

__all__ = ["run_selftest"]
