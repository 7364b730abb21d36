"""Section 5's claims, each declared once (chapter ``sec5_distillation``, issue 70): its id, its
few words for the page's summary, its family, the rule that decides it, what it compares with,
and whether it is set side by side across scales. Every other module reads a claim's facts from
here (:data:`CLAIMS`, :data:`BY_ID` and the derived tuples); no other ``dsmlib`` module spells a
Section 5 claim id.

A new claim takes two files: its :class:`ClaimSpec` here, and the function that measures it in
:mod:`.claims`.
"""
from __future__ import annotations

from dataclasses import dataclass

__all__ = ["ClaimSpec", "NOISE_LOWERS_GRADNORM_SIGMA2", "NOISE_LOWERS_GRADNORM_P",
           "GRADNORM_FALLS_WITH_SIGMA2", "GRADNORM_VS_P_WITH_SHRINKAGE",
           "SWAP_EXCESS_FALLS_WITH_P", "GRADNORM_BELOW_CONTROL_OVER_EPOCHS",
           "STUDENT_BELOW_TEACHER", "NOISY_BEATS_TEACHER", "NOISY_BEATS_NOISELESS",
           "SOME_STUDENT_BEATS_TEACHER", "VALIDATION_SELECTION_NEAR_BEST", "TRAIN_LOSS_TO_ZERO",
           "SWAP_FLATTER_AND_BETTER", "FAMILIES", "RULES", "CLAIMS", "BY_ID", "ACCURACY_IDS",
           "SOME_IDS", "CONTRAST_IDS", "SHORT", "ANSWER_IDS", "spec"]

NOISE_LOWERS_GRADNORM_SIGMA2 = "fig1.noise_lowers_gradnorm_sigma2"
NOISE_LOWERS_GRADNORM_P = "fig1.noise_lowers_gradnorm_p"
GRADNORM_FALLS_WITH_SIGMA2 = "fig1.gradnorm_falls_with_sigma2"
GRADNORM_VS_P_WITH_SHRINKAGE = "fig1.gradnorm_vs_p_with_shrinkage"
SWAP_EXCESS_FALLS_WITH_P = "fig1.swap_excess_falls_with_p"
GRADNORM_BELOW_CONTROL_OVER_EPOCHS = "fig1.gradnorm_below_control_over_epochs"
STUDENT_BELOW_TEACHER = "fig1.student_below_teacher"
NOISY_BEATS_TEACHER = "fig1.noisy_beats_teacher"
NOISY_BEATS_NOISELESS = "fig1.noisy_beats_noiseless"
SOME_STUDENT_BEATS_TEACHER = "fig1.some_student_beats_teacher"
VALIDATION_SELECTION_NEAR_BEST = "fig1.validation_selection_near_best"
TRAIN_LOSS_TO_ZERO = "fig2.train_loss_to_zero"
SWAP_FLATTER_AND_BETTER = "fig2.swap_flatter_and_better"

#: What a family of claims measures.
FAMILIES = {"noise against none": "G(θ) of a noisy student against its control's",
            "more noise": "G(θ) between consecutive noisy levels",
            "student against teacher": "G(θ) of a student against its teacher's",
            "accuracy": "test accuracy, judged by its direction with its size against δ",
            "selection": "the validation-selected student against its controls and the best "
                         "choice in hindsight",
            "losses": "training losses"}
#: How a claim over several cases is decided.
RULES = {"every": "every case, under Holm's family-wise rule",
         "some": "some case, in a joint box over the cases",
         "selection": "every case under Holm's rule: two directional controls and one margin"}


@dataclass(frozen=True)
class ClaimSpec:
    """One Section 5 claim's facts: ``id``; ``short``, its few words in the page's summary;
    ``family`` (a key of :data:`FAMILIES`); ``rule`` (a key of :data:`RULES`); ``baseline``,
    what its cases compare with, in words; ``contrast``, whether its cases are set side by side
    across scales; ``accuracy``, whether it is judged on test accuracy (the gate applies)."""
    id: str
    short: str
    family: str
    rule: str
    baseline: str
    contrast: bool = False
    accuracy: bool = False

    def __post_init__(self) -> None:
        if self.family not in FAMILIES or self.rule not in RULES:
            raise ValueError(f"{self.id}: family must be one of {list(FAMILIES)} and rule one "
                             f"of {list(RULES)}")


CLAIMS: tuple[ClaimSpec, ...] = (
    ClaimSpec(NOISE_LOWERS_GRADNORM_SIGMA2, "Gaussian noise lowers G(θ) below the noiseless "
              "student's", "noise against none", "every", "the noiseless student",
              contrast=True),
    ClaimSpec(NOISE_LOWERS_GRADNORM_P, "the swap lowers G(θ) below its control's",
              "noise against none", "every", "the swap's control (no noise, target M_p y)",
              contrast=True),
    ClaimSpec(GRADNORM_FALLS_WITH_SIGMA2, "G(θ) falls at every step up the σ² grid",
              "more noise", "every", "the next lower σ²", contrast=True),
    ClaimSpec(GRADNORM_VS_P_WITH_SHRINKAGE, "G(θ) falls at every step up the p grid (noise and "
              "shrinkage together)", "more noise", "every", "the next lower p"),
    ClaimSpec(SWAP_EXCESS_FALLS_WITH_P, "the swap's G(θ) falls further below its control's at "
              "every step up the p grid", "more noise", "every",
              "the next lower p, each against its control"),
    ClaimSpec(GRADNORM_BELOW_CONTROL_OVER_EPOCHS, "noise keeps G(θ) below its control's over "
              "the epochs", "noise against none", "every", "each noisy student's control",
              contrast=True),
    ClaimSpec(STUDENT_BELOW_TEACHER, "every student's G(θ) lies below its teacher's",
              "student against teacher", "every", "the teacher"),
    ClaimSpec(NOISY_BEATS_TEACHER, "the validation-selected noisy student beats the teacher "
              "(the continued teacher where teachers do not fit)", "accuracy", "every",
              "the teacher where the teachers fit, else the continued teacher",
              contrast=True, accuracy=True),
    ClaimSpec(NOISY_BEATS_NOISELESS, "the selected noisy student beats the noiseless students",
              "accuracy", "every", "the noiseless and Hinton students", contrast=True,
              accuracy=True),
    ClaimSpec(SOME_STUDENT_BEATS_TEACHER, "some noisy student beats the teacher (the continued "
              "teacher where teachers do not fit)", "accuracy", "some",
              "the teacher where the teachers fit, else the continued teacher",
              contrast=True, accuracy=True),
    ClaimSpec(VALIDATION_SELECTION_NEAR_BEST, "validation selection beats a random and the "
              "worst pick and comes near the best noise in hindsight", "selection",
              "selection", "a random pick, the worst pick and the best choice in hindsight",
              contrast=True, accuracy=True),
    ClaimSpec(TRAIN_LOSS_TO_ZERO, "every training loss goes to nearly zero", "losses", "every",
              "zero"),
    ClaimSpec(SWAP_FLATTER_AND_BETTER, "the swap's minima are flatter and generalise better",
              "accuracy", "every", "the noiseless, Hinton and Gaussian students at their "
              "selected levels", contrast=True, accuracy=True),
)
BY_ID = {c.id: c for c in CLAIMS}
#: The claims judged on test accuracy (the gate applies; sizes against δ).
ACCURACY_IDS = tuple(c.id for c in CLAIMS if c.accuracy)
#: The claims decided by the "some case" rule.
SOME_IDS = tuple(c.id for c in CLAIMS if c.rule == "some")
#: The claims whose cases are set side by side across scales (the ledger's and the page's
#: contrast).
CONTRAST_IDS = tuple(c.id for c in CLAIMS if c.contrast)
#: A few words per claim for the page's summary (the ledger keeps each claim's statement).
SHORT = {c.id: c.short for c in CLAIMS}
#: The claims the page's answer in words reads, by role: the selected noisy student against its
#: baseline (the teacher, or the continued teacher where teachers do not fit) and against the
#: noiseless students; and G(θ) under Gaussian noise against the noiseless student. Passed to
#: the book in the results' ``extra``, so that the book layer names no chapter's claims.
ANSWER_IDS = {"baseline": NOISY_BEATS_TEACHER, "noiseless": NOISY_BEATS_NOISELESS,
              "gradnorm": NOISE_LOWERS_GRADNORM_SIGMA2}


def spec(claim_id: str) -> ClaimSpec:
    """The declaration of ``claim_id``; a one-line error naming the known ids otherwise."""
    try:
        return BY_ID[claim_id]
    except KeyError:
        raise ValueError(f"no Section 5 claim {claim_id!r}; known: {', '.join(BY_ID)}") from None
