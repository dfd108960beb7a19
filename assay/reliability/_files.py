"""The files of a harness run directory, by name (the run's own: ``config.yaml``, ``run.json``,
``metrics.json`` and the judgments are the run lifecycle's)."""

SEEDS = "seeds.jsonl"
PROBES = "probes.jsonl"
REVIEWS = "reviews.jsonl"
UNITS = "units.jsonl"

UNSEALED_READS = (UNITS, REVIEWS)
"""What a harness run's figures are scored from beyond the files its seal covers: its units
(dropped attempts, generation usage) and the review decisions people add after it, which a
re-run folds in."""
