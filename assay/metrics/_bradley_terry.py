"""Systems ranked from pairwise verdicts: Bradley–Terry strengths with a first-position effect,
cyclic triads of the pairwise majority, and each judge's agreement with the others' ranking.

The model: in a comparison of systems ``x`` and ``y`` shown in that order by judge ``j``,

    P(the first shown wins) = σ(s_x − s_y + γ_j)

with ``s`` the strengths and ``γ_j`` judge ``j``'s first-position (order) effect, estimated in the
same fit (a comparison whose order is unknown has no ``γ`` term: P(x wins) = σ(s_x − s_y)). A
tie counts as half a win to each side (the likelihood's ``½ log p + ½ log(1 − p)``), not
Davidson's tie parameter. Strengths are fitted by maximum likelihood (Newton's method on the
logistic likelihood), centred to sum 0 within each set of systems connected by comparisons —
systems never linked by a chain of comparisons have no common scale, so each connected set is
ranked on its own. ``alpha > 0`` adds choix's penalty ``alpha · Σ s²`` (a Gaussian prior), which
gives finite strengths where the maximum likelihood has none (a system that won every comparison
it was in); ``alpha = 0`` is the plain maximum likelihood and refuses such data in one line.
A judge's ``γ`` is identified only by pairs shown both ways round (or orders that do not line up
with a shift of the strengths): when the design's rank falls short of its parameters — every
pair a judge saw shown in one order only — the fit is refused in one line naming the judge and
the systems, with or without a penalty, rather than split arbitrarily between ``γ`` and the
strengths.

Intervals are Wald intervals from the observed Fisher information (the inverse Hessian of the
penalised log-likelihood at the estimate, projected on the centred strengths): they assume the
comparisons independent given the strengths. Votes that share an item — several judges on the
same pair of answers, an item's epochs — are not: given ``clusters`` (one id per comparison),
where one holds two comparisons the covariance is the cluster-robust sandwich ``H⁻¹ (Σ_c g_c
g_cᵀ) H⁻¹`` (``g_c`` the sum of cluster ``c``'s score contributions ``(y − p) x``; Liang and
Zeger, without a small-sample factor — statsmodels' ``cov_type="cluster"`` of the same logistic
fit), each variance the wider of it and the model's own (the sandwich alone is narrower where
a system's votes are near-certain: a system that never lost leaves residuals near 0), and the
interval is named so.

A judge's reliability, when several judges vote, is its agreement with the ranking the *other*
judges' votes give: the model refitted without that judge, and the share of its decisive votes
that picked the system with the higher strength there (Wilson interval). Measured against a
ranking it took no part in, one judge cannot agree with itself.
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from itertools import combinations

import numpy as np
from numpy.typing import NDArray

from assay.metrics._cluster import _cluster_index, shared_clusters
from assay.metrics._intervals import _z, wilson_interval

WALD = "Wald (observed Fisher information)"
HALF_WINS = "half a win to each side"
MAX_ITERATIONS = 200
_DIVERGED = 30.0  # |s| or |γ| beyond this: σ within 1e-13 of 0 or 1, the estimate is running off


@dataclass(frozen=True)
class Strength:
    """One system's strength (centred within its connected set) with its Wald interval, its rank
    there (1 = strongest; systems of equal strength share one, the next rank skipping them),
    and its record over every vote (ties counted apart)."""

    system: str
    strength: float
    se: float
    ci_low: float
    ci_high: float
    rank: int
    component: int  # which connected set (0 = the largest); strengths compare only within one
    wins: int
    losses: int
    ties: int


@dataclass(frozen=True)
class OrderEffect:
    """A judge's first-position effect ``γ`` (log-odds that the first shown wins, beyond the
    strengths) with its Wald interval; ``first_share``: the raw share of its decisive votes
    with a known order that went to the first shown."""

    judge: str
    gamma: float
    se: float
    ci_low: float
    ci_high: float
    ordered: int  # its comparisons whose order is known
    first_share: float | None


@dataclass(frozen=True)
class JudgeAgreement:
    """A judge's votes, and how often its decisive votes picked the stronger system of the model
    fitted on the other judges' votes (None, with a note, where that cannot be measured)."""

    judge: str
    votes: int
    ties: int
    agreement: float | None
    ci_low: float | None
    ci_high: float | None
    n: int  # decisive votes on pairs the others' model ranks
    cyclic_triads: int  # of its own pairwise majority
    triads: int
    note: str | None = None


@dataclass(frozen=True)
class CyclicTriads:
    """Transitivity violations of the pairwise majority: of the ``triads`` sets of three
    systems whose three pairs each have a majority winner, ``cyclic`` go round (x > y > z > x);
    ``examples``: up to five of them, each as (x, y, z) with x > y > z > x."""

    triads: int
    cyclic: int
    examples: tuple[tuple[str, str, str], ...]


@dataclass(frozen=True)
class BradleyTerry:
    """The fit: strengths by component then rank, order effects per judge with ordered votes,
    per-judge agreement, the majority's cyclic triads, and what was assumed."""

    strengths: tuple[Strength, ...]
    order_effects: tuple[OrderEffect, ...]
    judges: tuple[JudgeAgreement, ...]
    triads: CyclicTriads
    n_comparisons: int
    n_systems: int
    n_components: int
    log_likelihood: float
    iterations: int
    alpha: float
    confidence: float
    interval: str = WALD
    ties: str = HALF_WINS

    def strength_of(self, system: str) -> Strength:
        return next(s for s in self.strengths if s.system == system)


# -- inputs ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Data:
    """Validated comparisons as indices: systems ``x`` (``a``) and ``y`` (``b``), ``y`` the
    outcome for ``a`` (1 won, 0 lost, ½ tie), ``order`` +1 when ``a`` was shown first, −1 when
    ``b`` was, 0 unknown, and the judge of each."""

    systems: list[str]
    judges: list[str]
    a: NDArray[np.intp]
    b: NDArray[np.intp]
    y: NDArray[np.float64]
    order: NDArray[np.float64]
    judge: NDArray[np.intp]
    cluster: NDArray[np.intp] | None = None  # each comparison's cluster, where one holds two

    def subset(self, keep: NDArray[np.bool_]) -> _Data:
        return _Data(
            self.systems,
            self.judges,
            self.a[keep],
            self.b[keep],
            self.y[keep],
            self.order[keep],
            self.judge[keep],
            None if self.cluster is None else self.cluster[keep],
        )


def _names(values: Sequence[Hashable], what: str) -> list[str]:
    out = []
    for i, v in enumerate(values):
        if v is None or (isinstance(v, str) and not v.strip()):
            raise ValueError(f"{what}[{i}] is empty: every comparison names its systems")
        out.append(str(v))
    return out


def _data(
    a: Sequence[Hashable],
    b: Sequence[Hashable],
    winner: Sequence[Hashable | None],
    first: Sequence[Hashable | None] | None,
    judges: Sequence[Hashable] | None,
    clusters: Sequence[Hashable] | None = None,
) -> _Data:
    n = len(a)
    named = (("b", b), ("winner", winner), ("first", first), ("judges", judges))
    for name, seq in (*named, ("clusters", clusters)):
        if seq is not None and len(seq) != n:
            raise ValueError(f"a has {n} comparisons, {name} has {len(seq)}")
    if n == 0:
        raise ValueError("no comparisons: a ranking needs at least one")
    xs, ys = _names(a, "a"), _names(b, "b")
    systems = sorted(set(xs) | set(ys))
    index = {s: k for k, s in enumerate(systems)}
    who = [str(j) for j in judges] if judges is not None else ["judge"] * n
    judge_names = sorted(set(who))
    outcome = np.empty(n)
    order = np.zeros(n)
    for i, (x, y) in enumerate(zip(xs, ys, strict=True)):
        if x == y:
            raise ValueError(f"comparison {i}: '{x}' against itself")
        w = winner[i]
        if w is None:
            outcome[i] = 0.5
        elif str(w) in (x, y):
            outcome[i] = 1.0 if str(w) == x else 0.0
        else:
            raise ValueError(f"comparison {i}: winner '{w}' is neither '{x}' nor '{y}' (None: tie)")
        f = first[i] if first is not None else None
        if f is not None:
            if str(f) not in (x, y):
                raise ValueError(f"comparison {i}: first '{f}' is neither '{x}' nor '{y}'")
            order[i] = 1.0 if str(f) == x else -1.0
    jindex = {j: k for k, j in enumerate(judge_names)}
    cluster = None
    if clusters is not None:
        ids = shared_clusters([str(c) for c in clusters], np.arange(n))
        cluster = None if ids is None else _cluster_index(ids, n)[0]
    return _Data(
        systems,
        judge_names,
        np.array([index[x] for x in xs], dtype=np.intp),
        np.array([index[y] for y in ys], dtype=np.intp),
        outcome,
        order,
        np.array([jindex[j] for j in who], dtype=np.intp),
        cluster,
    )


def _check(alpha: float, confidence: float) -> None:
    if isinstance(alpha, bool) or not isinstance(alpha, int | float) or not alpha >= 0:
        raise ValueError(f"alpha must be a number ≥ 0 (0: plain maximum likelihood), got {alpha!r}")
    if not math.isfinite(alpha):
        raise ValueError(f"alpha must be finite, got {alpha!r}")
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be strictly between 0 and 1, got {confidence!r}")


# -- the fit --------------------------------------------------------------------------------


def _components(n: int, a: NDArray[np.intp], b: NDArray[np.intp]) -> NDArray[np.int32]:
    """Each system's connected set, numbered by size (0 = the largest; ties by first system)."""
    from scipy.sparse import coo_matrix
    from scipy.sparse.csgraph import connected_components

    graph = coo_matrix((np.ones(len(a)), (a, b)), shape=(n, n))
    _, labels = connected_components(graph, directed=False)
    sizes = Counter(labels.tolist())
    order = sorted(sizes, key=lambda c: (-sizes[c], int(np.argmax(labels == c))))
    renumber = {c: k for k, c in enumerate(order)}
    return np.array([renumber[c] for c in labels], dtype=np.int32)


def _never_beaten(d: _Data, component: NDArray[np.int32]) -> str | None:
    """Why the maximum-likelihood strengths do not exist, or None: within a connected set, a
    group of systems that never lost (nor tied) to the rest of the set could be made infinitely
    stronger (or weaker) — the directed graph of "won or tied against" must be strongly
    connected in every set."""
    from scipy.sparse import coo_matrix
    from scipy.sparse.csgraph import connected_components

    n = len(d.systems)
    won = np.where(d.y >= 0.5, d.a, d.b), np.where(d.y >= 0.5, d.b, d.a)
    tied = d.y == 0.5
    src = np.concatenate([won[0], d.b[tied]])
    dst = np.concatenate([won[1], d.a[tied]])
    graph = coo_matrix((np.ones(len(src)), (src, dst)), shape=(n, n)).tocsr()
    _, strong = connected_components(graph, directed=True, connection="strong")
    crossing = strong[src] != strong[dst]
    beaten = set(strong[dst[crossing]].tolist())  # groups that lost (or tied) to another group
    for c in np.unique(component):
        members = np.flatnonzero(component == c)
        groups = sorted(set(strong[members].tolist()))
        unbeaten = [g for g in groups if g not in beaten]
        if len(groups) > 1 and unbeaten:
            inside = np.flatnonzero(strong == unbeaten[0])
            names = sorted(d.systems[k] for k in inside)
            others = sorted(d.systems[k] for k in members if strong[k] != unbeaten[0])
            return (
                f"{_some(names)} never lost nor tied against the rest of "
                f"{'its' if len(names) == 1 else 'their'} connected set ({_some(others)}), "
                f"which never beat {'it' if len(names) == 1 else 'them'}: the strengths have no "
                "finite maximum-likelihood estimate"
            )
    return None


def _some(names: list[str]) -> str:
    """Up to three names, and how many more."""
    more = f" and {len(names) - 3} more" if len(names) > 3 else ""
    return ", ".join(names[:3]) + more


def _runaway_order(d: _Data) -> str | None:
    """A judge whose decisive votes with a known order all went to one position, and no tie:
    its order effect has no finite estimate."""
    for k, name in enumerate(d.judges):
        mine = (d.judge == k) & (d.order != 0)
        if not mine.any():
            continue
        first_won = np.where(d.order[mine] > 0, d.y[mine], 1.0 - d.y[mine])
        if np.all(first_won == 1.0) or np.all(first_won == 0.0):
            where = "first" if first_won[0] == 1.0 else "second"
            return (
                f"judge '{name}' gave every one of its {int(mine.sum())} ordered votes to the "
                f"response shown {where}: its order effect has no finite estimate"
            )
    return None


def _confounded(
    d: _Data, x: NDArray[np.float64], basis: NDArray[np.float64], judge_of: dict[int, int]
) -> str | None:
    """Why the votes cannot tell some order effects from the strengths, or None: the design
    (one row per comparison: strength contrasts, then the judges' order-effect columns) has
    fewer independent columns than parameters — e.g. every pair a judge saw was shown in one
    order only, so a first-position advantage and a stronger first system predict the same
    votes. The check is the design's numerical rank; the judges and systems named are those
    the design's null space moves (``judge_of``: order-effect column → judge index)."""
    rows = np.unique(x, axis=0)
    if rows.shape[0] < x.shape[1]:
        rows = np.vstack([rows, np.zeros((x.shape[1] - rows.shape[0], x.shape[1]))])
    upper = np.linalg.qr(rows, mode="r")  # the same null space as x, square
    _, sv, vt = np.linalg.svd(upper)
    tol = sv.max(initial=0.0) * max(rows.shape) * np.finfo(float).eps
    null = vt[int(np.sum(sv > tol)) :]
    if not null.size:
        return None
    free = basis.shape[1]
    moved = np.max(np.abs(null), axis=0) > 1e-8
    judges = [d.judges[judge_of[c]] for c in sorted(judge_of) if moved[c]]
    systems = sorted(
        d.systems[k]
        for k in np.flatnonzero(np.max(np.abs(basis @ null[:, :free].T), axis=1) > 1e-8)
    )
    whose = ", ".join(f"'{j}'" for j in judges)
    return (
        f"the votes cannot tell the order effect of judge{'s' if len(judges) > 1 else ''} "
        f"{whose} from the strengths of {_some(systems)}: in the orders the pairs were shown, a "
        "first-position advantage and stronger first-shown systems predict the same votes "
        "(each pair shown in one order only); show pairs in both orders, or fit without an "
        "order effect (any first-position advantage is then folded into the strengths)"
    )


def _separated(
    d: _Data,
    x: NDArray[np.float64],
    basis: NDArray[np.float64],
    judge_of: dict[int, int],
    strengths_free: bool,
) -> str | None:
    """Why the likelihood has no maximum although no system went unbeaten and no judge gave
    every ordered vote to one position, or None. Some votes can *separate* the parameters in
    combination — e.g. strengths and an order effect that together put every decisive vote on
    the side it went and leave every tie even — and then moving along that direction raises the
    likelihood forever: Newton's method stops somewhere along it (strengths of ±15 with standard
    errors of 10⁶) and that point means nothing. The check is the linear programme of Albert and
    Anderson (1984): a direction ``δ`` with ``x·δ ≥ 0`` on every vote the first-listed system
    won, ``≤ 0`` on every one it lost, ``= 0`` on every tie, strictly somewhere, exists exactly
    when the maximum does not. ``strengths_free``: the strengths may move (no prior; a prior
    bounds them, so only the order effects are checked)."""
    from scipy.optimize import linprog

    rows, inverse = np.unique(x, axis=0, return_inverse=True)
    inverse = inverse.ravel()
    won = np.bincount(inverse, weights=(d.y == 1.0), minlength=len(rows)) > 0
    lost = np.bincount(inverse, weights=(d.y == 0.0), minlength=len(rows)) > 0
    tied = np.bincount(inverse, weights=(d.y > 0.0) & (d.y < 1.0), minlength=len(rows)) > 0
    even = tied | (won & lost)
    sign = np.where(even, 0.0, np.where(won, 1.0, -1.0))
    one_way = sign != 0.0
    free = basis.shape[1]
    bounds = [(-1.0, 1.0) if strengths_free else (0.0, 0.0)] * free + [(-1.0, 1.0)] * (
        x.shape[1] - free
    )
    if all(b == (0.0, 0.0) for b in bounds) or not one_way.any():
        return None
    answer = linprog(
        -(sign[one_way] @ rows[one_way]),
        A_ub=-(sign[one_way, None] * rows[one_way]),
        b_ub=np.zeros(int(one_way.sum())),
        A_eq=rows[even] if even.any() else None,
        b_eq=np.zeros(int(even.sum())) if even.any() else None,
        bounds=bounds,
        method="highs",
    )
    if answer.status != 0 or -answer.fun <= 1e-7:
        return None
    direction = answer.x
    judges = [d.judges[judge_of[c]] for c in sorted(judge_of) if abs(direction[c]) > 1e-7]
    systems = sorted(d.systems[k] for k in np.flatnonzero(np.abs(basis @ direction[:free]) > 1e-7))
    moved = []
    if systems:
        moved.append(f"the strengths of {_some(systems)}")
    if judges:
        whose = ", ".join(f"'{j}'" for j in judges)
        moved.append(f"the order effect of judge{'s' if len(judges) > 1 else ''} {whose}")
    return (
        f"the votes separate {' and '.join(moved)}: moved together, they make no vote less "
        "likely and some more likely, so the likelihood has no maximum (no finite estimate)"
    )


def _basis(component: NDArray[np.int32]) -> NDArray[np.float64]:
    """An orthonormal basis (systems × free parameters) of the strengths summing to 0 within
    each connected set: strengths = basis @ θ."""
    n = len(component)
    cols = []
    for c in np.unique(component):
        members = np.flatnonzero(component == c)
        k = len(members)
        # Helmert contrasts: column m is (1, …, 1, −m, 0, …) / √(m(m+1)) on the set's members
        for m in range(1, k):
            col = np.zeros(n)
            col[members[:m]] = 1.0
            col[members[m]] = -float(m)
            cols.append(col / math.sqrt(m * (m + 1)))
    return np.column_stack(cols) if cols else np.zeros((n, 0))


def _design(d: _Data, basis: NDArray[np.float64], gamma_of: dict[int, int]) -> NDArray[np.float64]:
    """One row per comparison: (e_a − e_b) on the strength parameters, then ±1 in its judge's
    order-effect column when the order is known."""
    m = len(d.y)
    diff = basis[d.a] - basis[d.b]
    orders = np.zeros((m, len(gamma_of)))
    for k, col in gamma_of.items():
        rows = d.judge == k
        orders[rows, col] = d.order[rows]
    return np.hstack([diff, orders])


def _log_likelihood(eta: NDArray[np.float64], y: NDArray[np.float64]) -> float:
    return float(-(y * np.logaddexp(0.0, -eta) + (1.0 - y) * np.logaddexp(0.0, eta)).sum())


def _newton(
    x: NDArray[np.float64], y: NDArray[np.float64], penalty: NDArray[np.float64]
) -> tuple[NDArray[np.float64], NDArray[np.float64], float, int]:
    """The penalised maximum-likelihood parameters of the logistic model ``P = σ(x @ θ)`` with
    outcomes ``y`` in [0, 1] (penalty ``θ' diag(penalty) θ``), the Hessian of the negative
    objective there, the log-likelihood, and the iterations taken; a ValueError when Newton's
    method has not converged (data that drive a parameter to infinity)."""
    from scipy.special import expit

    theta = np.zeros(x.shape[1])

    def objective(t: NDArray[np.float64]) -> float:
        return _log_likelihood(x @ t, y) - float(penalty @ (t * t))

    current, iterations = objective(theta), 0
    while iterations < MAX_ITERATIONS:
        iterations += 1
        p = expit(x @ theta)
        grad = x.T @ (y - p) - 2.0 * penalty * theta
        hess = (x * (p * (1.0 - p))[:, None]).T @ x + np.diag(2.0 * penalty)
        step = np.linalg.lstsq(hess, grad, rcond=None)[0]
        t = 1.0
        while True:
            candidate = theta + t * step
            value = objective(candidate)
            if value >= current - 1e-12 or t < 1e-10:
                break
            t /= 2.0
        theta, moved, current = candidate, float(np.max(np.abs(t * step), initial=0.0)), value
        if moved < 1e-10 or float(np.max(np.abs(grad), initial=0.0)) < 1e-12:
            break
    else:
        raise ValueError(
            f"the fit did not converge in {MAX_ITERATIONS} Newton steps (the votes nearly "
            "separate the systems); a prior (alpha > 0) gives finite strengths"
        )
    p = expit(x @ theta)
    hess = (x * (p * (1.0 - p))[:, None]).T @ x + np.diag(2.0 * penalty)
    return theta, hess, _log_likelihood(x @ theta, y), iterations


@dataclass(frozen=True)
class _Fit:
    strengths: NDArray[np.float64]
    strength_var: NDArray[np.float64]  # each strength's variance
    gammas: dict[int, tuple[float, float]]  # judge index → (γ, se)
    component: NDArray[np.int32]
    log_likelihood: float
    iterations: int


def _fit(d: _Data, *, order_effect: bool, alpha: float) -> _Fit:
    """The strengths (centred per connected set) and order effects of ``d``, or a ValueError
    saying why they have no finite estimate."""
    n = len(d.systems)
    component = _components(n, d.a, d.b)
    if alpha == 0:
        why = _never_beaten(d, component)
        if why is not None:
            raise ValueError(f"{why}; a prior (alpha > 0) gives finite strengths")
    if order_effect:
        why = _runaway_order(d)
        if why is not None:
            raise ValueError(f"{why}; fit without an order effect")
    basis = _basis(component)
    ordered = sorted({int(k) for k in d.judge[d.order != 0]}) if order_effect else []
    gamma_of = {k: basis.shape[1] + col for col, k in enumerate(ordered)}
    x = _design(d, basis, {k: col for col, k in enumerate(ordered)})
    judge_of = {col: k for k, col in gamma_of.items()}
    why = _confounded(d, x, basis, judge_of)
    if why is not None:
        raise ValueError(why)
    why = _separated(d, x, basis, judge_of, strengths_free=alpha == 0)
    if why is not None:
        remedy = "a prior (alpha > 0) gives finite strengths" if alpha == 0 else ""
        if gamma_of:
            remedy += ("; or " if remedy else "") + "fit without an order effect"
        raise ValueError(f"{why}; {remedy}")
    penalty = np.concatenate([np.full(basis.shape[1], float(alpha)), np.zeros(len(ordered))])
    theta, hess, loglik, iterations = _newton(x, d.y, penalty)
    free = basis.shape[1]
    strengths = basis @ theta[:free]
    if not np.all(np.isfinite(theta)) or np.max(np.abs(strengths), initial=0.0) > _DIVERGED:
        raise ValueError(
            "the strengths have no finite maximum-likelihood estimate (the votes separate the "
            "systems); a prior (alpha > 0) gives finite strengths"
        )
    cov = np.linalg.pinv(hess)
    variances = [np.diag(cov)]
    strength_var = [np.diag(basis @ cov[:free, :free] @ basis.T)]
    if d.cluster is not None:  # the sandwich over the clusters: votes of one item together
        robust = _sandwich(x, d.y, theta, cov, d.cluster)
        variances.append(np.diag(robust))
        strength_var.append(np.diag(basis @ robust[:free, :free] @ basis.T))
    # the wider of the two: near-certain votes (a system that never lost) leave the sandwich's
    # residuals near 0, and it narrower than the model's own
    var = np.max(variances, axis=0)
    gammas = {
        k: (float(theta[col]), math.sqrt(max(float(var[col]), 0.0))) for k, col in gamma_of.items()
    }
    if any(abs(g) > _DIVERGED for g, _ in gammas.values()):
        raise ValueError("an order effect has no finite estimate (the votes separate it)")
    return _Fit(strengths, np.max(strength_var, axis=0), gammas, component, loglik, iterations)


def _clustered_wald(n_clusters: int) -> str:
    return (
        f"Wald (observed Fisher information or, where wider, cluster-robust over {n_clusters} "
        "clusters)"
    )


def _sandwich(
    x: NDArray[np.float64],
    y: NDArray[np.float64],
    theta: NDArray[np.float64],
    bread: NDArray[np.float64],
    cluster: NDArray[np.intp],
) -> NDArray[np.float64]:
    """The cluster-robust covariance ``H⁻¹ (Σ_c g_c g_cᵀ) H⁻¹`` of the logistic fit (``bread``:
    ``H⁻¹``; ``g_c`` the sum of cluster ``c``'s score contributions ``(y − p) x``)."""
    from scipy.special import expit

    scores = x * (y - expit(x @ theta))[:, None]
    by_cluster = np.zeros((int(cluster.max()) + 1, x.shape[1]))
    np.add.at(by_cluster, cluster, scores)
    return bread @ (by_cluster.T @ by_cluster) @ bread


# -- the majority's cycles -------------------------------------------------------------------


def _cyclic_triads(d: _Data, limit: int = 5) -> CyclicTriads:
    """Cyclic triads of the pairwise majority over ``d``'s votes (a tie half to each side; an
    evenly split pair has no majority and is in no triad)."""
    n = len(d.systems)
    margin = np.zeros((n, n))
    np.add.at(margin, (d.a, d.b), d.y - 0.5)
    np.add.at(margin, (d.b, d.a), 0.5 - d.y)
    beats = (margin > 0).astype(np.int64)
    decided = beats + beats.T
    triads = int(np.trace(decided @ decided @ decided)) // 6
    cyclic = int(np.trace(beats @ beats @ beats)) // 3
    examples: list[tuple[str, str, str]] = []
    if cyclic:
        for i, j, k in combinations(range(n), 3):
            if beats[i, j] and beats[j, k] and beats[k, i]:
                examples.append((d.systems[i], d.systems[j], d.systems[k]))
            elif beats[i, k] and beats[k, j] and beats[j, i]:
                examples.append((d.systems[i], d.systems[k], d.systems[j]))
            if len(examples) == limit:
                break
    return CyclicTriads(triads, cyclic, tuple(examples))


# -- per judge ------------------------------------------------------------------------------


def _agreement(
    d: _Data, k: int, *, order_effect: bool, alpha: float, confidence: float
) -> JudgeAgreement:
    mine = d.judge == k
    votes, ties = int(mine.sum()), int((d.y[mine] == 0.5).sum())
    own = _cyclic_triads(d.subset(mine), limit=0)

    def row(agreement=None, low=None, high=None, n=0, note=None) -> JudgeAgreement:
        return JudgeAgreement(
            d.judges[k], votes, ties, agreement, low, high, n, own.cyclic, own.triads, note
        )

    if len(d.judges) < 2:
        return row(note="one judge: no other judges' ranking to agree with")
    others = d.subset(~mine)
    try:
        fit = _fit(others, order_effect=order_effect, alpha=alpha)
    except ValueError as exc:
        return row(note=f"the others' votes give no ranking: {exc}")
    ranked = np.isin(np.arange(len(d.systems)), np.concatenate([others.a, others.b]))
    theirs = d.subset(mine & (d.y != 0.5))
    s, comp = fit.strengths, fit.component
    usable = ranked[theirs.a] & ranked[theirs.b] & (comp[theirs.a] == comp[theirs.b])
    usable &= s[theirs.a] != s[theirs.b]
    if not usable.any():
        return row(note="none of its decisive votes is on a pair the others' votes rank")
    picked_a = theirs.y[usable] == 1.0
    stronger_a = s[theirs.a[usable]] > s[theirs.b[usable]]
    agree, n = int((picked_a == stronger_a).sum()), int(usable.sum())
    low, high = wilson_interval(agree, n, confidence)
    return row(agree / n, low, high, n)


# -- the public function --------------------------------------------------------------------


def bradley_terry(
    a: Sequence[Hashable],
    b: Sequence[Hashable],
    winner: Sequence[Hashable | None],
    *,
    first: Sequence[Hashable | None] | None = None,
    judges: Sequence[Hashable] | None = None,
    order_effect: bool = True,
    alpha: float = 0.0,
    confidence: float = 0.95,
    clusters: Sequence[Hashable] | None = None,
) -> BradleyTerry:
    """Bradley–Terry strengths of the systems compared in ``a[i]`` vs ``b[i]`` (see the module).

    ``winner[i]``: ``a[i]``, ``b[i]``, or None for a tie; ``first[i]``: the system shown first
    (None: unknown); ``judges[i]``: who voted (default: one judge). ``order_effect``: estimate
    each judge's first-position effect from its comparisons of known order. ``alpha``: the
    penalty ``alpha · Σ s²`` (0: maximum likelihood). Intervals at ``confidence``: Wald for
    strengths and order effects — cluster-robust where ``clusters[i]`` (the item compared)
    puts two comparisons together —, Wilson for agreement.
    """
    _check(alpha, confidence)
    d = _data(a, b, winner, first, judges, clusters)
    fit = _fit(d, order_effect=order_effect, alpha=float(alpha))
    z = _z(confidence)
    record: dict[int, Counter[str]] = defaultdict(Counter)
    for x, y, o in zip(d.a.tolist(), d.b.tolist(), d.y.tolist(), strict=True):
        if o == 0.5:
            record[x]["ties"] += 1
            record[y]["ties"] += 1
        else:
            record[x]["wins" if o == 1.0 else "losses"] += 1
            record[y]["losses" if o == 1.0 else "wins"] += 1
    se = np.sqrt(np.clip(fit.strength_var, 0.0, None))
    rows = []
    for c in np.unique(fit.component):
        members = sorted(
            np.flatnonzero(fit.component == c).tolist(),
            key=lambda k: (-round(float(fit.strengths[k]), 9), d.systems[k]),  # equal: by name
        )
        rank, previous = 0, None
        for place, k in enumerate(members, start=1):
            s = float(fit.strengths[k])
            if round(s, 9) != previous:  # equal strengths share a rank (1, 1, 3: competition)
                rank, previous = place, round(s, 9)
            rows.append(
                Strength(
                    d.systems[k],
                    s,
                    float(se[k]),
                    s - z * float(se[k]),
                    s + z * float(se[k]),
                    rank,
                    int(c),
                    record[k]["wins"],
                    record[k]["losses"],
                    record[k]["ties"],
                )
            )
    effects = []
    for k, (g, g_se) in sorted(fit.gammas.items()):
        mine = (d.judge == k) & (d.order != 0) & (d.y != 0.5)
        first_won = np.where(d.order[mine] > 0, d.y[mine], 1.0 - d.y[mine])
        effects.append(
            OrderEffect(
                d.judges[k],
                g,
                g_se,
                g - z * g_se,
                g + z * g_se,
                int(((d.judge == k) & (d.order != 0)).sum()),
                float(first_won.mean()) if first_won.size else None,
            )
        )
    agreement = tuple(
        _agreement(d, k, order_effect=order_effect, alpha=float(alpha), confidence=confidence)
        for k in range(len(d.judges))
    )
    return BradleyTerry(
        strengths=tuple(rows),
        order_effects=tuple(effects),
        judges=agreement,
        triads=_cyclic_triads(d),
        n_comparisons=len(d.y),
        n_systems=len(d.systems),
        n_components=int(fit.component.max()) + 1,
        log_likelihood=fit.log_likelihood,
        iterations=fit.iterations,
        alpha=float(alpha),
        confidence=float(confidence),
        interval=WALD if d.cluster is None else _clustered_wald(int(d.cluster.max()) + 1),
    )
