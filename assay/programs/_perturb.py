"""Perturbers and validators as DSPy programs, declared like judges.

A reliability test that rewrites text holds a :class:`Perturber` (the rewrite) and a
:class:`ProbeValidator` (the check that the rewrite is what the test needs). Their LMs come from
the harness's ``generator`` / ``validator`` model specs at call time; their state (instructions,
demos) is saved with the run and can be loaded from a file or an MLflow URI, so a perturber can be
optimized and reused like a judge.
"""

from __future__ import annotations

from typing import Any

import dspy


class Perturber(dspy.Module):
    """Rewrites a response as its signature's instruction says; returns ``rewritten``."""

    def __init__(self, signature: type[dspy.Signature]):
        super().__init__()
        self.rewrite = dspy.Predict(signature)

    @property
    def instruction(self) -> str:
        return self.rewrite.signature.instructions

    def forward(self, **inputs: Any) -> dspy.Prediction:
        pred = self.rewrite(**inputs)
        return dspy.Prediction(rewritten=str(pred.get("rewritten") or "").strip())


class ProbeValidator(dspy.Module):
    """Checks a generated probe: ``ok`` (the signature's boolean output) and a ``reason``."""

    def __init__(self, signature: type[dspy.Signature], verdict_field: str):
        super().__init__()
        self.check = dspy.Predict(signature)
        self.verdict_field = verdict_field

    @property
    def instruction(self) -> str:
        return self.check.signature.instructions

    def forward(self, **inputs: Any) -> dspy.Prediction:
        pred = self.check(**inputs)
        return dspy.Prediction(ok=bool(pred.get(self.verdict_field)), reason=pred.get("reason"))
