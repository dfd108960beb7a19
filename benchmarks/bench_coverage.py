"""How often κ's interval holds the true κ: the percentile bootstrap against BCa.

Draws ``--reps`` samples of n items from a large population of (reference, judge) pairs with a
known Cohen's κ — a binary reference at ``--prevalence``, a judge right with probability
``--agreement`` — computes each sample's κ interval as ``assay.metrics.agreement_metrics``
does (BCa, the figure evaluate reports) and the plain percentile interval from the same
replicates, and prints, per n, the share of samples whose interval holds the population's κ
(with its Monte Carlo standard error) and the mean width. Not a test: a measured property of
the method, on this setting only.

    PYTHONPATH=$PWD python benchmarks/bench_coverage.py
    PYTHONPATH=$PWD python benchmarks/bench_coverage.py --sizes 20 40 --reps 1000 --agreement 0.8
"""

from __future__ import annotations

import argparse
import math
from functools import partial

import numpy as np

from assay.metrics import cohen_kappa
from assay.metrics._intervals import _percentile_ci, _replicates, _resample_indices, canonical_order
from assay.metrics._report import _kappa_defined, agreement_metrics


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[20, 40, 100])
    parser.add_argument("--reps", type=int, default=400)
    parser.add_argument("--prevalence", type=float, default=0.5)
    parser.add_argument("--agreement", type=float, default=0.7)
    parser.add_argument("--confidence", type=float, default=0.95)
    parser.add_argument("--seed", type=int, default=0)
    opts = parser.parse_args()
    rng = np.random.default_rng(opts.seed)
    big = 400_000
    ref_all = (rng.random(big) < opts.prevalence).astype(np.int64)
    cand_all = np.where(rng.random(big) < opts.agreement, ref_all, 1 - ref_all)
    truth = cohen_kappa(ref_all, cand_all, k=2)
    print(
        f"population κ {truth:.3f} (prevalence {opts.prevalence}, agreement {opts.agreement}); "
        f"{opts.reps} samples per n, {opts.confidence:.0%} intervals, 1,000 replicates each"
    )
    print(f"{'n':>5}  {'BCa covers':>12}  {'width':>6}  {'percentile covers':>18}  {'width':>6}")
    statistic = partial(_kappa_defined, k=2)
    for n in opts.sizes:
        held = {"bca": 0, "percentile": 0}
        widths: dict[str, list[float]] = {"bca": [], "percentile": []}
        counted = 0
        for rep in range(opts.reps):
            pick = rng.integers(0, big, size=n)
            ref, cand = ref_all[pick], cand_all[pick]
            kappa = agreement_metrics(ref, cand, kind="binary", k=2, seed=rep)["kappa_categorical"]
            if kappa.ci_low is None or math.isnan(kappa.value):
                continue  # κ undefined on this sample (a rater with one category)
            order = canonical_order(ref, cand, ranks=None)
            replicates = _replicates(
                statistic, [ref[order], cand[order]], _resample_indices(n, 1000, rep)
            )
            plain = _percentile_ci(replicates, opts.confidence)
            counted += 1
            for name, low, high in (
                ("bca", kappa.ci_low, kappa.ci_high),
                ("percentile", plain.low, plain.high),
            ):
                held[name] += low <= truth <= high
                widths[name].append(high - low)

        print(
            f"{n:>5}  {_cell(held['bca'], counted):>12}  {np.mean(widths['bca']):>6.3f}  "
            f"{_cell(held['percentile'], counted):>18}  {np.mean(widths['percentile']):>6.3f}"
        )


def _cell(hits: int, counted: int) -> str:
    """A coverage as its share and its Monte Carlo standard error."""
    share = hits / counted
    return f"{share:.3f} ± {math.sqrt(share * (1 - share) / counted):.3f}"


if __name__ == "__main__":
    main()
