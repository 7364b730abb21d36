"""The claims ledger page and the introduction's summary (book layer), generated at build time
from ``results/<profile>/*.json``."""
from __future__ import annotations

from typing import Any, Sequence

from ...figures.tables import BADGES, claims_html, fmt_number
from ...foundation.claims import CONFIDENCE, FAMILY_RULE, SCOPES, VERDICTS
from ..references.scales import (corrections_at_scale, differing_claims, errata_at_scale_summary,
                                  erratum_at_scale, scales_html, scales_overview, summary_at_scale)
from ..references.contrast import contrast_html, scales_of, tables_html
from ..references.stored import Reference
from .answer import Part, answer, answer_markdown

__all__ = ["PAPER_ITEMS", "MACHINERY_PROFILES", "machinery_notice", "plural", "kind_of",
           "KIND_TEXT", "SCALES_CSS", "ledger_markdown", "summary_markdown", "coverage_markdown",
           "errata_markdown"]

#: Profiles that exist to test the book's machinery: their runs are too short to be evidence
#: about the paper, so their builds say so on every page and list no errata.
MACHINERY_PROFILES = ("smoke",)


def plural(n: int, word: str) -> str:
    """``1 claim``, ``2 claims``."""
    return f"{n} {word}{'' if n == 1 else 's'}"


def kind_of(c: dict[str, Any]) -> str:
    """A claim's kind; results written before kinds existed count as empirical."""
    return c.get("kind", "empirical")


#: What the two kinds mean, for the ledger and the introduction. (It said an identity "cannot
#: come out otherwise unless the code is wrong", beside "2 of them identities" refuted: a
#: reader concluded the code was wrong, where the paper's formula was: issue 53.)
KIND_TEXT = ("*Identity* claims (tagged *identity*) are settled by algebra, for any data: the "
             "exact theory decides them, and the measurement checks the code against it. An "
             "identity of the book's own passes unless the code is wrong; a *refuted* identity "
             "of the paper means that the paper's formula disagrees with the exact theory, "
             "which is no matter of chance or of scale. Identities are counted apart from "
             "*empirical* findings, measured facts about SGD, a model or data that could have "
             "come out otherwise.")


def _confirmed_text(claims: Sequence[dict[str, Any]]) -> str:
    """``15 empirical confirmations, 12 identity checks passed``."""
    ok = [c for c in claims if c["verdict"] == "confirmed"]
    emp = sum(kind_of(c) == "empirical" for c in ok)
    return (f"{emp} empirical confirmation{'' if emp == 1 else 's'}, "
            f"{len(ok) - emp} identity check{'' if len(ok) - emp == 1 else 's'} passed")


def _identities_text(claims: Sequence[dict[str, Any]], verdict: str) -> str:
    """`` (1 of them an identity)`` where identities have ``verdict``; for refuted ones, what
    they mean: the paper's formula disagrees with the exact theory, or, for one of the book's
    own, a bug; "" with none."""
    mine = [c for c in claims if kind_of(c) == "identity" and c["verdict"] == verdict]
    if not mine:
        return ""
    if verdict != "refuted":
        return f" ({len(mine)} of them {'an identity' if len(mine) == 1 else 'identities'})"
    paper = sum(c.get("source", "paper") == "paper" for c in mine)
    book = len(mine) - paper
    if len(mine) == 1:
        return (" (1 of them an identity of the paper, whose formula disagrees with the exact "
                "theory)" if paper else " (1 of them an identity of the book's own: a bug)")
    parts = ([f"{paper} of the paper, whose formula{'' if paper == 1 else 's'} "
              f"{'disagrees' if paper == 1 else 'disagree'} with the exact theory"]
             if paper else []) + ([f"{book} of the book's own: {'a bug' if book == 1 else 'bugs'}"]
                                  if book else [])
    return f" ({len(mine)} of them identities: {'; '.join(parts)})"


def machinery_notice(profile: str) -> str:
    """The sentence every page of a machinery profile's build carries ("" otherwise)."""
    if profile not in MACHINERY_PROFILES:
        return ""
    return (f"This site was built under the {profile} profile, which tests the book's "
            "machinery: its runs last seconds, so its verdicts are not evidence about the "
            "paper. Build with the quick or paper profile for the reproduction.")


#: How the ledger's across-scales tables wrap (issue 71, item 9: with the ``cpu-cifar10``
#: reference, Section 5's table of verdicts at every scale was 810 px wide in a 784 px column at
#: 1400 px). A claim id is code and may break anywhere, and an interval or a "≠ differs" mark
#: may break at its space, never inside a number, so that the table's narrowest layout is about
#: half the column; on a phone the table is one card per row, as before.
SCALES_CSS = ("<style>table.scales td > code { overflow-wrap: anywhere; } "
              "table.scales .iv, table.scales span.differs { white-space: normal; }</style>")


def ledger_markdown(docs: Sequence[dict[str, Any]], *, chapter_paths: dict[str, str],
                    profile: str,
                    references: dict[str, list[Reference]] | None = None) -> str:
    """The claims-ledger page: every claim of every chapter, chapter by chapter, and beside
    them each chapter's reference executions (``references``: chapter -> references; with
    none the page is exactly the built profile's)."""
    references = references or {}
    lines = [
        "# Claims ledger",
        "",
        f"Every quantitative claim checked in this book, as measured under the `{profile}` "
        f"profile. Intervals are {int(CONFIDENCE * 100)} % confidence intervals, "
        "$\\hat\\theta \\pm t\\,\\mathrm{se}$; the band is "
        "the tolerance around the paper's value, fixed in code before measuring. A claim is "
        "*confirmed* when its whole interval lies inside the band, *refuted* when they do not "
        "overlap, and *inconclusive* otherwise (or when the interval is known to be "
        "untrustworthy, with the reason). *Exact* is the exact theory's value of the same "
        "statistic, where the book has one. Claims tagged *book* are corrections derived in "
        "this book. Open *Details* for the quantity, the band, the claim's scope, what would "
        "make a refuted claim hold, and every case. The {doc}`errata <errata>` collect the "
        "refutations.",
        "",
        f"A claim decided over several cases (every panel, every setting) is decided by one "
        f"family-wise rule: {FAMILY_RULE}. Each case keeps its own {int(CONFIDENCE * 100)} % "
        "interval and its p-value (the smallest level at which that interval decides), and a "
        "case whose own interval would decide but which the rule leaves undecided says so. "
        + KIND_TEXT,
        "",
    ]
    lines += [totals_line(docs, references), ""]
    overview = scales_overview(docs, references, profile)
    if overview:
        lines += [overview, "", "```{raw} html", SCALES_CSS, "```", ""]
    for doc in docs:
        nb = doc["notebook"]
        link = f"{{doc}}`{chapter_paths[nb]}`" if nb in chapter_paths else nb   # the page title
        lines += [f"## {link}", "", "```{raw} html", claims_html(doc["claims"]), "```", ""]
        scales = scales_html(doc, references.get(nb, []), profile)
        if scales:
            lines += ["```{raw} html", scales, "```", ""]
        executions = scales_of(doc, references.get(nb, []), profile)
        for part in (contrast_html(executions), tables_html(executions)):
            if part:
                lines += ["```{raw} html", part, "```", ""]
    if not docs:
        lines.append("No results found: run `make book`.")
    return "\n".join(lines) + "\n"


def totals_line(docs: Sequence[dict[str, Any]],
                references: dict[str, list[Reference]] | None = None) -> str:
    """The ledger's totals: this build's claims by verdict, each reference profile's, and how
    many verdicts differ across scales (the one meaning of ≠ on this page; a contrast between
    two scales' estimates is marked Δ)."""
    claims = [c for d in docs for c in d["claims"]]
    counts = ", ".join(f"{sum(c['verdict'] == v for c in claims)} {v}" for v in VERDICTS)
    parts = [f"**Totals.** This build: {plural(len(claims), 'claim')} ({counts})"]
    refs = [r for rs in (references or {}).values() for r in rs]
    for prof in sorted({r.profile for r in refs}):
        mine = [r for r in refs if r.profile == prof]
        theirs = [c for r in mine for c in r.claims().values()]
        by = ", ".join(f"{sum(c['verdict'] == v for c in theirs)} {v}" for v in VERDICTS)
        stale = sum(not r.fresh for r in mine)
        differ = sum(len(differing_claims(d["claims"], [r])) for d in docs for r in mine
                     if r.fresh and r.name == d["notebook"])
        parts.append(f"`{prof}` references: {plural(len(theirs), 'claim')} ({by}), "
                     f"{differ} with a verdict other than this build's (≠)"
                     + (f", {stale} stale" if stale else ""))
    return "; ".join(parts) + "."


def summary_markdown(docs: Sequence[dict[str, Any]], *, profile: str,
                     references: dict[str, list[Reference]] | None = None,
                     declared: Sequence[Part] | None = None) -> str:
    """The introduction's opening: the book's answer, one sentence per part of the paper
    (:mod:`dsmlib.book.site.answer`, from this build's claims and the committed
    ``references``), then how the ledger counts: verdicts, refutations by scope, the two kinds
    of claim, and how many verdicts the references re-measured and how many differ. (A
    machinery profile's build says what it is on every page: :func:`machinery_notice`.)"""
    claims = [c for doc in docs for c in doc["claims"]]
    counts = {v: sum(c["verdict"] == v for c in claims) for v in VERDICTS}
    paper = [c for c in claims if c.get("source", "paper") == "paper"]
    pc = {v: sum(c["verdict"] == v for c in paper) for v in VERDICTS}
    scopes = {s: sum(c["verdict"] == "refuted" and c.get("scope") == s for c in paper)
              for s in SCOPES}
    by_scope = ", ".join(f"{n} under *{s}*" for s, n in scopes.items() if n)
    counted = not machinery_notice(profile)     # every page of such a build says so above
    found = answer_markdown(answer(docs, references, profile=profile, build_counts=counted,
                                   declared=declared),
                            profile=profile, build_counts=counted)
    return (f"{found}\n"
            f"**How the ledger counts.** Under the `{profile}` profile the book checks "
            f"**{plural(len(claims), 'claim')}**: "
            f"{counts['confirmed']} confirmed ({_confirmed_text(claims)}), "
            f"{counts['refuted']} refuted{_identities_text(claims, 'refuted')} and "
            f"{counts['inconclusive']} inconclusive{_identities_text(claims, 'inconclusive')}. "
            f"Of the paper's own claims, {pc['confirmed']} are confirmed "
            f"(**{_confirmed_text(paper)}**), {pc['refuted']} refuted"
            f"{f' ({by_scope})' if by_scope else ''} and {pc['inconclusive']} inconclusive; "
            "the rest are corrections derived here. " + KIND_TEXT + " See the "
            "{doc}`claims ledger <ledger>` for every number and the {doc}`errata <errata>` for "
            "what the refutations mean.\n\n"
            + summary_at_scale(docs, references or {}))


#: The paper's quantitative content, and the claim-id prefixes that measure each item.
PAPER_ITEMS = [
    ("Proposition 1: the two noise terms and their covariances (Eq. 14)", ("prop1.",)),
    ("Proposition 2: the SDE approximation and its O(η²) bound (Eqs. 16–18)", ("prop2.",)),
    ("Proposition 3: the strength of the label-noise term (Eq. 22)", ("prop3.",)),
    ("Remark 2: the gradient norm as inference stability", ("remark2.",)),
    ("Remarks 3–4: escape towards low gradient norm, tuned by ησ²/B", ("remark3.", "remark4.")),
    ("Section 5.2: the symmetric logit swap (Eq. 24)", ("sec5.",)),
    ("Figure 1: noisy self-distillation, gradient norm and accuracy", ("fig1.",)),
    ("Figure 2: training and validation losses", ("fig2.",)),
    ("Section 6, Remark 5 and Figure 3: least squares (Eq. 30)", ("ols.",)),
]


def coverage_markdown(docs: Sequence[dict[str, Any]], *, profile: str) -> str:
    """What the book measures, and what it does not yet, from the chapters that exist."""
    claims = [c for d in docs for c in d["claims"]]
    lines = [f"What the `{profile}` build measures, item by item of the paper:", ""]
    for item, prefixes in PAPER_ITEMS:
        mine = [c for c in claims if c["id"].startswith(prefixes)]
        if not mine:
            lines.append(f"- {item}: **not measured yet**.")
            continue
        parts = []
        for kind, word in (("empirical", "empirical"), ("identity", "identity check")):
            of = [c for c in mine if kind_of(c) == kind]
            if not of:
                continue
            counts = {v: sum(c["verdict"] == v for c in of) for v in VERDICTS}
            label = (f"{len(of)} empirical" if kind == "empirical"
                     else plural(len(of), "identity check"))
            parts.append(f"{label} ({counts['confirmed']} "
                         f"{'confirmed' if kind == 'empirical' else 'passed'}, "
                         f"{counts['refuted']} refuted, {counts['inconclusive']} inconclusive)")
        lines.append(f"- {item}: {plural(len(mine), 'claim')}: {' and '.join(parts)}.")
    return "\n".join(lines) + "\n"


def errata_markdown(docs: Sequence[dict[str, Any]], *, chapter_paths: dict[str, str],
                    profile: str,
                    references: dict[str, list[Reference]] | None = None) -> str:
    """Every claim of the paper that the measurements refute or cannot confirm, with the
    correction, the evidence and the claim's scope; with ``references``, what the
    ``paper`` references measured for each, and the book's corrections at that scale."""
    from ...figures.tables import band_words, condition_label, fmt_interval, plain_quantity
    references = references or {}
    lines = ["# Errata", "",
             "Every claim of the paper that this book's measurements under the "
             f"`{profile}` profile *refute* (the paper is wrong or loose there) or cannot decide "
             "(*inconclusive*: not evidence against the paper, only no confirmation at this "
             f"scale): the paper's claim, the measurement with its {int(CONFIDENCE * 100)} % "
             "interval, the exact value where theory gives one, for a refuted claim what would "
             "make it hold, and its scope (*assumptions*: under the paper's own assumptions; "
             "*setting*: for the experiment as the paper describes it; *reading*: under one "
             "reading of an ambiguous text). This page is generated from the "
             "{doc}`claims ledger <ledger>`.", ""]
    if machinery_notice(profile):
        return "\n".join(lines[:2] + [
            f"**No errata under the `{profile}` profile.** {machinery_notice(profile)}",
            ""]) + "\n"
    errata = [(doc["notebook"], c) for doc in docs for c in doc["claims"]
              if c.get("source", "paper") == "paper" and c["verdict"] != "confirmed"]
    summary = errata_at_scale_summary(errata, references,
                                      {doc["notebook"]: doc for doc in docs})
    if summary:
        lines += [summary, ""]
    n = 0
    for doc in docs:
        nb = doc["notebook"]
        bad = [c for chapter, c in errata if chapter == nb]
        if not bad:
            continue
        lines += [f"## {{doc}}`{chapter_paths.get(nb, nb)}`", ""]
        for c in bad:
            n += 1
            exact = f" The exact value is {fmt_number(c['exact'])}." if c.get("exact") is not None else ""
            lines += [f"**{n}. {c['statement']}** ({BADGES[c['verdict']]}, scope "
                      f"*{c.get('scope') or 'unset'}*)",
                      f": Measured {fmt_number(c['measured'])}, interval "
                      f"{fmt_interval(c['interval'])}; the claim holds if the value is "
                      f"{band_words(c['band'])} (the paper's value: "
                      f"{fmt_number(c['paper'])}).{exact} "
                      f"({plain_quantity(c.get('quantity', ''), c.get('case', ''))}; `{c['id']}`)"]
            if c.get("condition"):
                label = "Correction" if c["verdict"] == "refuted" else condition_label(c["verdict"])
                lines += [f": *{label}.* {c['condition']}"]
            if c.get("note"):
                lines += [f": *Note.* {c['note']}"]
            at_scale = erratum_at_scale(c, references.get(nb, []), doc)
            if at_scale:
                lines += [f": {at_scale}"]
            lines.append("")
    if not n:
        lines.append("No claim of the paper is refuted or undecided under this profile.")
    corrections = corrections_at_scale(docs, references)
    if corrections:
        lines += ["", corrections]
    return "\n".join(lines) + "\n"
