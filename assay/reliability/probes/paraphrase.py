"""``paraphrase``: an LLM rewording with the same meaning and facts, validator-checked."""

from assay.reliability._registry import reliability_test
from assay.reliability.probes._rewrite import RewriteTest
from assay.signatures import Paraphrase


@reliability_test("paraphrase")
class ParaphraseTest(RewriteTest):
    rewriter = Paraphrase
    change = "reword it with the same meaning, facts and quality"
