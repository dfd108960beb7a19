"""``verbosity_short``: an LLM condensation keeping every fact, validator-checked."""

from assay.reliability._registry import reliability_test
from assay.reliability.probes._rewrite import RewriteTest
from assay.signatures import Condense


@reliability_test("verbosity_short")
class VerbosityShortTest(RewriteTest):
    rewriter = Condense
    change = "make it about half as long while keeping every fact and claim"
