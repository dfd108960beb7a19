"""Coverage of PPI++'s 95% normal interval on few labels: the simulation behind
``FEW_LABELLED`` (the note "only n human labels", docs/estimate.md).

1,000 items, of which ``n`` labelled uniformly at random, a 0/1 judge right with the given
accuracy; 4,000 seeded draws per row. Run by hand: ``python benchmarks/bench_ppi_few_labels.py``
(a few seconds). A draw whose standard error is 0 is left out: it prints no interval.
"""

from __future__ import annotations

import numpy as np
from scipy.stats import norm

from assay.metrics._ppi import _Sample, ppi_batched

DRAWS, ITEMS = 4000, 1000
SETTINGS = [(0.3, 0.9), (0.3, 0.7), (0.1, 0.9), (0.5, 0.8)]  # (prevalence, judge accuracy)
LABELS = [5, 10, 15, 20, 30, 40, 50]


def coverage(prevalence: float, accuracy: float, n: int) -> float:
    """The share of draws whose 95% PPI++ interval holds the mean of all the items' labels."""
    rng = np.random.default_rng(n)
    y = (rng.random((DRAWS, ITEMS)) < prevalence).astype(float)
    f = np.where(rng.random((DRAWS, ITEMS)) < accuracy, y, 1 - y)
    order = np.argsort(rng.random((DRAWS, ITEMS)), axis=1)
    lab, unl = order[:, :n], order[:, n:]
    s = _Sample(
        np.take_along_axis(y, lab, 1),
        np.take_along_axis(f, lab, 1),
        np.take_along_axis(f, unl, 1),
        np.ones(n),
        np.ones(ITEMS - n),
    )
    value, se, _ = ppi_batched(s)
    printed = se > 1e-12
    return float((np.abs(value - y.mean(1)) <= norm.ppf(0.975) * se)[printed].mean())


def main() -> None:
    print("prevalence accuracy " + " ".join(f"n={n:<4}" for n in LABELS))
    for prevalence, accuracy in SETTINGS:
        cells = " ".join(f"{coverage(prevalence, accuracy, n):.3f}" for n in LABELS)
        print(f"{prevalence:<10} {accuracy:<8} {cells}")


if __name__ == "__main__":
    main()
