"""A chapter's parameters under a profile (book layer): the one road every command takes.

Each chapter declares its parameters once, in the ``Parameters`` dataclass of
``dsmlib.chapters.parameters.<name>`` (:class:`dsmlib.foundation.parameters.ChapterParameters`;
its chapter module ``dsmlib.chapters.<name>`` re-exports it), whose defaults are the ``quick``
profile. ``notebooks/profiles.yml`` names the chapters, in book order, and gives each profile's
overrides. :func:`resolve` is the one function that turns a chapter, a profile and the command
line's ``-p`` overrides into the chapter's ``Parameters``: the declaration's defaults, then the
profile's overrides, then ``-p``, checked once by the ``Parameters`` themselves (each value
against its annotation, then the chapter's ranges), so that a typo or ``-p depth 7.5`` is a
one-line error before any kernel starts. The runner, the reference executions, the site,
``grid`` and ``lab`` all call it; nothing reads values back from a notebook.
"""
from __future__ import annotations

import dataclasses
import importlib
import importlib.util
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from ..foundation.parameters import ChapterParameters

__all__ = ["PROFILES", "ON_REQUEST", "GPU_CIFAR10", "CPU_CIFAR10", "CPU_CIFAR10_FIT", "DEFAULT_PROFILE",
           "PROFILE_USES", "QUICK_GOAL_S", "GOAL_MACHINE", "RUNNER_PARAMETERS", "CHAPTERS", "NotebookSpec",
           "load_specs", "check_profile", "select", "parse_value",
           "parameters_class", "resolve", "chapters_with_runs"]

# gpu: minutes on one GPU without downloads (chapters without a GPU setting run as quick);
# gpu-cifar10: Section 5 at ResNet-56 on a data-limited CIFAR-10, minutes on one GPU (`make data`
# first, or the subset that travels to a GPU machine).
GPU_CIFAR10 = "gpu-cifar10"
# cpu-cifar10: Section 5 at ResNet-8 on a data-limited CIFAR-10 with the paper's crops and flips,
# hours of one 2-core CPU in the background (`make data` first); its reference is committed.
CPU_CIFAR10 = "cpu-cifar10"
# cpu-cifar10-fit: cpu-cifar10 with one change, no crops or flips, so that its teachers fit their
# training images as the paper's well-trained teacher does (issue 67); its reference is committed.
CPU_CIFAR10_FIT = "cpu-cifar10-fit"
PROFILES = ("smoke", "quick", "paper", "gpu", GPU_CIFAR10, CPU_CIFAR10, CPU_CIFAR10_FIT)
#: Profiles a chapter has only where it sets them (elsewhere they run as quick, and the tables
#: leave them out).
ON_REQUEST = ("gpu", GPU_CIFAR10, CPU_CIFAR10, CPU_CIFAR10_FIT)
DEFAULT_PROFILE = "quick"
#: What each profile is for, as the README and the reproducibility page list them.
PROFILE_USES = {
    "smoke": "seconds per notebook, used by the tests; no evidence about the paper",
    "quick": "the default: every chapter on a CPU, the whole book in at most "
             "{goal} on a 2-core Intel Xeon",
    "paper": "the paper's settings where it gives them (Figures 1–3), elsewhere a larger run "
             "of the same experiments; Section 5 needs GPUs and its data sets",
    "gpu": "Section 5 on one GPU: ResNet-56 on digits at 32×32, no download (other chapters "
           "run as quick)",
    GPU_CIFAR10: "Section 5 on one GPU: ResNet-56 on 2,100 CIFAR-10 images without crops or "
                 "flips (`make data` first)",
    CPU_CIFAR10: "Section 5 on two CPU cores in the background: ResNet-8 on 1,200 CIFAR-10 "
                 "images with the paper's crops and flips, 10 seeds (`make data` first)",
    CPU_CIFAR10_FIT: "Section 5 on two CPU cores in the background with teachers that fit: "
                     "`cpu-cifar10` without crops or flips, for as many epochs as the fit rule "
                     "allows, 10 seeds (`make data` first)",
}
#: The ``quick`` profile's time goal for the whole book, on the machine the goals are set for.
QUICK_GOAL_S = 600
GOAL_MACHINE = "a 2-core Intel Xeon"
#: Names every notebook's parameters cell declares beside its chapter's, set by the book
#: (``--profile``; the live widgets are on in ``lab`` only), never by ``-p`` or a profile.
RUNNER_PARAMETERS = ("profile", "live_widgets")
#: The package of the chapters' modules (one per notebook, same name) unless
#: ``profiles.yml`` names another under ``chapters:``.
CHAPTERS = "dsmlib.chapters"


@dataclass(frozen=True)
class NotebookSpec:
    """One chapter: its source, title, per-profile overrides, the module that declares its
    ``Parameters``, and whether it needs a GPU (``gpu: true``: never executed two at once;
    ``gpu_notice`` opens its page)."""
    name: str
    title: str
    source: Path
    profiles: dict[str, dict[str, Any]]
    module: str = ""
    gpu: bool = False
    gpu_notice: str = ""
    answer: dict[str, Any] = dataclasses.field(default_factory=dict, compare=False, hash=False)
    """The intro's sentence on the chapter's part of the paper (``answer:`` in profiles.yml):
    the part's name and rank, what the paper claims, and the claims (or the roles the
    chapter's results name) that speak for it, each with its words
    (:mod:`dsmlib.book.site.answer`)."""

    @property
    def parameters_module(self) -> str:
        """Where the chapter declares its ``Parameters``: ``<package>.parameters.<name>``, a
        module that imports none of what the chapter computes with (torch alone is 1.5-2 s of
        a command's start), re-exported by the chapter module."""
        package, _, name = self.module.rpartition(".")
        return f"{package}.parameters.{name}"


def load_specs(notebooks_dir: str | Path) -> dict[str, NotebookSpec]:
    """Read ``profiles.yml``; the order of the file is the order of the book."""
    notebooks_dir = Path(notebooks_dir)
    path = notebooks_dir / "profiles.yml"
    doc = yaml.safe_load(path.read_text())
    package = str(doc.get("chapters") or CHAPTERS)
    specs: dict[str, NotebookSpec] = {}
    for name, entry in (doc.get("notebooks") or {}).items():
        source = notebooks_dir / f"{name}.md"
        if not source.exists():
            raise ValueError(f"{path}: notebook {name!r} has no source file {source}")
        profiles = entry.get("profiles") or {}
        unknown = set(profiles) - set(PROFILES)
        if unknown:
            raise ValueError(f"{path}: notebook {name!r} has unknown profiles {sorted(unknown)}; "
                             f"allowed: {list(PROFILES)}")
        specs[name] = NotebookSpec(name=name, title=entry.get("title", name), source=source,
                                   profiles={p: dict(profiles.get(p) or {}) for p in PROFILES},
                                   module=f"{package}.{name}",
                                   gpu=bool(entry.get("gpu", False)),
                                   gpu_notice=str(entry.get("gpu_notice", "")),
                                   answer=dict(entry.get("answer") or {}))
    return specs


def check_profile(profile: str) -> str:
    if profile not in PROFILES:
        raise ValueError(f"unknown profile {profile!r}; valid profiles: {', '.join(PROFILES)}")
    return profile


def select(specs: dict[str, NotebookSpec], names: list[str] | None) -> list[NotebookSpec]:
    """The notebooks to run: all of them in book order, or the named ones."""
    if not names or names == ["all"]:
        return list(specs.values())
    bad = [n for n in names if n not in specs]
    if bad:
        raise ValueError(f"unknown notebook(s) {bad}; valid notebooks: {', '.join(specs)} (or 'all')")
    return [specs[n] for n in names]


_EXPONENT = re.compile(r"[-+]?(\d+\.?\d*|\.\d+)[eE][-+]?\d+")


def _numbers(v: Any) -> Any:
    """YAML 1.1 reads ``1e-3`` (no dot) as a string: such strings become floats."""
    if isinstance(v, list):
        return [_numbers(x) for x in v]
    return float(v) if isinstance(v, str) and _EXPONENT.fullmatch(v) else v


def parse_value(text: str, name: str = "") -> Any:
    """Parse a command-line parameter value as YAML (numbers, booleans, lists; ``1e-3``
    is a number)."""
    try:
        return _numbers(yaml.safe_load(text))
    except yaml.YAMLError as err:
        first = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        what = f"parameter {name!r}: " if name else ""
        raise ValueError(f"{what}cannot parse the value {text!r} as YAML ({first}); write "
                         "numbers as 0.1, lists as [1, 2], strings as they are") from None


def parameters_class(spec: NotebookSpec) -> type[ChapterParameters]:
    """The ``Parameters`` its chapter declares (in ``spec.parameters_module``); a notebook with
    no chapter module (the tests' one-cell books) has none of its own: an empty class. A
    chapter module without that declaration is an error: every chapter declares its parameters
    there, once. The chapter module itself is not imported."""
    package = spec.module.rpartition(".")[0]
    try:
        found = importlib.util.find_spec(spec.module) is not None
    except ModuleNotFoundError:
        raise ValueError(f"the package of the chapters' modules, {package}, cannot be "
                         "imported (profiles.yml's `chapters:`)") from None
    if not found:
        return dataclasses.make_dataclass("Parameters", [], bases=(ChapterParameters,),
                                          frozen=True, namespace={"notebook": spec.name})
    try:
        declared = importlib.util.find_spec(spec.parameters_module) is not None
    except ModuleNotFoundError:   # no parameters package beside the chapters
        declared = False
    cls = (getattr(importlib.import_module(spec.parameters_module), "Parameters", None)
           if declared else None)
    if cls is None:
        raise ValueError(f"chapter {spec.name} declares no Parameters in "
                         f"{spec.parameters_module}: every chapter declares its parameters "
                         "there, once")
    return cls


def resolve(spec: NotebookSpec, profile: str,
            overrides: dict[str, Any] | None = None) -> ChapterParameters:
    """Chapter ``spec``'s parameters under ``profile``: its declaration's defaults, then the
    profile's overrides (``profiles.yml``), then ``overrides`` (``-p``), checked once by its
    ``Parameters`` (a name it does not declare, a value its annotation does not admit, one out
    of its range: a one-line error naming the parameter and what is allowed)."""
    check_profile(profile)
    values = {**spec.profiles[profile], **(overrides or {})}
    owned = [k for k in values if k in RUNNER_PARAMETERS]
    if owned:
        raise ValueError(f"parameter(s) {owned} are set by the runner and cannot be overridden: "
                         "the profile comes from --profile, and live widgets are on in `lab` "
                         "only")
    return parameters_class(spec).from_dict(values)


def chapters_with_runs(specs: dict[str, NotebookSpec]) -> list[str]:
    """The chapters whose parameters have training runs to launch (``Parameters.runs()``):
    the ones ``python -m dsmlib grid`` builds."""
    return [n for n, spec in specs.items()
            if callable(getattr(parameters_class(spec), "runs", None))]
