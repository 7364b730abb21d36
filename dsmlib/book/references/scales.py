"""Verdicts at every scale (book layer): the ledger's and the errata's view of the committed
reference executions (:mod:`dsmlib.book.references.stored`) beside the profile being built.

For each chapter with references, one table: every claim's verdict and interval under the
built profile, then under each reference profile, with a mark (≠) where a reference's verdict
differs. A stale reference (its content key is not the current code's) is shown greyed,
labelled with the commit it was measured at; its differences are marked and counted too, but
apart, labelled stale ("1 differs, in a stale reference"), never as current evidence. With no
references, nothing here adds anything to a page.
"""
from __future__ import annotations

import html
from typing import Any, Sequence

from ...figures.tables import BADGES, data_table, fmt_interval, fmt_number
from ...foundation.handoff import same_parameters
from ..execute.provenance_html import duration_text, training_text
from .stored import Reference

__all__ = ["same_as_built", "reference_caption", "differing_claims", "difference_kinds",
           "differences_text", "stale_differ_text",
           "scales_html",
           "corrections_at_scale", "summary_at_scale",
           "scales_overview", "erratum_at_scale", "errata_at_scale_summary", "PAPER_SCALE"]

#: The profile whose reference is "the paper's scale".
PAPER_SCALE = "paper"


def _params(doc: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in ((doc.get("run") or {}).get("parameters") or {}).items()
            if k != "profile"}


def same_as_built(ref: Reference, built: dict[str, Any]) -> bool:
    """Whether the reference ran with exactly the built chapter's parameters (then it is a
    repeat of the same run, not new evidence)."""
    return same_parameters(_params(ref.doc), _params(built))


def reference_caption(ref: Reference, built: dict[str, Any] | None = None) -> str:
    """One line on where a reference's numbers came from (HTML)."""
    p = ref.provenance
    needs = {"rederive": "; only the analysis changed, so it is re-derivable on a CPU from its "
                         "committed run records",
             "gpu": "; what it trained changed, or no run records were committed, so it "
                    "needs a GPU run"}.get(ref.refresh, "")
    state = ("fresh" if ref.fresh else
             f"<strong>stale</strong>: measured with code that has changed since commit "
             f"<code>{html.escape(ref.commit)}</code>; not current{needs}")
    same = (" It ran with the same parameters as this build, so it repeats this build's run "
            "and adds no new evidence." if built is not None and same_as_built(ref, built)
            else "")
    fixture = (f" <strong>Test fixture:</strong> {html.escape(ref.fixture)}"
               if ref.fixture else "")
    where = (f"executed in {float(p.get('wall_s', 0)):.0f} s on {html.escape(ref.device)}, "
             f"commit <code>{html.escape(ref.commit)}</code>" if not p.get("trained") else
             f"{html.escape(ref.origin)} ({html.escape(training_text(p['trained']))}; "
             f"analysis {duration_text(float(p.get('wall_s', 0)))})")
    return (f"<p class='scale-caption'><code>{html.escape(ref.profile)}</code> reference: "
            f"{where} ({state}).{same}{fixture}</p>")


def _cell(c: dict[str, Any] | None, stale: bool = False) -> str:
    if c is None:
        return "<span class='absent'>not measured</span>"
    cls = "scale-cell stale" if stale else "scale-cell"
    mark = "<span class='stale-tag'>stale</span> " if stale else ""
    unit = f" {html.escape(c['unit'])}" if c.get("unit") else ""
    return (f"<span class='{cls}'>{mark}<span class='badge {c['verdict']}'>"
            f"{BADGES[c['verdict']]}</span> {fmt_number(c['measured'])} "
            f"<span class='iv'>{fmt_interval(c['interval'])}</span>{unit}</span>")


def differing_claims(claims: Sequence[dict[str, Any]], refs: Sequence[Reference], *,
                     stale: bool = False) -> set[str]:
    """Ids of the claims whose verdict under some *fresh* reference (``stale=True``: some
    *stale* reference) differs from the built profile's."""
    out = set()
    for ref in refs:
        if ref.fresh == stale:
            continue
        theirs = ref.claims()
        out |= {c["id"] for c in claims
                if c["id"] in theirs and theirs[c["id"]]["verdict"] != c["verdict"]}
    return out


#: How a verdict can differ between this build and a reference: decided both times, the
#: other way; decided here and inconclusive there; inconclusive here and decided there.
DIFFERENCE_KINDS = ("decided the other way", "decided here but inconclusive there",
                    "inconclusive here but decided there")


def difference_kinds(claims: Sequence[dict[str, Any]], ref: Reference) -> dict[str, int]:
    """How many of ``claims`` have each kind of :data:`DIFFERENCE_KINDS` against ``ref``
    (every kind named, 0 included)."""
    theirs = ref.claims()
    out = dict.fromkeys(DIFFERENCE_KINDS, 0)
    for c in claims:
        there = (theirs.get(c["id"]) or {}).get("verdict")
        if there is None or there == c["verdict"]:
            continue
        here_decided, there_decided = c["verdict"] != "inconclusive", there != "inconclusive"
        out[DIFFERENCE_KINDS[0] if here_decided and there_decided else
            DIFFERENCE_KINDS[1] if here_decided else DIFFERENCE_KINDS[2]] += 1
    return out


def differences_text(kinds: dict[str, int]) -> str:
    """``9 decided here, inconclusive there`` / ``1 decided the other way and 2 ...``: the
    kinds that occur, in :data:`DIFFERENCE_KINDS`' order; "" if none."""
    parts = [f"{n} {kind}" for kind, n in kinds.items() if n]
    return " and ".join([", ".join(parts[:-1]), parts[-1]] if len(parts) > 1 else parts)


#: From this many references on (four scales with the build), an across-scales table is set
#: smaller (``table.scales.many`` in ``book/_assets/custom.css``).
MANY_REFS = 3


def scales_html(doc: dict[str, Any], refs: Sequence[Reference], profile: str) -> str:
    """The across-scales table of one chapter: its claims under the built ``profile`` (from
    ``doc``, its results) and under each reference; "" with no references."""
    if not refs:
        return ""
    claims = doc["claims"]
    differs = differing_claims(claims, refs)
    stale_differs = differing_claims(claims, refs, stale=True) - differs
    head = ["Claim", f"<code>{html.escape(profile)}</code> (this build)"]
    labels = ["Claim", f"{profile} (this build)"]
    for r in refs:
        tag = "" if r.fresh else " (stale)"
        head.append(f"<code>{html.escape(r.profile)}</code> reference{tag}")
        labels.append(f"{r.profile} reference{tag}")
    rows, classes = [], []
    for c in claims:
        mark = (" <span class='differs' title='verdicts differ across scales'>≠ differs</span>"
                if c["id"] in differs else
                " <span class='differs stale' title='the verdict differs in a stale reference'>"
                "≠ differs (stale)</span>" if c["id"] in stale_differs else "")
        rows.append([f"<code>{html.escape(c['id'])}</code>{mark}", _cell(c)]
                    + [_cell(r.claims().get(c["id"]), stale=not r.fresh) for r in refs])
        classes.append("differs" if c["id"] in differs else
                       "differs-stale" if c["id"] in stale_differs else "")
    captions = "".join(reference_caption(r, doc) for r in refs)
    n, m = len(differs), len(stale_differs)
    how = "; ".join(f"<code>{html.escape(r.profile)}</code>: {differences_text(k)}"
                    for r in refs if r.fresh
                    for k in [difference_kinds(claims, r)] if any(k.values()))
    verdict_line = (f"<p class='scale-differs'>{n} verdict{'s' if n != 1 else ''} of this "
                    f"chapter differ{'s' if n == 1 else ''} between scales (marked ≠; "
                    f"{how}).</p>"
                    if n else
                    "<p class='scale-differs'>No verdict of this chapter differs between "
                    "this build and a fresh reference.</p>"
                    if any(r.fresh for r in refs) else "")
    if m:
        verdict_line += (f"<p class='scale-differs stale'>{m} {'differs' if m == 1 else 'differ'}"
                         " only in a stale reference (marked ≠ stale): measured with code "
                         "that has changed since, so not current evidence.</p>")
    # four scales or more (Section 5 with both CIFAR-10 regimes) share the column at a smaller
    # size, so that the narrowest layout keeps room to spare for longer values
    many = " many" if len(refs) >= MANY_REFS else ""
    table = data_table(head, rows, labels, row_classes=classes,
                       table_class=f"cases scales cards{many}")
    return (f"<div class='scales'><p><strong>At every scale.</strong></p>{captions}"
            f"{verdict_line}{table}</div>")


def scales_overview(docs: Sequence[dict[str, Any]], by_chapter: dict[str, list[Reference]],
                    profile: str) -> str:
    """The ledger's opening paragraph on the references (Markdown); "" with none."""
    refs = [r for rs in by_chapter.values() for r in rs]
    if not refs:
        return ""
    lines = []
    for prof in sorted({r.profile for r in refs}):
        mine = [r for r in refs if r.profile == prof]
        fresh = [r for r in mine if r.fresh]
        devices = sorted({r.device for r in mine})
        stale = [r.name for r in mine if not r.fresh]
        differ = sum(len(differing_claims(d["claims"], [r])) for d in docs for r in fresh
                     if r.name == d["notebook"])
        old_pairs = [(d, r) for d in docs for r in mine
                     if not r.fresh and r.name == d["notebook"]]
        old = sum(len(differing_claims(d["claims"], [r], stale=True)) for d, r in old_pairs)
        old_refs = sum(1 for d, r in old_pairs if differing_claims(d["claims"], [r], stale=True))
        measured = sum(1 for d in docs for r in fresh if r.name == d["notebook"]
                       for c in d["claims"] if c["id"] in r.claims())
        line = (f"- **`{prof}`**: references of {len(mine)} chapter{'s' if len(mine) != 1 else ''}"
                f" ({', '.join(r.name for r in mine)}), on {'; '.join(devices)}; "
                f"{measured} claims re-measured by the fresh ones, {differ} with a different "
                f"verdict from this build")
        if old:
            line += f"; {stale_differ_text(old, old_refs)}"
        if stale:
            line += f"; **stale** (code changed since they ran): {', '.join(stale)}"
        lines.append(line + ".")
    return ("Beside this build, the book carries **reference executions**: chapters executed "
            "once under another profile, where the hardware is, and committed with their "
            f"provenance. Each chapter below shows them next to the `{profile}` verdicts, and "
            "marks (≠) a claim whose verdict differs across scales, also in a stale reference "
            "(labelled stale).\n\n" + "\n".join(lines)
            + "\n")


def erratum_at_scale(claim: dict[str, Any], refs: Sequence[Reference],
                     built: dict[str, Any] | None = None) -> str:
    """Sentences (Markdown) on a claim of the errata at the other scales: its verdict in the
    chapter's ``paper`` reference (or why there is none), then in each other reference that
    measured it (``gpu``, ``cpu-cifar10``, ...); "" with no references at all. ``built``: the
    chapter's results in this build (to say when the reference repeats it)."""
    if not refs:
        return ""
    out = []
    for r in sorted(refs, key=lambda r: (r.profile != PAPER_SCALE, r.profile)):
        theirs = r.claims().get(claim["id"])
        where = ("the paper's scale" if r.profile == PAPER_SCALE else
                 f"the `{r.profile}` scale")
        if theirs is None:
            if r.profile == PAPER_SCALE:
                out.append(f"*At the paper's scale:* not measured by the `{PAPER_SCALE}` "
                           "reference.")
            continue
        stale = "" if r.fresh else f" (**stale** reference, commit `{r.commit}`)"
        stands = ("the erratum stands" if theirs["verdict"] == claim["verdict"] else
                  "the verdict differs from this build")
        if built is not None and same_as_built(r, built):
            stands += "; the reference ran with this build's parameters, so it is a repeat"
        size = f", {theirs['size'].split(' (')[0]}" if theirs.get("size") else ""
        out.append(f"*At {where}*{stale}: {BADGES[theirs['verdict']]}, measured "
                   f"{fmt_number(theirs['measured'])}, interval "
                   f"{fmt_interval(theirs['interval'])}{size} ({stands}).")
    if not any(r.profile == PAPER_SCALE for r in refs) and not out:
        return ""
    return " ".join(out)


def errata_at_scale_summary(bad: Sequence[tuple[str, dict[str, Any]]],
                            by_chapter: dict[str, list[Reference]],
                            built: dict[str, dict[str, Any]] | None = None) -> str:
    """Which errata (``(chapter, claim)`` pairs) the ``paper`` references re-measured, and
    which of them stand there (Markdown); "" with no ``paper`` reference. ``built``: each
    chapter's results in this build, to count the references that merely repeat it."""
    if not any(r.profile == PAPER_SCALE for rs in by_chapter.values() for r in rs):
        return ""
    built = built or {}
    stand, differ, missing, repeats = [], [], [], 0
    for chapter, c in bad:
        ref = next((r for r in by_chapter.get(chapter, []) if r.profile == PAPER_SCALE
                    and r.fresh), None)
        theirs = ref.claims().get(c["id"]) if ref else None
        if theirs is None:
            missing.append(c["id"])
            continue
        if chapter in built and same_as_built(ref, built[chapter]):
            repeats += 1
        if theirs["verdict"] == c["verdict"]:
            stand.append(c["id"])
        else:
            differ.append(f"{c['id']} ({BADGES[theirs['verdict']]} there)")
    again = (f", {repeats} of them by a reference that repeats this build's parameters (the "
             "paper's setting is already this build's)" if repeats else "")
    parts = [f"**At the paper's scale** (the fresh `{PAPER_SCALE}` references): "
             f"{len(stand)} of these {len(bad)} errata are re-measured with the same verdict"
             + (f" ({', '.join(f'`{i}`' for i in stand)})" if stand else "") + again]
    if differ:
        parts.append(f"{len(differ)} get another verdict ({', '.join(differ)})")
    if missing:
        parts.append(f"{len(missing)} have no fresh `{PAPER_SCALE}` measurement "
                     f"({', '.join(f'`{i}`' for i in missing)})")
    return "; ".join(parts) + ".\n"


def corrections_at_scale(docs: Sequence[dict[str, Any]],
                         by_chapter: dict[str, list[Reference]]) -> str:
    """The book's own corrections (claims with ``source: book``) under the built profile and
    at the paper's scale (Markdown list); "" with no ``paper`` reference."""
    if not any(r.profile == PAPER_SCALE for rs in by_chapter.values() for r in rs):
        return ""
    lines = []
    for d in docs:
        ref = next((r for r in by_chapter.get(d["notebook"], []) if r.profile == PAPER_SCALE),
                   None)
        for c in d["claims"]:
            if c.get("source") != "book":
                continue
            theirs = ref.claims().get(c["id"]) if ref else None
            if theirs is None:
                there = "not measured at the paper's scale"
            else:
                stale = "" if ref.fresh else f" (**stale**, commit `{ref.commit}`)"
                differs = (" (**the verdict differs from this build**)"
                           if ref.fresh and theirs["verdict"] != c["verdict"] else "")
                there = (f"{BADGES[theirs['verdict']]} at the paper's scale{stale}, "
                         f"{fmt_number(theirs['measured'])} {fmt_interval(theirs['interval'])}"
                         f"{differs}")
            lines.append(f"- `{c['id']}`: {BADGES[c['verdict']]} in this build "
                         f"({fmt_number(c['measured'])} {fmt_interval(c['interval'])}); {there}.")
    if not lines:
        return ""
    return ("## The book's corrections at the paper's scale\n\n"
            "Each correction derived in this book (a claim tagged *book*), in this build and "
            f"in the chapter's `{PAPER_SCALE}` reference. The `{PAPER_SCALE}` profile runs the "
            "paper's settings where the paper gives some; where it gives none (Remarks 3–4, "
            "which have no experiment in the paper) it is a larger run of the book's own "
            "models (see `notebooks/profiles.yml`).\n\n" + "\n".join(lines) + "\n")


def stale_differ_text(n: int, refs: int = 1) -> str:
    """``1 differs, in a stale reference`` / ``2 differ, in stale references``: ``n``
    differences over ``refs`` stale references."""
    return (f"{n} {'differs' if n == 1 else 'differ'}, in "
            f"{'a stale reference' if refs == 1 else 'stale references'}")


def summary_at_scale(docs: Sequence[dict[str, Any]],
                     by_chapter: dict[str, list[Reference]]) -> str:
    """One sentence for the introduction on each reference profile: how many chapters it
    covers, as the ledger lists them (the stale ones named: the sentence said "in 4 chapters"
    of the five ``paper`` references, counting the fresh ones only: issue 53), what the fresh
    ones re-measure and how many of their verdicts differ, and how many verdicts differ in
    the stale ones (Markdown); "" with no reference."""
    parts = []
    for prof in sorted({r.profile for rs in by_chapter.values() for r in rs}):
        pairs = [(d, r) for d in docs for r in by_chapter.get(d["notebook"], [])
                 if r.profile == prof]
        fresh = [(d, r) for d, r in pairs if r.fresh]
        stale = [(d, r) for d, r in pairs if not r.fresh]
        part = (f"the `{prof}` references cover {len(pairs)} "
                f"chapter{'s' if len(pairs) != 1 else ''}"
                + (f" ({len(stale)} of them stale: "
                   + ", ".join(f"`{d['notebook']}`" for d, _ in stale) + ")" if stale else ""))
        repeats = [d["notebook"] for d, r in fresh if same_as_built(r, d)]
        fresh = [(d, r) for d, r in fresh if not same_as_built(r, d)]
        if repeats:
            part += (f"; {', '.join(f'`{n}`' for n in repeats)} repeat"
                     f"{'s' if len(repeats) == 1 else ''} this build's run (the same "
                     "parameters), adding no new evidence")
        if fresh:
            measured = sum(c["id"] in r.claims() for d, r in fresh for c in d["claims"])
            kinds = dict.fromkeys(DIFFERENCE_KINDS, 0)
            for d, r in fresh:
                for kind, n in difference_kinds(d["claims"], r).items():
                    kinds[kind] += n
            differ = sum(kinds.values())
            how = f" ({differences_text(kinds)})" if differ else ""
            one = len(fresh) == 1
            adds = f"that add{'s' if one else ''} evidence " if repeats else ""
            part += (f"; the {'fresh one' if one else f'{len(fresh)} fresh ones'} {adds}"
                     f"re-measure{'s' if one else ''} {measured} of these claims, "
                     f"and {differ} of their verdicts {'differs' if differ == 1 else 'differ'} "
                     f"from this build's{how}")
        old = sum(len(differing_claims(d["claims"], [r], stale=True)) for d, r in stale)
        if old:
            kinds = dict.fromkeys(DIFFERENCE_KINDS, 0)
            for d, r in stale:
                for kind, n in difference_kinds(d["claims"], r).items():
                    kinds[kind] += n
            part += (f"; {old} verdict{'s' if old != 1 else ''} of the stale "
                     f"{'one' if len(stale) == 1 else 'ones'} "
                     f"{'differs' if old == 1 else 'differ'} from this build's "
                     f"({differences_text(kinds)}; stale: measured with code that has changed "
                     "since)")
        parts.append(part)
    if not parts:
        return ""
    return "At other scales, " + "; ".join(parts) + " (see the ledger).\n"
