"""Each reference a chapter shows on a page of its own (issue 71, item 9;
:mod:`dsmlib.book.site.subpages`): ``_toc.yml`` lists the pages, the build writes every one, and
the page of a reference still training says so, with how far it has got, from its run records.
The built pages are tested in the browser (test_browser_sec5.py) and for their weight
(test_browser.py)."""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from dsmlib.book.execute.store import executed_path
from dsmlib.book.profiles import load_specs
from dsmlib.book.references.freshness import current_references
from dsmlib.book.references.records import profile_runs, records_dir
from dsmlib.book.site.build import SHOWN_PROFILES, shown_references, site_chapter, site_subpages
from dsmlib.book.site.subpages import (check_pages, progress_markdown, toc_subpages,
                                       training_progress)
from helpers import ROOT

NAME, FIT = "sec5_distillation", "cpu-cifar10-fit"
SPECS = load_specs(ROOT / "notebooks")


def test_the_toc_lists_a_page_for_every_reference_the_chapters_show():
    """Section 5's pages are the two committed references' and the coming one's, each a
    shown profile; every committed reference a chapter shows has its page (else the build
    fails, naming the line to add)."""
    toc = toc_subpages(ROOT)
    assert toc == {NAME: ["cpu-cifar10", FIT, "gpu"]}
    refs = current_references(ROOT, "quick", SPECS)
    for name, spec in SPECS.items():
        shown = [r.profile for r in shown_references(spec, refs)]
        check_pages(name, shown, toc.get(name, []), SHOWN_PROFILES)
    assert {"cpu-cifar10", "gpu"} <= {r.profile for r in shown_references(SPECS[NAME], refs)}
    with pytest.raises(ValueError, match=f"- file: book/chapters/{NAME}/gpu"):
        check_pages(NAME, ["gpu"], ["cpu-cifar10"], SHOWN_PROFILES)
    with pytest.raises(ValueError, match="smoke"):
        check_pages(NAME, [], ["smoke"], SHOWN_PROFILES)


def test_a_section_of_a_chapter_other_than_a_reference_page_is_refused(tmp_path):
    (tmp_path / "_toc.yml").write_text(
        "format: jb-book\nroot: book/intro\nparts:\n  - caption: C\n    chapters:\n"
        "      - file: book/chapters/ols\n        sections:\n          - file: book/notes\n")
    with pytest.raises(ValueError, match="book/notes under book/chapters/ols is not a reference"):
        toc_subpages(tmp_path)


def _record(root: Path, key: str, seconds: list[float], lockstep: int = 1) -> None:
    """A finished run's record: its ``done.json`` with one history row per epoch, each with
    ``seconds`` split between steps, measurements and G."""
    d = records_dir(root, FIT) / key
    d.mkdir(parents=True, exist_ok=True)
    history = [{"epoch": i, "train_s": s * 0.7, "eval_s": s * 0.2, "gradnorm_s": s * 0.1,
                "lockstep": lockstep} for i, s in enumerate(seconds)]
    (d / "done.json").write_text(json.dumps({"history": history}))


def _chapter(root: Path) -> None:
    """A minimal executed Section 5 under ``quick``: a title and the reader guide."""
    nb = {"cells": [{"cell_type": "markdown", "id": "t", "metadata": {}, "source": "# Sec 5\n"},
                    {"cell_type": "markdown", "id": "g", "metadata": {},
                     "source": "## Reader guide\n"}],
          "metadata": {"kernelspec": {"name": "python3", "display_name": "Python 3",
                                      "language": "python"}},
          "nbformat": 4, "nbformat_minor": 5}
    path = executed_path(root, "quick", NAME)
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps(nb))


def test_the_page_of_a_reference_still_training_says_how_far_it_has_got(tmp_path):
    """On a book whose ``cpu-cifar10-fit`` reference is not committed but two seeds' teachers
    and one student have finished (records in ``reference/cpu-cifar10-fit/runs/``), and one
    run has only begun (a configuration, no ``done.json``): its page and its block on the
    chapter's page say that it is training and not committed, how many of its grid's seeds
    have finished (the teachers' records), and the training time summed from the records."""
    spec = SPECS[NAME]
    configs = profile_runs(spec, FIT)
    seeds = sorted({c.seed for c in configs if c.role == "teacher"})
    runs = len({c.key() for c in configs})
    assert progress_markdown(FIT, training_progress(tmp_path, spec, FIT)).endswith(
        f"None of the {runs:,} runs of its grid ({len(seeds)} seeds) has finished yet.")
    teachers = {c.seed: c for c in configs if c.role == "teacher"}
    student = next(c for c in configs if c.role == "student" and c.seed == 0)
    _record(tmp_path, teachers[0].key(), [100.0, 50.0])            # 150 s
    _record(tmp_path, teachers[3].key(), [60.0, 60.0])             # 120 s
    _record(tmp_path, student.key(), [40.0, 20.0], lockstep=2)     # 60 s shared by two: 30 s
    begun = records_dir(tmp_path, FIT) / teachers[5].key()
    begun.mkdir()
    (begun / "config.json").write_text("{}")
    progress = training_progress(tmp_path, spec, FIT)
    assert (progress.finished, progress.done, progress.runs) == ((0, 3), 3, runs)
    assert progress.seconds == pytest.approx(300.0)
    text = progress_markdown(FIT, progress).replace("’", "'")
    assert text.startswith(f"The `{FIT}` reference of this chapter is still training and is "
                           "not committed yet, so there are no figures or verdicts of it to show.")
    assert (f"So far 2 of its {len(seeds)} seeds' teachers have finished training (seeds 0, 3), "
            f"and 3 of the {runs:,} runs of its grid have their records in "
            f"`reference/{FIT}/runs/`: 5.0 min of training (300 s, summed from those records)."
            ) in text

    _chapter(tmp_path)
    chapter = site_chapter(tmp_path, spec, "quick", [], [FIT])
    block = next(c["source"] for c in json.loads(chapter)["cells"]
                 if c["source"].startswith(f"## The `{FIT}` reference execution"))
    assert block.startswith(f"## The `{FIT}` reference execution (not committed)")
    assert "2 of its 10 seeds" in block and "5.0 min of training" in block
    assert f"{{doc}}`its own page <{NAME}/{FIT}>`" in block
    (page,) = site_subpages(tmp_path, spec, "quick", [], [FIT]).values()
    nb = json.loads(page)
    source = "".join(c["source"] for c in nb["cells"])
    assert source.startswith(f"# The `{FIT}` reference execution (not committed)")
    assert f"{{doc}}`{spec.title} <../{NAME}>`" in source and text in source.replace("’", "'")
    assert f"python -m dsmlib reference {NAME} --profile {FIT}" in source
    assert nb["metadata"]["kernelspec"]["name"] == "python3"
    assert not re.search(r"\bconfirmed|refuted|inconclusive\b", source)


def test_a_committed_reference_has_its_outputs_on_its_page_and_a_short_block_on_the_chapter():
    """The ``cpu-cifar10`` reference: its page holds its provenance line, execution line,
    finding and every output part under a heading of its own; the chapter's block holds its
    heading, execution line, its finding folded and a link to the page, and no output."""
    ref = next(r for r in current_references(ROOT, "quick", SPECS)
               if r.name == NAME and r.profile == "cpu-cifar10")
    from dsmlib.book.references.section import reference_page_cells, reference_summary
    nb = json.loads(ref.notebook.read_text())
    block = reference_summary(nb, ref, f"{NAME}/cpu-cifar10")
    # the chapter's block folds the finding (its page shows it open)
    assert len(block) == 1 and ":::{dropdown} Its finding\nMeasured with ResNet-8" in block[0][
        "source"] and "**Its finding.**" not in block[0]["source"]
    assert "class='provenance'" not in block[0]["source"]
    cells = reference_page_cells(nb, ref, "Sec 5 <../sec5_distillation>")
    assert cells[0]["source"].startswith("# The `cpu-cifar10` reference execution")
    assert "class='provenance'" in cells[0]["source"] and "**Its finding.**" in cells[0]["source"]
    heads = [c["source"] for c in cells if c["cell_type"] == "markdown"][1:]
    outs = [c for c in cells if c["cell_type"] == "code"]
    assert len(heads) >= 3 and all(h.startswith("## ") for h in heads)
    assert outs and all("hide-output" not in c["metadata"]["tags"] for c in outs)
    assert sum(len(c["outputs"]) for c in outs) >= 10
