"""The built-in reliability tests, one public file each (``@reliability_test("name")`` in
``name.py``; a run imports only the files of the tests it runs), and the bases they share in
private modules: whitespace format variants (``_whitespace``), inserted spans and cues
(``_insertion``, ``_cues``), LLM rewrites (``_rewrite``), agent transcript edits (``_agent``),
score buckets and diversity for generated items (``_buckets``, ``_diversity``)."""

from assay.reliability.probes._whitespace import FormatTest, variant_rng

__all__ = ["FormatTest", "variant_rng"]
