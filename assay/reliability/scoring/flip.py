"""``flip``: the probe's target is the flipped label. Pass = the verdict equals that target;
consistency = the verdict moved from the judge's own verdict on the source toward that target
(on an ordinal scale: closer to it; a verdict that moved the other way is not consistent)."""

from __future__ import annotations

from assay.reliability.scoring._kind import scoring_kind
from assay.reliability.scoring.invariance import Invariance


@scoring_kind("flip")
class Flip(Invariance):
    moves = True
