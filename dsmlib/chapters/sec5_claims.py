"""Claims of the ``sec5_distillation`` chapter (Section 5, Figures 1 and 2), judged on the cells
of :mod:`dsmlib.chapters.sec5_distillation` with **seeds as the unit**: every statistic is
computed within a seed, and its interval is a Student-t interval over seeds (``S - 1`` degrees
of freedom).

What each family of claims compares:

- **noise against none**: each noisy student's ``log G`` against its *control*, the student
  trained without noise on the noise's mean target (:meth:`DistillResults.control`). For the
  swap this removes the target's shrinkage by ``kappa`` (Eq. 24), which lowers ``G`` with no
  implicit regulariser at all; the raw trend along ``p`` is kept under a name that says so.
  These must hold at every level (an intersection-union test: each case at the ledger's level).
- **more noise**: every step between consecutive *noisy* levels (the noiseless point is not part
  of it), with a joint (Bonferroni) box over all steps, so the claim's level is the ledger's.
- **some student**: "some models improved" holds if one noisy student's gain is confirmed with a
  joint box over all students (:func:`some_case`); refuted only if every one is refuted.

Bands are fixed here before measuring. Sign claims (the paper states directions, not sizes) are
strict: accuracies are discrete, and seeds that all tie at a difference of exactly 0 confirm
nothing.
"""
from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..foundation.claims import (CONFIDENCE, Case, Claim, band_gap, case, every_case, from_case,
                                 joint_level, parse_band)
from .sec5_distillation import (KINDS, Cell, DistillResults, selected_levels, selected_test_acc,
                                shrinkage_rows)

__all__ = ["STRICT", "BELOW_BAND", "STEP_BAND", "ACCURACY_GAIN_BAND", "TRAIN_LOSS_BAND",
           "late_log_gradnorm", "some_case", "gradnorm_claims", "accuracy_claims",
           "figure2_claims", "not_measured", "distill_claims"]

STRICT = 1e-12
BELOW_BAND = (None, -STRICT)          # log(G_a / G_b): a below b
STEP_BAND = (None, -STRICT)           # log(G_{k+1} / G_k) between consecutive noisy levels
ACCURACY_GAIN_BAND = (STRICT, None)   # test-accuracy gain
TRAIN_LOSS_BAND = (None, 0.05)        # final train loss / variance of the targets: "near zero"

_LOG_RATIO = "$\\log(G_{{\\mathrm{{{a}}}}} / G_{{\\mathrm{{{b}}}}})$"
_CONTROL_TEXT = {"gaussian": "the noiseless student (E[ỹ] = y)",
                 "symmetric": "its control, trained without noise on E[ỹ] = M_p y"}
_SWAP_NOTE = (" Prop. 3's strength ησ²/b·G(θ) assumes noise whose covariance does not depend on "
              "the logits; the swap's does (it mixes the entries of y), so its regulariser is a "
              "y-weighted G, and only the sign is tested.")


def _seed_case(values: np.ndarray, band, quantity: str, *, level: float = CONFIDENCE) -> Case:
    """Mean over seeds with its Student-t interval (seeds are independent replicates)."""
    v = np.asarray(values, dtype=float)
    return case(paper=0.0, measured=float(v.mean()), se=float(v.std(ddof=1) / math.sqrt(v.size)),
                band=band, quantity=quantity, dof=v.size - 1, level=level)


def _every_case(id: str, statement: str, cases: dict[str, Case], **kw: Any) -> Claim:
    """:func:`every_case`, each case's standard error kept in its row of ``details`` (what
    :func:`dsmlib.chapters.sec5_distillation.seeds_to_decide` plans with)."""
    claim = every_case(id, statement, cases, **kw)
    for row, c in zip(claim.details, cases.values()):
        row["se"] = c.se
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
              scope: str | None = None, condition: str = "") -> Claim:
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
                "band": c.band, "verdict": c.verdict, "se": c.se} for k, c in cases.items()]
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
    """Per data set, each step between consecutive noisy levels of ``kind``: the per-seed change
    of ``log_g(cell)``."""
    out = {}
    for d in res.grid.datasets:
        cells = res.noisy(d, kind)
        for a, b in zip(cells, cells[1:]):
            out[f"{d}: {a.name} → {b.level:g}"] = log_g(b) - log_g(a)
    return out


def _excess(res: DistillResults, cell: Cell, log_g=_log_g) -> np.ndarray:
    return log_g(cell) - log_g(res.control(cell))


def _kappa_text(res: DistillResults) -> str:
    rows = shrinkage_rows(res)
    return ("κ² against the measured G / G(noiseless) of the swap student and of its control "
            "(geometric means over seeds): " + "; ".join(
                f"{r['dataset']}, p = {r['p']:g}: κ² = {r['kappa2']:.2f}, swap {r['swap']:.2f}, "
                f"control {r['control']:.2f}" for r in rows) + ".")


def gradnorm_claims(res: DistillResults, note: str = "") -> list[Claim]:
    """Figure 1's top row: noise against none (each kind against its control), more noise (steps
    between noisy levels), the swap's raw trend (shrinkage included), the trend beyond the control,
    the same comparison over the epochs, and every student against its teacher."""
    ds, claims = res.grid.datasets, []
    for kind, sym in KINDS.items():
        cases = {f"{d}: {c.name}": _seed_case(
            _excess(res, c), BELOW_BAND, _LOG_RATIO.format(a="noisy", b="control")
            + f"; control: {_CONTROL_TEXT[kind]}; paper: < 0") for d in ds for c in res.noisy(d, kind)}
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
    cases = {f"{d}: {c.name}": _seed_case(
        _excess(res, c, late_log_gradnorm), BELOW_BAND, "mean over the second half of the "
        "epochs of " + _LOG_RATIO.format(a="noisy", b="control") + "; paper: < 0")
        for d in ds for k in KINDS for c in res.noisy(d, k)}
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
    for d in res.grid.datasets:
        log_teacher = _log_g(res.teacher(d))
        for c in [res.noiseless(d)] + [c for k in KINDS for c in res.noisy(d, k)]:
            cases[f"{d}: {c.name}"] = _seed_case(_log_g(c) - log_teacher, BELOW_BAND,
                                                 _LOG_RATIO.format(a="student", b="teacher")
                                                 + "; paper: < 0")
    return _every_case("fig1.student_below_teacher", "Students have a lower gradient norm G(θ) "
                      "than their teacher (Figure 1).", cases, scope="setting", note=note,
                      condition="Holds only for the students whose interval lies below 0 (see "
                                "the per-student cases).")


def accuracy_claims(res: DistillResults, note: str = "") -> list[Claim]:
    """Figure 1's accuracy rows: the validation-selected noisy student against the teacher and
    the noiseless student, and "some models improved over the teacher"."""
    claims = []
    for cid, ref, what in (("fig1.noisy_beats_teacher", "teacher", "the teacher"),
                           ("fig1.noisy_beats_noiseless", "noiseless", "the noiseless student")):
        cases = {}
        for d in res.grid.datasets:
            base = res.teacher(d) if ref == "teacher" else res.noiseless(d)
            cases[d] = _seed_case(selected_test_acc(res, d) - base.final["test_acc"],
                                  ACCURACY_GAIN_BAND, "test accuracy of the validation-selected "
                                  f"noisy student − that of {what}; paper: > 0")
        claims.append(_every_case(
            cid, f"The noisy student selected by validation accuracy has a higher test accuracy "
            f"than {what} (Figure 1).", cases, scope="setting",
            note=(note + " Selection within each seed over both noise kinds and every level; "
                  "seeds are the unit.").strip(),
            condition="Needs a teacher below its accuracy ceiling and a validation set large "
                      "enough to pick the level."))
    gains = {f"{d}: {c.name}": c.final["test_acc"] - res.teacher(d).final["test_acc"]
             for d in res.grid.datasets for k in KINDS for c in res.noisy(d, k)}
    claims.append(some_case(
        "fig1.some_student_beats_teacher", "Some noisily self-distilled students improve on the "
        "teacher's test accuracy (Section 5.4, result (2)).",
        _joint(gains, ACCURACY_GAIN_BAND, "test accuracy of the student − that of its teacher; "
               "paper: > 0 for some student"), scope="setting",
        note=(note + " Every noisy student (kind, level) is a candidate; their intervals form a "
              "joint box, so one confirmed gain is not luck among many.").strip(),
        condition="Needs a teacher below its accuracy ceiling."))
    return claims


def figure2_claims(res: DistillResults, note: str = "") -> list[Claim]:
    """Figure 2: training losses near zero, and the swap's minima flatter with better
    generalisation (flatness read as a lower G; measurable on CIFAR-100 only if it is run)."""
    claims, cases, flat = [], {}, {}
    for d in res.grid.datasets:
        sel = selected_levels(res, d)
        for c in sel.values():
            cases[f"{d}: {c.name}"] = _seed_case(
                c.final["train_loss"] / c.final["loss_scale"], TRAIN_LOSS_BAND,
                "final training loss against E[ỹ] / variance of E[ỹ]; paper: ≈ 0")
        if "symmetric" in sel:
            swap = sel["symmetric"]
            for k, other in ((k, c) for k, c in sel.items() if k != "symmetric"):
                flat[f"{d}: flatter than {other.name}"] = _seed_case(
                    _log_g(swap) - _log_g(other), BELOW_BAND,
                    _LOG_RATIO.format(a="swap", b="other") + " at the selected levels; paper: < 0")
                flat[f"{d}: better than {other.name}"] = _seed_case(
                    swap.final["test_acc"] - other.final["test_acc"], ACCURACY_GAIN_BAND,
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
            "with better generalisation, than those of the noiseless and the Gaussian-noise "
            "students (each at its validation-optimal level; Figure 2).", flat, scope="reading",
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
                f"{len(res.grid.seeds)} seeds the book does not judge a difference between "
                "data sets."]
    return ["\"Flatter with better generalisation, especially for CIFAR-100\" (Section 5.4, beside "
            "Figure 2): CIFAR-100 is not in this grid (data sets: "
            f"{', '.join(res.grid.datasets)}), so its part is not measured here."]


def distill_claims(res: DistillResults, *, scope_note: str = "") -> list[Claim]:
    """Every claim of Figures 1 and 2, one case per data set (and per student, level or step).
    ``scope_note`` (see :func:`dsmlib.chapters.sec5_distillation.scope_note`) goes into every
    claim's note."""
    claims = (gradnorm_claims(res, scope_note) + accuracy_claims(res, scope_note)
              + figure2_claims(res, scope_note))
    for c in claims:
        if c.verdict != "refuted":
            c.condition = ""
    return claims
