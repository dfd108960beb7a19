"""Calibration maps fitted on one labelled split and applied to another: isotonic regression,
Platt scaling (logistic regression on the logit) and the κ-optimal threshold.

A fitted map is a small frozen pydantic model — its kind and its parameters, e.g. the isotonic
breakpoints — so it can be stored in a judge config or a run directory as JSON and re-applied
without scikit-learn or a pickle: ``load_calibration(m.model_dump(mode="json"))`` rebuilds it.
The models load without NumPy (a judge config holds one); applying or fitting a map imports it.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, model_validator

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import ArrayLike, NDArray

CalibrationKind = Literal["isotonic", "platt", "threshold"]

# Platt scaling works on logit(p); probabilities are clipped to [eps, 1 − eps] first so that a
# judge's 0.0 and 1.0 (common after rounding of token probabilities) map to finite logits.
PLATT_EPS = 1e-6


class _Map(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    n_fit: int = Field(ge=1, description="items of the split the map was fitted on")

    def predict(self, y_prob: ArrayLike) -> NDArray[np.int64]:
        """0/1 verdicts: calibrated probability ≥ 0.5."""
        import numpy as np

        return (self.transform(y_prob) >= 0.5).astype(np.int64)

    def transform(self, y_prob: ArrayLike) -> NDArray[np.float64]:  # pragma: no cover
        raise NotImplementedError


class IsotonicMap(_Map):
    """A non-decreasing piecewise-linear map through the breakpoints ``(x[i], y[i])``, constant
    outside them: exactly ``sklearn.isotonic.IsotonicRegression(out_of_bounds="clip")``."""

    kind: Literal["isotonic"] = Field(default="isotonic", description="isotonic")
    x: tuple[float, ...] = Field(
        min_length=1, description="the fitted step function's breakpoints (probabilities)"
    )
    y: tuple[float, ...] = Field(
        min_length=1, description="the calibrated probability at each breakpoint"
    )

    @model_validator(mode="after")
    def _check(self) -> IsotonicMap:
        x, y = self.x, self.y
        if len(x) != len(y):
            raise ValueError(f"x and y must have the same length, got {len(x)} and {len(y)}")
        if not all(math.isfinite(v) for v in (*x, *y)):
            raise ValueError("isotonic breakpoints must be finite")
        if any(b <= a for a, b in zip(x, x[1:], strict=False)):
            raise ValueError("isotonic breakpoints x must be strictly increasing")
        if any(b < a for a, b in zip(y, y[1:], strict=False)) or min(y) < 0 or max(y) > 1:
            raise ValueError("isotonic values y must be non-decreasing and within [0, 1]")
        return self

    def transform(self, y_prob: ArrayLike) -> NDArray[np.float64]:
        """Calibrated probabilities by linear interpolation between the breakpoints."""
        import numpy as np

        from assay.metrics._validate import as_probabilities

        return np.interp(as_probabilities(y_prob, "y_prob"), self.x, self.y)


class PlattMap(_Map):
    """``p' = 1 / (1 + exp(−(slope·logit(clip(p, eps, 1 − eps)) + intercept)))``.

    ``C`` is the inverse L2 penalty it was fitted with (None: unpenalised), kept for the record.
    """

    kind: Literal["platt"] = Field(default="platt", description="platt")
    slope: float = Field(description="the logistic slope on the logit of the probability")
    intercept: float = Field(description="the logistic intercept")
    eps: float = Field(
        gt=0, lt=0.5, description="probabilities clipped to [eps, 1 − eps] before the logit"
    )
    C: float | None = Field(gt=0, description="the fit's inverse regularisation (null: none)")

    def transform(self, y_prob: ArrayLike) -> NDArray[np.float64]:
        """Calibrated probabilities through the fitted logistic curve."""
        import numpy as np
        from scipy.special import expit, logit  # imported on first use

        from assay.metrics._validate import as_probabilities

        p = np.clip(as_probabilities(y_prob, "y_prob"), self.eps, 1.0 - self.eps)

        return expit(self.slope * logit(p) + self.intercept)


class ThresholdMap(_Map):
    """A decision rule, not a probability map: verdict 1 when ``p ≥ threshold``, the threshold
    that maximised Cohen's κ on the fitting split (``kappa``), from :func:`fit_threshold`."""

    kind: Literal["threshold"] = Field(default="threshold", description="threshold")
    threshold: float = Field(description="verdict 1 when P(1) is at least this")
    kappa: float = Field(description="the κ the threshold reached on its fitting split")

    def predict(self, y_prob: ArrayLike) -> NDArray[np.int64]:
        """0/1 verdicts: ``p ≥ threshold``."""
        import numpy as np

        from assay.metrics._validate import as_probabilities

        return (as_probabilities(y_prob, "y_prob") >= self.threshold).astype(np.int64)

    def transform(self, y_prob: ArrayLike) -> NDArray[np.float64]:
        raise TypeError("a threshold map gives verdicts (predict), not calibrated probabilities")


CalibrationMap = Annotated[IsotonicMap | PlattMap | ThresholdMap, Field(discriminator="kind")]
_ADAPTER: TypeAdapter[IsotonicMap | PlattMap | ThresholdMap] = TypeAdapter(CalibrationMap)


def load_calibration(data: dict[str, Any]) -> IsotonicMap | PlattMap | ThresholdMap:
    """Rebuild a stored map from its JSON form (``model_dump(mode="json")``); the ``kind`` field
    says which. Invalid parameters raise pydantic's ValidationError (a ValueError)."""
    return _ADAPTER.validate_python(data)


def _both_classes(y: NDArray[np.float64], kind: str) -> None:
    import numpy as np

    if np.unique(y).size < 2:
        raise ValueError(
            f"fitting a {kind} map needs both labels 0 and 1 in the fitting split, "
            f"got only {int(y[0])}"
        )


def fit_calibration(
    y_true: ArrayLike,
    y_prob: ArrayLike,
    kind: CalibrationKind = "isotonic",
    *,
    C: float | None = 1.0,
    eps: float = PLATT_EPS,
) -> IsotonicMap | PlattMap | ThresholdMap:
    """Fit a calibration map on a labelled split: ``y_prob`` is the judge's P(positive verdict)
    (or an expected score rescaled to [0, 1]), ``y_true`` the reference outcome.

    - ``isotonic``: ``IsotonicRegression(y_min=0, y_max=1, out_of_bounds="clip")``; outcomes in
      [0, 1], so rescaled ordinal scores work too.
    - ``platt``: ``LogisticRegression(C=C)`` on ``logit(clip(p, eps, 1 − eps))`` with 0/1 labels.
      The default ``C=1.0`` (scikit-learn's) keeps the slope finite when the split is separable;
      ``C=None`` fits without penalty (Platt's maximum likelihood).
    - ``threshold``: the κ-optimal threshold of :func:`assay.metrics.fit_threshold` (0/1 labels).
    """
    import numpy as np

    from assay.metrics._calibration import _outcomes_and_probs, binary_outcomes
    from assay.metrics._threshold import fit_threshold

    if kind == "isotonic":
        from sklearn.isotonic import IsotonicRegression

        y, p = _outcomes_and_probs(y_true, y_prob)
        iso = IsotonicRegression(y_min=0.0, y_max=1.0, increasing=True, out_of_bounds="clip")
        iso.fit(p, y)
        return IsotonicMap(
            x=tuple(map(float, iso.X_thresholds_)),
            y=tuple(float(min(max(v, 0.0), 1.0)) for v in iso.y_thresholds_),
            n_fit=int(y.size),
        )
    if kind == "platt":
        from sklearn.linear_model import LogisticRegression

        if C is not None and not (C > 0 and math.isfinite(C)):
            raise ValueError(f"C must be a positive finite number or None, got {C!r}")
        if not 0.0 < eps < 0.5:
            raise ValueError(f"eps must be in (0, 0.5), got {eps!r}")
        y, p = binary_outcomes(y_true, y_prob)
        _both_classes(y, kind)
        from scipy.special import logit  # scipy: imported on first use

        features = logit(np.clip(p, eps, 1.0 - eps))[:, None]
        model = LogisticRegression(C=math.inf if C is None else C, max_iter=1000)
        model.fit(features, y.astype(np.int64))
        return PlattMap(
            slope=float(model.coef_[0, 0]),
            intercept=float(model.intercept_[0]),
            eps=eps,
            C=C,
            n_fit=int(y.size),
        )
    if kind == "threshold":
        y, p = binary_outcomes(y_true, y_prob)
        _both_classes(y, kind)
        threshold, kappa = fit_threshold(p, y.astype(np.int64))
        return ThresholdMap(threshold=threshold, kappa=kappa, n_fit=int(y.size))
    raise ValueError(f"kind must be 'isotonic', 'platt' or 'threshold', got {kind!r}")
