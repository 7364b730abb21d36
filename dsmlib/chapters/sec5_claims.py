"""Claims of the ``sec5_distillation`` chapter (Section 5, Figures 1 and 2), judged on the cells
of :mod:`dsmlib.chapters.sec5_distillation` with **seeds as the unit**: every statistic is
computed within a seed, and its interval is a Student-t interval over seeds (``S - 1`` degrees
of freedom). Every claim has one case per setting (the full data, and the headroom setting where
the grid has one), named by the setting (:func:`verdicts_by_setting` reads a claim per setting).

What each family of claims compares:

- **noise against none**: each noisy student's ``log G`` against its *control*, the student
  trained without noise on the noise's mean target (:meth:`DistillResults.control`). For the
  swap this removes the target's shrinkage by ``kappa`` (Eq. 24), which lowers ``G`` with no
  implicit regulariser at all; the raw trend along ``p`` is kept under a name that says so.
  These must hold at every level (an intersection-union test: each case at the ledger's level).
- **more noise**: every step between consecutive *noisy* levels (the noiseless point is not part
  of it), with a joint (Bonferroni) box over all steps, so the claim's level is the ledger's.
- **accuracy**: a test-accuracy gain judged against the smallest gain worth having, ``delta`` =
  :data:`DELTA_FRACTION` of the teachers' test error in the setting (:func:`smallest_gain`),
  fixed here before measuring: confirmed when the interval lies above 0 and reaches past
  ``delta``, refuted when it lies below ``delta`` (no gain of useful size), inconclusive
  otherwise (:func:`dsmlib.foundation.claims.gain_verdict`). The verdicts at ``delta / 2`` and
  ``2 delta`` are kept beside (:func:`delta_rows`).
- **some student**: "some models improved" holds if one noisy student's gain is confirmed with a
  joint box over all students (:func:`some_case`); refuted only if every one is refuted.

Bands are fixed here before measuring. Sign claims on ``G`` (the paper states directions, not
sizes) are strict.
"""
from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..foundation.claims import (CONFIDENCE, Case, Claim, band_gap, case, combine_all,
                                 every_case, from_case, gain_verdict, joint_level, parse_band)
from ..models.datasets import SPECS
from .sec5_distillation import (KINDS, Cell, DistillResults, selected_levels, selected_test_acc,
                                setting_of, shrinkage_rows)

__all__ = ["STRICT", "BELOW_BAND", "STEP_BAND", "TRAIN_LOSS_BAND", "DELTA_FRACTION",
           "ACCURACY_IDS", "SOME_IDS", "smallest_gain", "late_log_gradnorm", "some_case",
           "gradnorm_claims", "accuracy_claims", "figure2_claims", "not_measured", "departures",
           "distill_claims", "verdicts_by_setting", "delta_rows"]

STRICT = 1e-12
BELOW_BAND = (None, -STRICT)          # log(G_a / G_b): a below b
STEP_BAND = (None, -STRICT)           # log(G_{k+1} / G_k) between consecutive noisy levels
TRAIN_LOSS_BAND = (None, 0.05)        # final train loss / variance of the targets: "near zero"
# The smallest test-accuracy gain worth having, as a fraction of the teacher's test error in the
# setting: a student must remove a tenth of its teacher's mistakes to be worth a second training
# run of the teacher's length. Fixed before any measurement; never tuned to a result.
DELTA_FRACTION = 0.1
ACCURACY_IDS = ("fig1.noisy_beats_teacher", "fig1.noisy_beats_noiseless",
                "fig1.some_student_beats_teacher", "fig1.validation_selection_beats_average",
                "fig2.swap_flatter_and_better")
SOME_IDS = ("fig1.some_student_beats_teacher",)   # decided by the "some case" rule

_LOG_RATIO = "$\\log(G_{{\\mathrm{{{a}}}}} / G_{{\\mathrm{{{b}}}}})$"
_CONTROL_TEXT = {"gaussian": "the noiseless student (E[ỹ] = y)",
                 "symmetric": "its control, trained without noise on E[ỹ] = M_p y"}
_SWAP_NOTE = (" Prop. 3's strength (2η/L)σ²/b·G(θ) assumes noise whose covariance does not "
              "depend on the logits; the swap's does (it mixes the entries of y), so its "
              "regulariser is a y-weighted G, and only the sign is tested.")
_GAIN_RULE = (" Judged against the smallest useful gain δ = {frac:g} of the teacher's test error "
              "in the setting: confirmed when the 99 % interval lies above 0 and reaches past δ, "
              "refuted when it lies below δ, that is, no gain of useful size.")


def smallest_gain(res: DistillResults, setting: str) -> float:
    """``delta``: :data:`DELTA_FRACTION` of the teachers' mean test error in ``setting`` (at
    least :data:`STRICT`, so that a teacher at 100 % still leaves a band)."""
    err = 1.0 - float(res.teacher(setting).final["test_acc"].mean())
    return max(DELTA_FRACTION * err, STRICT)


def _seed_case(values: np.ndarray, band, quantity: str, *, level: float = CONFIDENCE) -> Case:
    """Mean over seeds with its Student-t interval (seeds are independent replicates)."""
    v = np.asarray(values, dtype=float)
    return case(paper=0.0, measured=float(v.mean()), se=float(v.std(ddof=1) / math.sqrt(v.size)),
                band=band, quantity=quantity, dof=v.size - 1, level=level)


def _gain_case(values: np.ndarray, delta: float, quantity: str, *,
               level: float = CONFIDENCE) -> tuple[Case, dict[str, Any]]:
    """A test-accuracy gain over seeds judged by :func:`gain_verdict` against ``delta`` (its band
    is ``[delta, inf)``), and the row extras: ``delta`` and the verdicts at ``delta / 2`` and
    ``2 delta``."""
    c = _seed_case(values, (delta, None), f"{quantity}; δ = {100 * delta:.3g} points",
                   level=level)
    c.verdict = gain_verdict(c.interval, delta)
    return c, {"delta": delta, "verdicts_at": {"δ/2": gain_verdict(c.interval, delta / 2),
                                               "2δ": gain_verdict(c.interval, 2 * delta)}}


def _every_case(id: str, statement: str, cases: dict[str, Case],
                extras: dict[str, dict[str, Any]] | None = None, **kw: Any) -> Claim:
    """:func:`every_case`, each case's standard error (what
    :func:`dsmlib.chapters.sec5_distillation.seeds_to_decide` plans with) and ``extras`` kept
    in its row of ``details``."""
    claim = every_case(id, statement, cases, **kw)
    for row, (k, c) in zip(claim.details, cases.items()):
        row["se"] = c.se
        row.update((extras or {}).get(k, {}))
    return claim


def _log_g(cell: Cell) -> np.ndarray:
    return np.log(cell.final["gradnorm"])


def late_log_gradnorm(cell: Cell) -> np.ndarray:
    """Per seed, the mean of ``log G`` over the epochs of the second half of training
    (``e > E/2``): the area under the log-G curve there, per epoch."""
    curves = cell.curves["gradnorm"]
    epochs = np.arange(curves.shape[1])
    return np.log(curves[:, epochs > (curves.shape[1] - 1) / 2]).mean(axis=1)


def _depth(c: Case) -> float:
    """How far the interval lies inside the band (its distance to the nearer end)."""
    lo, hi = parse_band(c.band)
    return min(c.interval[0] - lo, hi - c.interval[1])


def some_case(id: str, statement: str, cases: dict[str, Case], *, note: str = "",
              scope: str | None = None, condition: str = "",
              extras: dict[str, dict[str, Any]] | None = None) -> Claim:
    """A claim that holds if *some* case holds: confirmed if any case is confirmed, refuted if
    every case is refuted, else inconclusive. The cases' intervals must form a joint box
    (:func:`joint_level`), or "some" would be confirmed by chance among many. The headline is the
    deciding case: the confirmed one furthest inside its band, else the one closest to it."""
    if not cases:
        raise ValueError("cases must not be empty")
    vs = [c.verdict for c in cases.values()]
    overall = ("confirmed" if "confirmed" in vs else "refuted" if set(vs) == {"refuted"}
               else "inconclusive")
    pool = [(k, c) for k, c in cases.items() if c.verdict == overall]
    key, head = (max(pool, key=lambda kc: _depth(kc[1])) if overall == "confirmed"
                 else min(pool, key=lambda kc: band_gap(kc[1])))
    details = [{"case": k, "paper": c.paper, "measured": c.measured, "interval": c.interval,
                "band": c.band, "verdict": c.verdict, "se": c.se, **(extras or {}).get(k, {})}
               for k, c in cases.items()]
    head = Case(**{**head.__dict__, "verdict": overall,
                   "quantity": f"{head.quantity} (deciding case: {key})"})
    return from_case(id, statement, head, note=note, details=details, scope=scope,
                     condition=condition)


def _joint(values: dict[str, np.ndarray], band, quantity: str) -> dict[str, Case]:
    """One case per entry, all at the joint (Bonferroni) level of their number."""
    level = joint_level(len(values))
    return {k: _seed_case(v, band, f"{quantity} (joint {CONFIDENCE:.0%} box over {len(values)})",
                          level=level) for k, v in values.items()}


def _steps(res: DistillResults, kind: str, log_g) -> dict[str, np.ndarray]:
    """Per setting, each step between consecutive noisy levels of ``kind``: the per-seed change
    of ``log_g(cell)``."""
    out = {}
    for s in res.settings:
        cells = res.noisy(s, kind)
        for a, b in zip(cells, cells[1:]):
            out[f"{s}: {a.name} → {b.level:g}"] = log_g(b) - log_g(a)
    return out


def _excess(res: DistillResults, cell: Cell, log_g=_log_g) -> np.ndarray:
    return log_g(cell) - log_g(res.control(cell))


def _kappa_text(res: DistillResults) -> str:
    rows = shrinkage_rows(res)
    return ("κ² against the measured G / G(noiseless) of the swap student and of its control "
            "(geometric means over seeds): " + "; ".join(
                f"{r['setting']}, p = {r['p']:g}: κ² = {r['kappa2']:.2f}, swap {r['swap']:.2f}, "
                f"control {r['control']:.2f}" for r in rows) + ".")


def gradnorm_claims(res: DistillResults, note: str = "") -> list[Claim]:
    """Figure 1's top row: noise against none (each kind against its control), more noise (steps
    between noisy levels), the swap's raw trend (shrinkage included), the trend beyond the control,
    the same comparison over the epochs, and every student against its teacher."""
    ss, claims = res.settings, []
    for kind, sym in KINDS.items():
        cases = {f"{s}: {c.name}": _seed_case(
            _excess(res, c), BELOW_BAND, _LOG_RATIO.format(a="noisy", b="control")
            + f"; control: {_CONTROL_TEXT[kind]}; paper: < 0") for s in ss for c in res.noisy(s, kind)}
        if cases:
            claims.append(_every_case(
                f"fig1.noise_lowers_gradnorm_{'sigma2' if kind == 'gaussian' else 'p'}",
                f"Any {kind} label noise lowers G(θ): every {sym} student's G lies below that of "
                f"{_CONTROL_TEXT[kind]} (Figure 1; Prop. 3).", cases,
                scope="setting" if kind == "gaussian" else "reading",
                note=(note + ("" if kind == "gaussian" else _SWAP_NOTE)).strip(),
                condition="Needs students trained long enough at the noisy learning rates for the "
                          "implicit regularizer to act."))
    for cid, kind, log_g, text, scope in (
            ("fig1.gradnorm_falls_with_sigma2", "gaussian", _log_g,
             "More Gaussian noise lowers G(θ) further: G falls at every step up the σ² grid "
             "(noisy levels only; Figure 1).", "setting"),
            ("fig1.gradnorm_vs_p_with_shrinkage", "symmetric", _log_g,
             "The swap students' G(θ) falls at every step up the p grid, as Figure 1 plots it: "
             "the noise and the shrinkage of its mean target by κ = 1 − pL/(L−1) together.",
             "setting"),
            ("fig1.swap_excess_falls_with_p", "symmetric", lambda c: _excess(res, c),
             "More swap noise lowers G(θ) further beyond its control: log(G_p / G_control(p)) "
             "falls at every step up the p grid (noisy levels only).", "reading")):
        steps = _steps(res, kind, log_g)
        if steps:
            extra = f" {_kappa_text(res)}" if cid.endswith("shrinkage") else ""
            claims.append(_every_case(cid, text, _joint(steps, STEP_BAND, "per-seed change of "
                                     "log G between consecutive noisy levels; paper: < 0"),
                                     scope=scope, note=(note + extra).strip(),
                                     condition="Holds only at the steps whose interval lies "
                                               "below 0 (see the per-step cases)."))
    cases = {f"{s}: {c.name}": _seed_case(
        _excess(res, c, late_log_gradnorm), BELOW_BAND, "mean over the second half of the "
        "epochs of " + _LOG_RATIO.format(a="noisy", b="control") + "; paper: < 0")
        for s in ss for k in KINDS for c in res.noisy(s, k)}
    if cases:
        claims.append(_every_case(
            "fig1.gradnorm_below_control_over_epochs", "Label noise keeps G(θ) below its "
            "control's over the epochs, not only after the last one (the paper measures G after "
            "every epoch): the mean of log(G_noisy / G_control) over the second half of training "
            "is negative for every noisy student.", cases, scope="reading", note=note,
            condition="Needs the regularizer to act before the last epoch."))
    claims.append(_below_teacher_claim(res, note))
    return claims


def _below_teacher_claim(res: DistillResults, note: str) -> Claim:
    cases = {}
    for s in res.settings:
        log_teacher = _log_g(res.teacher(s))
        for c in ([res.noiseless(s), res.hinton(s)]
                  + [c for k in KINDS for c in res.noisy(s, k)]):
            cases[f"{s}: {c.name}"] = _seed_case(_log_g(c) - log_teacher, BELOW_BAND,
                                                 _LOG_RATIO.format(a="student", b="teacher")
                                                 + "; paper: < 0")
    return _every_case("fig1.student_below_teacher", "Students have a lower gradient norm G(θ) "
                      "than their teacher (Figure 1): the noiseless ones (squared error, and "
                      "Hinton's softened cross-entropy) and every noisy one.", cases,
                      scope="setting", note=note,
                      condition="Holds only for the students whose interval lies below 0 (see "
                                "the per-student cases).")


def _rule(text: str) -> str:
    return text + _GAIN_RULE.format(frac=DELTA_FRACTION)


def accuracy_claims(res: DistillResults, note: str = "") -> list[Claim]:
    """Figure 1's accuracy rows: the validation-selected noisy student against the teacher and
    against the noiseless students (the book's squared-error one and Hinton's), "some models
    improved over the teacher", and validation selection against the average noisy student;
    each gain against the setting's smallest useful gain (:func:`smallest_gain`)."""
    claims = []
    sel_note = " Selection within each seed over both noise kinds and every level; seeds are the unit."
    cases, extras = {}, {}
    for s in res.settings:
        cases[s], extras[s] = _gain_case(
            selected_test_acc(res, s) - res.teacher(s).final["test_acc"], smallest_gain(res, s),
            "test accuracy of the validation-selected noisy student − that of the teacher; "
            "paper: > 0")
    claims.append(_every_case(
        "fig1.noisy_beats_teacher", _rule("The noisy student selected by validation accuracy has "
                                          "a higher test accuracy than the teacher (Figure 1)."),
        cases, extras, scope="setting", note=(note + sel_note).strip(),
        condition="Needs a teacher below its accuracy ceiling and a validation set large enough "
                  "to pick the level."))
    cases, extras = {}, {}
    for s in res.settings:
        for base, what in ((res.noiseless(s), "the noiseless student (squared error on the "
                            "logits, the book's)"),
                           (res.hinton(s), "the Hinton student (softened cross-entropy, the "
                            "paper's)")):
            k = f"{s}: vs {base.name}"
            cases[k], extras[k] = _gain_case(
                selected_test_acc(res, s) - base.final["test_acc"], smallest_gain(res, s),
                f"test accuracy of the validation-selected noisy student − that of {what}; "
                "paper: > 0")
    claims.append(_every_case(
        "fig1.noisy_beats_noiseless", _rule("The noisy student selected by validation accuracy "
                                            "has a higher test accuracy than the noiseless "
                                            "student, the book's (squared error on the logits) "
                                            "and the paper's (Hinton et al.) (Figure 1)."),
        cases, extras, scope="setting", note=(note + sel_note).strip(),
        condition="Needs a noise level whose student generalises better than the noiseless "
                  "ones, and the validation set to find it."))
    gains, extras = {}, {}
    for s in res.settings:
        for k in KINDS:
            for c in res.noisy(s, k):
                gains[f"{s}: {c.name}"] = (c.final["test_acc"] - res.teacher(s).final["test_acc"],
                                           smallest_gain(res, s))
    level = joint_level(len(gains))
    cases = {}
    for key, (v, delta) in gains.items():
        cases[key], extras[key] = _gain_case(
            v, delta, f"test accuracy of the student − that of its teacher; paper: > 0 for some "
            f"student (joint {CONFIDENCE:.0%} box over {len(gains)})", level=level)
    claims.append(some_case(
        "fig1.some_student_beats_teacher", _rule("Some noisily self-distilled students improve "
                                                 "on the teacher's test accuracy (Section 5.4, "
                                                 "result (2))."), cases, extras=extras,
        scope="setting",
        note=(note + " Every noisy student (kind, level) is a candidate; their intervals form a "
              "joint box, so one confirmed gain is not luck among many.").strip(),
        condition="Needs a teacher below its accuracy ceiling."))
    cases, extras = {}, {}
    for s in res.settings:
        pool = np.stack([c.final["test_acc"] for k in KINDS for c in res.noisy(s, k)], axis=1)
        cases[s], extras[s] = _gain_case(
            selected_test_acc(res, s) - pool.mean(axis=1), smallest_gain(res, s),
            "test accuracy of the validation-selected noisy student − the mean over all noisy "
            "students of its seed (a choice without validation); paper: > 0")
    claims.append(_every_case(
        "fig1.validation_selection_beats_average", _rule(
            "Validation accuracy selects the better noisy students: the one it picks has a "
            "higher test accuracy than a noisy student picked without it, the average over "
            "kinds and levels (Section 5.4, result (3))."), cases, extras, scope="reading",
        note=(note + " Read as: validation selection beats choosing a kind and level blindly; "
              "beating the teacher is fig1.noisy_beats_teacher.").strip(),
        condition="Needs noise levels whose students differ on the test set, and a validation "
                  "set that sees the difference."))
    return claims


def figure2_claims(res: DistillResults, note: str = "") -> list[Claim]:
    """Figure 2: training losses near zero, and the swap's minima flatter with better
    generalisation (flatness read as a lower G; measurable on CIFAR-100 only if it is run)."""
    claims, cases, flat, extras = [], {}, {}, {}
    for s in res.settings:
        sel = selected_levels(res, s)
        for c in sel.values():
            cases[f"{s}: {c.name}"] = _seed_case(
                c.final["train_loss"] / c.final["loss_scale"], TRAIN_LOSS_BAND,
                "final training loss against E[ỹ] / variance of E[ỹ]; paper: ≈ 0")
        if "symmetric" in sel:
            swap = sel["symmetric"]
            others = [(k, c) for k, c in sel.items() if k != "symmetric"] + [("hinton",
                                                                               res.hinton(s))]
            for _, other in others:
                flat[f"{s}: flatter than {other.name}"] = _seed_case(
                    _log_g(swap) - _log_g(other), BELOW_BAND,
                    _LOG_RATIO.format(a="swap", b="other") + " at the selected levels; paper: < 0")
                k = f"{s}: better than {other.name}"
                flat[k], extras[k] = _gain_case(
                    swap.final["test_acc"] - other.final["test_acc"], smallest_gain(res, s),
                    "test accuracy of the swap student − the other's, at the selected levels; "
                    "paper: > 0")
    claims.append(_every_case(
        "fig2.train_loss_to_zero", "The training loss of the noiseless, symmetric-noise and "
        "Gaussian-noise students (each at its validation-optimal level) goes to nearly zero "
        "(Figure 2).", cases, scope="reading",
        note=(note + " Read as the loss against the noiseless target E[ỹ]: the loss SGD sees, "
              "against the noisy ỹ, cannot fall below the noise's variance per logit.").strip(),
        condition="Needs more epochs at the small learning rates (see the per-kind cases)."))
    if flat:
        claims.append(_every_case(
            "fig2.swap_flatter_and_better", "The minima found with symmetric noise are flatter, "
            "with better generalisation, than those of the noiseless students (the book's and "
            "Hinton's) and the Gaussian-noise students (each at its validation-optimal level; "
            "Figure 2). The accuracy cases are judged against the smallest useful gain δ = "
            f"{DELTA_FRACTION:g} of the teacher's test error: refuted when the interval lies "
            "below δ (no gain of useful size).", flat, extras, scope="reading",
            note=(note + " Read as: a lower G(θ), which is L/2 times the trace of the "
                  "Gauss-Newton part of the per-logit quadratic loss's Hessian (all of it at zero "
                  "residual), and a higher test accuracy. The runs record no other curvature, and "
                  "validation losses are against each kind's own E[ỹ], so not comparable. The "
                  "levels are picked on the mean validation accuracy of these seeds. The swap's "
                  "lower G includes its target's shrinkage (see fig1.noise_lowers_gradnorm_p)."
                  ).strip(),
            condition="Needs the swap's G advantage and accuracy gain both resolved by the seeds."))
    return claims


def not_measured(res: DistillResults) -> list[str]:
    """The claims of Section 5 this grid cannot measure, and why (none is invented)."""
    if "cifar100" in res.grid.datasets and len(res.grid.datasets) > 1:
        return ["The swap's advantage being largest on CIFAR-100 (Section 5.4, beside Figure 2) "
                "is read from the per-data-set cases of fig2.swap_flatter_and_better; with "
                f"{len(res.grid.seeds)} seeds per setting the book does not judge a difference between "
                "data sets."]
    return ["\"Flatter with better generalisation, especially for CIFAR-100\" (Section 5.4, beside "
            "Figure 2): CIFAR-100 is not in this grid (data sets: "
            f"{', '.join(res.grid.datasets)}), so its part is not measured here."]


def departures(res: DistillResults) -> list[str]:
    """Every remaining departure of this grid from the paper's Section 5, each with its
    reason (what the verdicts do not speak for)."""
    g = res.grid
    paper_sets = {"svhn", "cifar10", "cifar100"}
    out = []
    if set(g.datasets) != paper_sets:
        size = f"{g.image_size}×{g.image_size}" if g.image_size else "their native size"
        out.append(f"Data: {', '.join(g.datasets)} at {size}, not SVHN, CIFAR-10 and CIFAR-100: "
                   "the book downloads nothing and runs on a CPU in minutes. Digits has no "
                   "official test set; a fixed 20 % held-out split stands in for it.")
    if g.depth != 56:
        out.append(f"Network: ResNet-{g.depth}, not ResNet-56 (the CPU budget; the gpu and paper "
                   "profiles run ResNet-56).")
    passes = {s.passes for s in g.settings}
    if g.teacher_epochs != 200 or g.epochs_of_students != 200 or passes != {1}:
        each = ("" if passes == {1} else " of " + " and ".join(
            f"{s.passes} passes ({s.name})" for s in g.settings) + " each")
        out.append(f"Length: teachers {g.teacher_epochs} and students {g.epochs_of_students} "
                   f"epochs{each}, not 200 of one pass (the budget), with the paper's "
                   "learning-rate drops at half and three quarters of them. An epoch of several "
                   "passes trains as that many epochs do; it only measures less often.")
    if g.n_train_eval is not None:
        out.append(f"Measurement: after each epoch but the last, the training loss and accuracy "
                   f"are read on {g.n_train_eval} of the training images and the test set not at "
                   "all (the last epoch reads all of them), to save time; nothing is selected on "
                   "the test set.")
    if g.epochs_of_students != g.teacher_epochs:
        out.append("Students train a different number of epochs than their teachers (set by "
                   "hand: student_epochs); the paper trains both the same.")
    if g.headroom_size:
        out.append(f"A headroom setting the paper does not have: teachers and students on "
                   f"{g.headroom_size} training images, because the teachers on all the digits "
                   "sit near 100 % and leave their students nothing to gain. Self-distillation "
                   "acts as a regulariser (Mobahi et al. 2020), which has the most to give where "
                   "data are scarce; Furlanello et al. (2018) report students of their teacher's "
                   "architecture beating it.")
    out += [
        "Loss: the students' quadratic loss is the mean over the L logits, (1/L)‖f − ỹ‖², whose "
        f"gradient is 2/L times that of Eq. 13's ½‖f − ỹ‖²: at learning rate η = {g.lr:g} the "
        "students follow Eq. 13's SGD at η_eff = 2η/L (" + ", ".join(
            f"{2 * g.lr / n:g} for L = {n}" for n in sorted({SPECS[d].num_classes
                                                            for d in g.datasets}))
        + ") with a weight decay L/2 times larger; σ² and p are unchanged. The paper gives no "
        "normalisation, and ½‖·‖² at η = 0.1 undid the teacher in a trial on digits (test "
        "accuracy 99 % → 86 %).",
        f"The paper's noiseless student (Hinton et al.) is run at temperature T = "
        f"{g.temperature:g}, soft targets alone, times T² (the paper gives neither T nor a "
        "hard-label term); the book's own noiseless student, squared error on the logits, is "
        "the exact control of the Gaussian students.",
        "Noise grid: the paper gives no levels; the book's σ² and p are stated beside the "
        "teachers' logit scale (the noise table), and the swap is the copy variant, the one "
        "with the paper's E[ỹ].",
        "Batches: the students of one teacher share one batch stream of their own (not their "
        "teacher's): common random numbers for every paired comparison between students, and "
        "what lets them train in lockstep; an independent reimplementation with a fresh stream "
        "per student agreed within the seeds' spread.",
        f"G(θ) is measured on {g.n_gradnorm} training images with {g.gradnorm_probes} random "
        "probes per image (unbiased; its error is part of the seeds' spread), in evaluation "
        "mode; the paper does not say how it measures G.",
        "Seeds: the paper shows single runs without intervals; the book's unit is a seed ("
        + ", ".join(f"{len(s.seeds)} for {s.name}" for s in g.settings)
        + " here), and every interval is at 99 %.",
        "\"Flatter\" (Figure 2) is read as a lower G(θ), the runs record no other curvature; the "
        "paper's results on the full training set without a validation split are not run.",
    ]
    return out


def verdicts_by_setting(res: DistillResults, claims: list[Claim]) -> list[dict[str, Any]]:
    """Per claim, its verdict restricted to each setting's cases (the claim's own rule: every
    case, or some case for :data:`SOME_IDS`): the full data and the headroom setting read apart."""
    rows = []
    for c in claims:
        by = {s: [] for s in res.settings}
        for d in c.details:
            by[setting_of(d["case"], res.settings)].append(d["verdict"])
        row = {"claim": c.id, "verdict": c.verdict}
        for s, vs in by.items():
            if not vs:
                row[s] = None
            elif c.id in SOME_IDS:
                row[s] = ("confirmed" if "confirmed" in vs else
                          "refuted" if set(vs) == {"refuted"} else "inconclusive")
            else:
                row[s] = combine_all(vs)
        rows.append(row)
    return rows


def delta_rows(claims: list[Claim]) -> list[dict[str, Any]]:
    """Every accuracy case judged against a smallest useful gain: its measured gain and
    interval, ``delta``, and its verdicts at ``delta / 2``, ``delta`` and ``2 delta``."""
    return [dict(claim=c.id, case=d["case"], measured=d["measured"], interval=d["interval"],
                 delta=d["delta"], half=d["verdicts_at"]["δ/2"], at=d["verdict"],
                 double=d["verdicts_at"]["2δ"])
            for c in claims for d in c.details if d.get("delta") is not None]


def distill_claims(res: DistillResults, *, scope_note: str = "") -> list[Claim]:
    """Every claim of Figures 1 and 2, one case per setting (and per student, level or step).
    ``scope_note`` (see :func:`dsmlib.chapters.sec5_distillation.scope_note`) goes into every
    claim's note."""
    claims = (gradnorm_claims(res, scope_note) + accuracy_claims(res, scope_note)
              + figure2_claims(res, scope_note))
    for c in claims:
        if c.verdict != "refuted":
            c.condition = ""
    return claims
