"""``assay selftest``: judges with implanted defects, scripted, run through the harness; each
defect must be flagged by the test meant to catch it."""

from assay.reliability.selftest._selftest import SelftestResult, run_selftest
from assay.reliability.selftest._suite import JudgeFlags, TestFlags

__all__ = ["JudgeFlags", "SelftestResult", "TestFlags", "run_selftest"]
