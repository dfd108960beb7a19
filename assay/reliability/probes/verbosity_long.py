"""``verbosity_long``: an LLM expansion without new facts, validator-checked."""

from assay.reliability._registry import reliability_test
from assay.reliability.probes._rewrite import RewriteTest
from assay.signatures import Expand


@reliability_test("verbosity_long")
class VerbosityLongTest(RewriteTest):
    rewriter = Expand
    change = "make it about twice as long without adding any new fact or claim"
