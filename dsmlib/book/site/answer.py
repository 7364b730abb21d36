"""The book's answer, for the introduction's first screen (book layer; issue 71, item 11): one
plain sentence per part of the paper, saying what the paper claims and what was measured.

Which claims speak for each part is declared once, as data, by each chapter under ``answer:`` in
profiles.yml (:func:`parts`). Every number of a
sentence is read from a claim: its measured value and 99 % interval (and, where the words ask
for it, the paper's value), at the execution that decides the claim most strongly, this build
or a fresh committed reference (:func:`dsmlib.book.references.lead.strongest`: the decided
verdict with the smallest p-value, as the Section 5 page stars it), with that execution's
setting named. A claim that no execution decides is read where it comes nearest (the smallest
p-value) and called inconclusive. Each :class:`Sentence` carries the claims it rests on
(:class:`Basis`), so that a test can recompute every number from them.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

from ...figures.tables import fmt_interval, fmt_number
from ..references.contrast import Scale, scales_of, split_case
from ..references.lead import DATA_WORDS, strongest
from ...foundation.handoff import hand_run_root
from ..profiles import NotebookSpec, load_specs
from ..references.stored import Reference

__all__ = ["Evidence", "Part", "parts", "book_parts", "Basis", "Sentence", "ANSWER_LEAD", "execution_scales",
           "on_papers_data", "setting_words", "baseline_words", "value_words",
           "basis_of",
           "sentence", "answer", "answer_markdown"]


@dataclass(frozen=True)
class Evidence:
    """One claim that speaks for a part of the paper. ``words``: what its measurement says, in a
    reader's words, with ``{v}`` for the measured value, its interval and unit, and optionally
    ``{paper}`` for the paper's value (no number typed in). ``case``: name the claim's deciding
    case in its setting (False where that case is no setting, e.g. a limit). ``by_case``: for a
    claim whose cases measure different things (an exponent, a limit), the words for each
    case by name; the case that heads the claim in the execution read picks them, so that the
    words always describe the number shown."""
    claim: str
    words: str
    case: bool = True
    by_case: tuple[tuple[str, str], ...] = ()
    role: str = ""

    def claim_in(self, scales: Sequence[Scale]) -> str:
        """The claim id this evidence reads: its own, or, for a ``role``, the id the
        executions' results name for that role (``extra["answer_ids"]``)."""
        if not self.role:
            return self.claim
        return next((ids[self.role] for sc in scales
                     for ids in [sc.extra.get("answer_ids") or {}] if self.role in ids), "")

    def words_for(self, case: str) -> str:
        """The words that describe ``case`` (the claim's heading case): its own where
        ``by_case`` names it, else :attr:`words`."""
        return dict(self.by_case).get(case, self.words)


@dataclass(frozen=True)
class Part:
    """One part of the paper: its ``title``, the ``chapter`` that measures it, what the paper
    claims (``claim``, a verb phrase after the title, no measured number in it), the claims that
    speak for it, whether only executions on the paper's own data count (``papers_data``), and
    how a deciding case is named (``case_words``, ``{}`` for the case)."""
    title: str
    chapter: str
    claim: str
    evidence: tuple[Evidence, ...]
    papers_data: bool = False
    case_words: str = "{}"


def parts(specs: dict[str, NotebookSpec]) -> tuple[Part, ...]:
    """The parts of the paper, in its order (``rank``), each as its chapter declares it under
    ``answer:`` in profiles.yml (issue 71: Props. 1-3, the valley remarks, Figure 3's cloud,
    and Section 5 on the paper's data): the chapter is found through its declaration, never
    named here."""
    out = []
    for name, spec in specs.items():
        a = spec.answer
        if not a:
            continue
        ev = tuple(Evidence(claim=str(e.get("claim", "")), words=str(e["words"]),
                            case=bool(e.get("case", True)),
                            by_case=tuple((str(k), str(v)) for k, v in
                                          (e.get("by_case") or {}).items()),
                            role=str(e.get("role", "")))
                   for e in a.get("evidence") or [])
        out.append((a.get("rank", len(out)), Part(str(a["part"]), name, str(a["claim"]), ev,
                                                  papers_data=bool(a.get("papers_data", False)),
                                                  case_words=str(a.get("case_words", "{}")))))
    return tuple(p for _, p in sorted(out, key=lambda rp: rp[0]))


def book_parts() -> tuple[Part, ...]:
    """:func:`parts` of the book this ``dsmlib`` serves (the one around the working directory,
    else the one it is installed from)."""
    return parts(load_specs(hand_run_root() / "notebooks"))


#: What the answer's numbers are, said once above the sentences.
ANSWER_LEAD = ("**What the book found**, part by part of the paper. Each number is a claim's "
               "measured value with its 99 % interval, read where the claim is decided most "
               "strongly (the smallest p-value, in this build or a fresh committed reference; "
               "a stale one only where nothing fresh measured the claim, labelled so).")


@dataclass(frozen=True)
class Basis:
    """One claim a sentence rests on: its id, the execution it is read from (a scale's label),
    the setting the sentence names for it, its verdict there, and whether other fresh
    executions decide it the other way."""
    claim: str
    scale: str
    setting: str
    verdict: str
    disagree: bool = False


@dataclass(frozen=True)
class Sentence:
    """One part's sentence (Markdown) and the claims it rests on."""
    part: str
    text: str
    basis: tuple[Basis, ...]


def execution_scales(chapter: str, docs: Sequence[dict[str, Any]],
                     references: dict[str, list[Reference]], profile: str, *,
                     build_counts: bool = True) -> list[Scale]:
    """The executions of ``chapter``: this build's (when it has the chapter and
    ``build_counts``), then each committed reference's, labelled as the ledger labels them."""
    built = next((d for d in docs if d.get("notebook") == chapter), None)
    refs = references.get(chapter, [])
    if built is None:
        return [Scale(f"{r.profile} reference" + ("" if r.fresh else " (stale)"), r.doc,
                      r.fresh) for r in refs]
    scales = scales_of(built, refs, profile)
    return scales if build_counts else scales[1:]


def on_papers_data(scale: Scale) -> bool:
    """Whether every setting of an execution is on a data set of the paper's (not digits)."""
    sets = list((scale.extra.get("settings") or {}).values())
    return bool(sets) and all(s.get("dataset") != "digits" for s in sets)


def _label(scale: Scale) -> str:
    """An execution in words: ``the `paper` reference``, ``this `quick` build``."""
    name, _, rest = scale.label.partition(" ")
    return f"this `{name}` build" if rest.startswith("(this build)") else f"`{name}` {rest}"


def setting_words(scale: Scale, claim: dict[str, Any], part: Part, evidence: Evidence) -> str:
    """Where a claim was measured: for a chapter that names its settings (Section 5), the data,
    training images and network of the setting of its deciding case, then the execution (e.g.
    ``CIFAR-10, 1,200 images, ResNet-8, `cpu-cifar10` reference``); otherwise the execution,
    then its deciding case (up to any ": " that explains it)."""
    settings = scale.extra.get("settings") or {}
    case = claim.get("case", "")     # the case that heads it, stored on the claim
    if settings:
        name, _ = split_case(case, settings)
        if name is None and len(settings) == 1:
            name = next(iter(settings))
        s = settings.get(name) or {}
        words = [DATA_WORDS.get(s.get("dataset"), str(s.get("dataset") or "")),
                 f"{int(s['n_train']):,} images" if s.get("n_train") else "",
                 f"ResNet-{s['depth']}" if s.get("depth") else ""]
        return ", ".join([w for w in words if w] + [_label(scale)])
    where = part.case_words.format(case.split(": ")[0]) if case and evidence.case else ""
    return ", ".join([_label(scale)] + ([where] if where else []))


def baseline_words(claim: dict[str, Any]) -> str:
    """What the case heading ``claim`` compares with (its row's ``baseline``, stored when it was
    judged), in words: ``the continued teacher`` (a teacher trained as long as a student, where
    the teachers do not fit), ``its teacher``; ``its baseline`` where the row names none."""
    row = next((d for d in claim.get("details", []) if d.get("heads")), {})
    base = row.get("baseline")
    if base == "continued teacher":
        return "the continued teacher (its teacher trained as long as a student)"
    return "its teacher" if base == "teacher" else f"the {base}" if base else "its baseline"


def value_words(claim: dict[str, Any]) -> str:
    """A claim's measured value, its interval and its unit (``−7.022 [−8.162, −5.881]
    points``)."""
    unit = f" {claim['unit']}" if claim.get("unit") else ""
    return f"{fmt_number(claim['measured'])} {fmt_interval(claim['interval'])}{unit}"


def _nearest(cid: str, scales: Sequence[Scale]) -> tuple[Scale, dict[str, Any]] | None:
    """The execution among ``scales`` whose measurement of claim ``cid`` comes nearest to
    deciding it: decided before undecided, then by the smallest p-value; None where none
    measured it."""
    measured = [(sc, c) for sc in scales for c in [sc.claim(cid)] if c is not None]
    if not measured:
        return None
    return min(measured, key=lambda sc_c: (sc_c[1]["verdict"] == "inconclusive",
                                           1.0 if sc_c[1].get("p_value") is None
                                           else sc_c[1]["p_value"]))


def basis_of(cid: str, scales: Sequence[Scale]) -> tuple[Scale, dict[str, Any], bool] | None:
    """The execution a sentence reads claim ``cid`` from, the claim there, and whether fresh
    executions decide it both ways: the strongest decided evidence among the fresh executions
    (:func:`~dsmlib.book.references.lead.strongest`); where none decides it, the fresh one
    nearest to deciding (smallest p-value); where no fresh one measured it, the stale one
    nearest to deciding (the sentence labels it stale); None where none measured it."""
    best, disagree = strongest(cid, scales)
    if best is not None:
        return best, best.claim(cid), disagree
    found = (_nearest(cid, [sc for sc in scales if sc.fresh])
             or _nearest(cid, [sc for sc in scales if not sc.fresh]))
    return (found[0], found[1], False) if found else None


def _verdict(claim: dict[str, Any], disagree: bool, measured_at: int) -> str:
    """The verdict as a sentence gives it: "inconclusive wherever measured" where several
    executions measured it and none decides; a split between fresh executions said."""
    if claim["verdict"] == "inconclusive" and measured_at > 1:
        return "inconclusive wherever measured"
    return claim["verdict"] + ("; another execution decides it the other way" if disagree
                               else "")


def _join(clauses: list[str]) -> str:
    """``a; b; and c`` (``a; and b``, ``a``)."""
    return clauses[0] if len(clauses) == 1 else "; ".join(clauses[:-1]) + "; and " + clauses[-1]


def sentence(part: Part, scales: Sequence[Scale], *, fallback: bool = False) -> Sentence:
    """``part``'s sentence from the executions ``scales`` of its chapter: its title and claim,
    then each of its claims' measurement at its strongest evidence with the verdict, setting and
    claim id. ``fallback``: none of ``scales`` is on the paper's data although the part asks
    for it (the sentence says so)."""
    clauses, basis = [], []
    for ev in part.evidence:
        cid = ev.claim_in(scales)
        found = basis_of(cid, scales) if cid else None
        if found is None:
            continue
        sc, c, disagree = found
        where = setting_words(sc, c, part, ev)
        measured_at = sum(1 for s in scales
                          if s.fresh == sc.fresh and s.claim(cid) is not None)
        text = ev.words_for(c.get("case", "")).format(
            v=value_words(c), paper=fmt_number(c.get("paper")), baseline=baseline_words(c))
        clauses.append(f"{text} ({_verdict(c, disagree, measured_at)}; {where}; "
                       f"`{cid}`)")
        basis.append(Basis(cid, sc.label, where, c["verdict"], disagree))
    head = f"**{part.title}** {part.claim}"
    if not clauses:
        return Sentence(part.title, f"{head}; no execution of this book measures it yet.", ())
    note = " (no execution here is on the paper's own data)" if fallback else ""
    return Sentence(part.title, f"{head}{note}: {_join(clauses)}.", tuple(basis))


def answer(docs: Sequence[dict[str, Any]], references: dict[str, list[Reference]] | None, *,
           profile: str, build_counts: bool = True,
           declared: Sequence[Part] | None = None) -> list[Sentence]:
    """One :class:`Sentence` per part of the paper (``declared``, default :func:`book_parts`),
    from this build's results ``docs`` (counted unless ``build_counts`` is False: a machinery
    profile's runs are no evidence) and the committed ``references`` (chapter -> references)."""
    out = []
    for part in (book_parts() if declared is None else declared):
        scales = execution_scales(part.chapter, docs, references or {}, profile,
                                  build_counts=build_counts)
        paper = [sc for sc in scales if on_papers_data(sc)] if part.papers_data else scales
        fallback = part.papers_data and not paper
        out.append(sentence(part, scales if fallback else paper,
                            fallback=fallback and bool(scales)))
    return out


def answer_markdown(sentences: Sequence[Sentence], *, profile: str,
                    build_counts: bool = True) -> str:
    """The answer as the introduction opens with it: :data:`ANSWER_LEAD`, then one bullet per
    sentence (Markdown). ``build_counts`` False: the ``profile`` build's own runs are left out
    (a machinery profile), and the lead says so."""
    lead = ANSWER_LEAD if build_counts else ANSWER_LEAD.replace(
        "in this build or a fresh committed reference",
        f"in a fresh committed reference: this `{profile}` build's runs test the machinery "
        "and are left out")
    return lead + "\n\n" + "\n".join(f"- {s.text}" for s in sentences) + "\n"
