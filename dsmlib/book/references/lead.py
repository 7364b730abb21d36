"""A chapter page's first screen across scales (book layer): every claim's verdict at every
scale the page shows, the paper's own data first, and the strongest evidence for each, so that
the page's opening speaks for every execution on it (issue 63, item 1).

A chapter opts in through its results' ``extra``: ``short`` (a few words per claim id) and
``settings`` (per setting, its ``dataset`` and ``depth``, which name the scale, and where given
its training images, device and teachers' training and test accuracy, which each column's
heading names). A claim's *strongest evidence* is the decided verdict with the smallest p-value
among the fresh scales, starred; where fresh scales decide it both ways, the first screen says
they disagree.

Before the table, Section 5's answer in words (issue 70, item 6: :func:`answer_sentences`): what
the paper claims, then per regime (CIFAR-10 with teachers that do not fit their training images,
CIFAR-10 with teachers that do, digits) one sentence on the scale that measured it, its setting
and whether the noisy student beat its baseline and the noiseless students, every number one of
the two claims' it names.
"""
from __future__ import annotations

import html
import math
from typing import Any, Sequence

from ...figures.tables import BADGES, data_table, fmt_number
from .contrast import Scale, split_case

__all__ = ["DATA_WORDS", "scale_words", "ordered_scales", "strongest", "verdict_cell",
           "claim_cell", "PAPER_CLAIM",
           "ANSWER_ROLES", "answer_id", "teachers_fit", "regime", "regimes", "headline", "answer_sentence", "answer_sentences",
           "answer_html", "first_screen_html"]

#: How the first screen names a data set.
DATA_WORDS = {"cifar10": "CIFAR-10", "cifar100": "CIFAR-100", "svhn": "SVHN",
              "digits": "digits"}


def _settings(sc: Scale) -> list[dict[str, Any]]:
    return list((sc.extra.get("settings") or {}).values())


def _joined(values: Sequence[Any], fmt: str = "{}") -> str:
    """Distinct values in order, each formatted, joined by " and "."""
    return " and ".join(fmt.format(v) for v in dict.fromkeys(values))


def scale_words(sc: Scale) -> str:
    """A scale in words: its data, training images, network and device, its teachers' training
    and test accuracy (per setting, in the settings' order), then the execution, e.g.
    ``CIFAR-10, 1,200 images, ResNet-8, on a CPU; teachers 61.7 % train, 48.84 % test
    (cpu-cifar10 reference)``; what a scale's results do not record is left out."""
    sets = _settings(sc)
    data = ", ".join(dict.fromkeys(DATA_WORDS.get(s.get("dataset"), str(s.get("dataset")))
                                   for s in sets)) or "?"
    images = [s["n_train"] for s in sets if s.get("n_train")]
    depth = sorted({s.get("depth") for s in sets if s.get("depth")})
    devices = [s["device"] for s in sets if s.get("device")]
    parts = [data]
    if images:
        parts.append(f"{' and '.join(f'{n:,}' for n in images)} images")
    if depth:
        parts.append(f"ResNet-{'/'.join(map(str, depth))}")
    if devices:
        parts.append(f"on {_joined(devices)}")
    train = [s["teacher_train_acc"] for s in sets if s.get("teacher_train_acc") is not None]
    test = [s["teacher_acc"] for s in sets if s.get("teacher_acc") is not None]
    teachers = (f"; teachers {' / '.join(f'{v:.1f}' for v in train)} % train, "
                f"{' / '.join(f'{v:.2f}' for v in test)} % test" if train and test else "")
    return f"{', '.join(parts)}{teachers} ({sc.label})"


def ordered_scales(scales: Sequence[Scale]) -> list[Scale]:
    """The paper's data first (a scale whose settings are all on a data set other than
    digits), then the others, each group in the order given (this build before the
    references)."""
    paper = [sc for sc in scales if _settings(sc) and all(s.get("dataset") != "digits"
                                                          for s in _settings(sc))]
    return paper + [sc for sc in scales if sc not in paper]


def strongest(cid: str, scales: Sequence[Scale]) -> tuple[Scale | None, bool]:
    """The strongest evidence for claim ``cid`` across the fresh ``scales``: ``(scale,
    disagree)``, the scale whose decided verdict has the smallest p-value (``None`` when no
    fresh scale decides it), and whether fresh scales decide it both ways."""
    decided = [(sc, c) for sc in scales if sc.fresh for c in [sc.claim(cid)]
               if c is not None and c["verdict"] != "inconclusive"]
    if not decided:
        return None, False
    sc, _ = min(decided, key=lambda sc_c: 1.0 if sc_c[1].get("p_value") is None
                else sc_c[1]["p_value"])
    return sc, len({c["verdict"] for _, c in decided}) > 1


def _num(x: float | None) -> str:
    """Three significant digits (the sections further down give four)."""
    if x is None or not math.isfinite(x):
        return fmt_number(x)
    return f"{x:.3g}".replace("-", "−")


def verdict_cell(c: dict[str, Any] | None, best: bool = False) -> str:
    """One claim at one scale: its badge (★ where it is the strongest evidence), value,
    interval, and a directional claim's size against δ."""
    if c is None:
        return "<span class='absent'>not measured</span>"
    star = "<span class='strongest' title='the strongest evidence'>★</span> " if best else ""
    size = f"<br><span class='size'>{html.escape(c['size'].split(' (')[0])}</span>" \
        if c.get("size") else ""
    return (f"{star}<span class='badge {c['verdict']}'>{BADGES[c['verdict']]}</span> "
            f"{_num(c['measured'])}<br><span class='iv'>"
            f"[{_num(c['interval'][0])}, {_num(c['interval'][1])}]</span>"
            f"{size}")


def claim_cell(cid: str, words: str, unit: str, disagree: bool = False) -> str:
    unit = f" <span class='unit'>({html.escape(unit)})</span>" if unit else ""
    split = "<br><span class='disagree'>the scales disagree</span>" if disagree else ""
    return f"{html.escape(words)}{unit}<br><code>{html.escape(cid)}</code>{split}"


#: What the paper claims of the noisy student, the first sentence of the answer.
PAPER_CLAIM = ("The paper claims that label noise lowers the students' gradient norm G(θ) and "
               "that the noisy student chosen on validation accuracy beats both its teacher and "
               "the noiseless student on the test set.")
#: The roles of the claims an answer sentence reads, in its order: the selected noisy student
#: against its baseline, then against the noiseless students. A chapter names the claim of each
#: role in its results' ``extra["answer_ids"]`` (Section 5's registry declares them).
ANSWER_ROLES = ("baseline", "noiseless")


def answer_id(sc: Scale, role: str) -> str:
    """The id of the claim that plays ``role`` (:data:`ANSWER_ROLES`) in ``sc``'s results
    (``extra["answer_ids"]``); "" where they name none."""
    return (sc.extra.get("answer_ids") or {}).get(role, "")
#: A verdict of "the noisy student beats X", as the verb of the answer.
VERBS = {"confirmed": "beat", "refuted": "fell below",
         "inconclusive": "could not be told apart from"}
#: At most this many regimes get a sentence (with :data:`PAPER_CLAIM`, four sentences).
MAX_REGIMES = 3


def headline(claim: dict[str, Any]) -> dict[str, Any] | None:
    """The case that heads ``claim`` (a results document's claim): the row marked ``heads``
    (stored as data when the claim was judged), else its first case; never a row shown
    ``beside`` it."""
    rows = [d for d in claim.get("details", []) if not d.get("beside")]
    return next((d for d in rows if d.get("heads")), None) or (rows[0] if rows else None)


def _setting_of(sc: Scale, row: dict[str, Any] | None) -> tuple[str | None, dict[str, Any]]:
    """The setting (name, its entry of ``extra["settings"]``) of a case row of ``sc``; the
    scale's only setting where the row names none."""
    settings = sc.extra.get("settings") or {}
    name = split_case(row["case"], settings)[0] if row else None
    if name is None and len(settings) == 1:
        name = next(iter(settings))
    return name, settings.get(name) or {}


def _fit(entry: dict[str, Any], judged: bool) -> bool | None:
    """Whether a setting's teachers fit their training images: its ``teachers_fit``, else read
    off what a judged setting's "teacher" was judged against (the teacher only where they fit:
    the gate); None where its results do not say."""
    if entry.get("teachers_fit") in ("yes", "no"):
        return entry["teachers_fit"] == "yes"
    if judged and entry.get("baseline"):
        return entry["baseline"] == "teacher"
    return None


def teachers_fit(sc: Scale) -> bool | None:
    """Whether the teachers of the setting that heads ``sc``'s accuracy claim fit their
    training images (:func:`_fit`); None where it judged no accuracy and does not say."""
    c = sc.claim(answer_id(sc, "baseline"))
    name, entry = _setting_of(sc, headline(c) if c else None)
    return _fit(entry, c is not None and name not in (sc.extra.get("not_judged") or {}))


def regime(sc: Scale) -> tuple[str, bool | None]:
    """A scale's regime: its data (one name for all its settings) and, for data other than
    digits (one regime), whether its teachers fit their training images (:func:`teachers_fit`)."""
    data = "/".join(dict.fromkeys(str(s.get("dataset")) for s in _settings(sc)))
    return data, None if data == "digits" else teachers_fit(sc)


def _p(sc: Scale) -> float:
    c = sc.claim(answer_id(sc, "baseline"))
    if c is None:
        return 2.0
    if c["verdict"] == "inconclusive" or c.get("p_value") is None:
        return 1.5
    return float(c["p_value"])


def regimes(scales: Sequence[Scale]) -> list[tuple[tuple[str, bool | None], Scale]]:
    """One scale per regime (:func:`regime`), the paper's data first (teachers that do not fit,
    then those that do), digits last, at most :data:`MAX_REGIMES`: within a regime a fresh scale
    before a stale one, then the one whose ``fig1.noisy_beats_teacher`` is decided with the
    smallest p-value, then the order given (this build first)."""
    groups: dict[tuple[str, bool | None], list[Scale]] = {}
    for sc in scales:
        if _settings(sc):
            groups.setdefault(regime(sc), []).append(sc)
    order = sorted(groups, key=lambda k: (k[0] == "digits", k[0], {False: 0, True: 1}.get(k[1], 2)))
    return [(k, min(groups[k], key=lambda sc: (not sc.fresh, _p(sc), groups[k].index(sc))))
            for k in order][:MAX_REGIMES]


def _pts(x: float) -> str:
    return f"{x:+.2f}".replace("-", "−")


def _iv(iv: Sequence[float]) -> str:
    return "[" + ", ".join(f"{v:.2f}".replace("-", "−") for v in iv) + "]"


def _against(sc: Scale, cid: str, fit: bool | None) -> str:
    """The clause on one claim of ``sc``: the verb of its verdict, what it compares with (the
    headline row's ``baseline``, else "its teacher" only where the teachers fit, "the continued
    teacher" where they do not; "the noiseless students" for the noiseless claim), its value
    and interval in points, its verdict; and a row shown beside it (the teacher itself)."""
    c = sc.claim(cid)
    row = headline(c) or {}
    if cid == answer_id(sc, "noiseless"):
        whom = "the noiseless students"
    elif row.get("baseline"):
        whom = "its teacher" if row["baseline"] == "teacher" else f"the {row['baseline']}"
    else:
        whom = "its teacher" if fit else "the continued teacher" if fit is False else "its baseline"
    text = (f"{VERBS[c['verdict']]} {whom} ({_pts(c['measured'])} points "
            f"{_iv(c['interval'])}, {c['verdict']})")
    beside = next((d for d in c.get("details", []) if d.get("beside")), None)
    if beside is not None:
        text += (f", and {VERBS.get(beside.get('verdict'), 'was set beside')} the teacher itself "
                 f"({_pts(beside['measured'])} {_iv(beside['interval'])}, shown beside, "
                 f"{beside.get('verdict')})")
    return text


def answer_sentence(sc: Scale) -> str:
    """One regime's sentence (HTML-safe text): the scale, its data, training images, network
    and whether its teachers fit, then whether the validation-selected noisy student beat its
    baseline and the noiseless students (:func:`_against`), or why its accuracy was not
    judged."""
    c = sc.claim(answer_id(sc, "baseline"))
    fit = teachers_fit(sc)
    name, entry = _setting_of(sc, headline(c) if c else None)
    if name is None:
        name, entry = next(iter((sc.extra.get("settings") or {}).items()), (None, {}))
    data = DATA_WORDS.get(entry.get("dataset"), str(entry.get("dataset")))
    images = f"{entry['n_train']:,} training images, " if entry.get("n_train") else ""
    depth = f"ResNet-{entry['depth']}" if entry.get("depth") else "its network"
    fits = ("teachers that fit their training images" if fit else
            "teachers that do not fit their training images" if fit is False else "")
    where = f"{images}{depth}" + (f", {fits}" if fits else "")
    head = f"On {data} ({sc.label}: {where})"
    if c is None:
        why = "; ".join((sc.extra.get("not_judged") or {}).values()) or "no setting passed the gate"
        return f"{head}, accuracy was not judged ({why})."
    parts = [_against(sc, answer_id(sc, "baseline"), fit)]
    if sc.claim(answer_id(sc, "noiseless")) is not None:
        parts.append(_against(sc, answer_id(sc, "noiseless"), fit))
    return f"{head}, the validation-selected noisy student {' and '.join(parts)}."


def answer_sentences(scales: Sequence[Scale]) -> list[tuple[str, tuple[str, ...], str]]:
    """The answer in words, at most four sentences: :data:`PAPER_CLAIM`, then one per regime
    (:func:`regimes`, :func:`answer_sentence`); each as ``(text, the claim ids whose numbers it
    quotes, the scale's label)`` ("" for the paper's claim). None without a scale that measured
    Section 5's accuracy claims or said why not."""
    picked = [(k, sc) for k, sc in regimes(scales)
              if sc.claim(answer_id(sc, "baseline")) is not None or sc.extra.get("not_judged")]
    if not picked:
        return []
    out = [(PAPER_CLAIM, (), "")]
    for _, sc in picked:
        ids = tuple(i for role in ANSWER_ROLES for i in [answer_id(sc, role)]
                    if sc.claim(i) is not None)
        out.append((answer_sentence(sc), ids, sc.label))
    return out


def answer_html(scales: Sequence[Scale]) -> str:
    """The answer (:func:`answer_sentences`) as one paragraph, each sentence a span naming the
    claims it quotes and its scale (``data-claims``, ``data-scale``); "" with none."""
    spans = [f"<span class='answer-sentence' data-claims='{' '.join(ids)}' "
             f"data-scale='{html.escape(label)}'>{html.escape(text)}</span>"
             for text, ids, label in answer_sentences(scales)]
    return f"<p class='answer'>{' '.join(spans)}</p>" if spans else ""


def first_screen_html(scales: Sequence[Scale]) -> str:
    """The page's opening across scales (HTML): the answer in words (:func:`answer_html`),
    then the first screen's table: one row per claim (every scale's claims), in the first
    scale's words (``extra["short"]``) with its unit, its verdict, value and interval at each
    scale (the paper's data first), each column headed by its scale (:func:`scale_words`), the
    strongest evidence starred (:func:`strongest`); "" with fewer than two scales or a chapter
    that names no claim in short words."""
    if len(scales) < 2 or not scales[0].extra.get("short"):
        return ""
    order = ordered_scales(scales)
    short = scales[0].extra.get("short") or {}
    ids = list(dict.fromkeys(c["id"] for sc in [scales[0], *order]    # every scale's claims
                             for c in sc.doc.get("claims", [])))
    head = ["Claim"] + [html.escape(scale_words(sc)) for sc in order]   # its label says stale
    rows = []
    for cid in ids:
        best, disagree = strongest(cid, order)
        unit = next((c.get("unit") for sc in order for c in [sc.claim(cid)]
                     if c and c.get("unit")), "")
        rows.append([claim_cell(cid, short.get(cid, cid), unit, disagree)]
                    + [verdict_cell(sc.claim(cid), sc is best) for sc in order])
    return answer_html(scales) + data_table(head, rows, table_class="cases first-screen cards")
