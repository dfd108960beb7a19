"""A ranking's report (report.md and report.html from one :class:`~assay.report.Report`) and its
console lines."""

from __future__ import annotations

from pathlib import Path

from assay.metrics import fmt_level
from assay.ranking._rank import RankSummary
from assay.report import Report, Table


def _num(x: float | None, digits: int = 3) -> str:
    return "—" if x is None else f"{x:+.{digits}f}"


def _share(x: float | None) -> str:
    return "—" if x is None else f"{x:.3f}"


def _order_fitted(s: RankSummary) -> str:
    """What the fit did with the position shown first: a γ for every judge, for some (a judge
    with no vote of known order has none), or none — ``--no-order-effect``, or no order known."""
    fitted, judges = len(s.order_effects), len(s.judges)
    if not s.order_effect:
        return "no order effect"
    if not fitted:
        return "no order effect (no vote's first position is known)"
    if fitted == judges:
        return "an order effect per judge"
    return (
        f"an order effect for {fitted} of {judges} judges (the others' votes have no known "
        "first position)"
    )


def rank_headline(s: RankSummary) -> list[str]:
    """What the console and the report open with."""
    judges = len(s.judges)
    sets = f" in {s.n_components} unconnected sets (ranked apart)" if s.n_components > 1 else ""
    fit = f"penalised likelihood (prior {s.prior:g} · Σ s²)" if s.prior else "maximum likelihood"
    lines = [
        f"{s.n_systems} systems ranked from {s.n_votes} votes of {judges} judge"
        f"{'s' * (judges != 1)}{sets}: Bradley–Terry {fit}, "
        f"{_order_fitted(s)}, ties "
        f"{s.ties}; {fmt_level(s.confidence)} {s.interval} intervals",
        f"cyclic triads of the pairwise majority: {s.triads.cyclic} of {s.triads.triads}",
    ]
    left = {}
    for src in s.sources:
        for why, n in src.left_out.items():
            left[why] = left.get(why, 0) + n
    if left:
        lines.append("no vote: " + ", ".join(f"{why} {n}" for why, n in left.items()))
    return lines


def strengths_table(s: RankSummary) -> Table:
    ci = f"{fmt_level(s.confidence)} CI"
    multi = s.n_components > 1
    return Table(
        "Strengths",
        ["rank", "system", "strength", ci, "wins", "losses", "ties"] + (["set"] if multi else []),
        [
            [
                r.rank,
                r.system,
                _num(r.strength),
                f"[{_num(r.ci_low)}, {_num(r.ci_high)}]",
                r.wins,
                r.losses,
                r.ties,
            ]
            + ([r.component + 1] if multi else [])
            for r in s.strengths
        ],
        lead="A strength is a log-odds: a system beats another with probability σ(s₁ − s₂) when "
        "neither is shown first; strengths sum to 0 within a set of systems linked by votes.",
    )


def order_table(s: RankSummary) -> Table:
    return Table(
        "Order effect (first position)",
        ["judge", "γ", f"{fmt_level(s.confidence)} CI", "votes of known order", "first shown won"],
        [
            [
                e.judge,
                _num(e.gamma),
                f"[{_num(e.ci_low)}, {_num(e.ci_high)}]",
                e.ordered,
                _share(e.first_share),
            ]
            for e in s.order_effects
        ],
        lead="γ > 0: the judge favours the response shown first beyond the strengths "
        "(P(first wins) = σ(s_first − s_second + γ)).",
    )


def judges_table(s: RankSummary) -> Table:
    return Table(
        "Judges",
        [
            "judge",
            "votes",
            "ties",
            "agrees with the others' ranking",
            f"{fmt_level(s.confidence)} CI",
            "n",
            "its cyclic triads",
        ],
        [
            [
                j.judge,
                j.votes,
                j.ties,
                _share(j.agreement) if j.agreement is not None else (j.note or "—"),
                "—" if j.ci_low is None else f"[{j.ci_low:.3f}, {j.ci_high:.3f}]",
                j.n,
                f"{j.cyclic_triads} of {j.triads}",
            ]
            for j in s.judges
        ],
        lead="Agreement: the share of a judge's decisive votes that picked the stronger system "
        "of the model fitted on the other judges' votes (Wilson interval).",
    )


def triads_table(s: RankSummary) -> Table:
    return Table(
        "Cyclic triads",
        ["cycle"],
        [[f"{x} > {y} > {z} > {x}"] for x, y, z in s.triads.examples],
        lead=f"{s.triads.cyclic} of the {s.triads.triads} sets of three systems whose pairs "
        "all have a majority winner go round (x beats y beats z beats x by the majority of "
        "their votes): the votes are not transitive there"
        + (" (five shown)." if s.triads.cyclic > 5 else "."),
    )


def rank_tables(s: RankSummary) -> list[Table]:
    tables = [strengths_table(s)]
    if s.order_effects:
        tables.append(order_table(s))
    tables.append(judges_table(s))
    if s.triads.cyclic:
        tables.append(triads_table(s))
    return tables


def build_rank_report(run_dir: Path) -> Report:
    """The report of the ranking run in ``run_dir``."""
    from assay.report import load_summary

    s = load_summary(Path(run_dir) / "metrics.json", RankSummary)
    r = Report("rank", f"assay rank — {s.name}")
    r.facts = [
        (
            f"source: {src.named}",
            f"{src.kind}, {src.votes} votes ("
            + ", ".join(f"{j} {n}" for j, n in src.judges.items())
            + ")"
            + "".join(f"; no vote: {why} {n}" for why, n in src.left_out.items()),
        )
        for src in s.sources
    ]
    r.facts += [
        ("model", f"Bradley–Terry, ties {s.ties}, prior {s.prior:g}"),
        ("intervals", f"{fmt_level(s.confidence)} {s.interval}"),
        ("fit", f"log-likelihood {s.log_likelihood:.3f} after {s.iterations} Newton steps"),
    ]
    r.notes = rank_headline(s)
    r.tables = rank_tables(s)
    return r


def rank_console(s: RankSummary) -> str:
    """The console: the headline, then the tables as Markdown."""
    from assay.report import markdown

    lines = rank_headline(s)
    body = markdown(rank_tables(s))
    return "\n".join([*lines, "", *body]).rstrip() + f"\nrun: {s.run_dir}\n"
