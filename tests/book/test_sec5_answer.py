"""Section 5's answer in words before the first screen's table (issue 70, item 6) and each
scale's column heading (issue 71, item 5): at most four sentences, the paper's claim then one per
regime (CIFAR-10 whose teachers do not fit, CIFAR-10 whose teachers fit, digits), each number
one of the claims the sentence names, each baseline the one its row (or the gate) says; tested
on the committed references and on a fixture of the coming ``cpu-cifar10-fit`` reference."""
from __future__ import annotations

import copy
import html
import json
import re

from dsmlib.book.references.contrast import Scale
from dsmlib.book.references.lead import (PAPER_CLAIM, answer_html, answer_sentences,
                                         first_screen_html, regimes, scale_words)
from dsmlib.book.references.section import first_screen_cell
from dsmlib.chapters.sec5_distillation import registry
from helpers import ROOT
from sec5_fixtures import fit_fixture as _fit_fixture
from sec5_fixtures import reference_doc as _doc

NUMBER = re.compile(r"[+−-]?\d+\.\d+")


def _scales(fit: bool = True) -> list[Scale]:
    quick = copy.deepcopy(_doc("gpu"))           # digits, two settings, a judged one
    out = [Scale("quick (this build)", quick), Scale("cpu-cifar10 reference", _doc("cpu-cifar10"))]
    return out + ([Scale("cpu-cifar10-fit reference", _fit_fixture())] if fit else [])


def _check_sentence(text: str, ids: tuple[str, ...], sc: Scale) -> None:
    """Every number of the sentence is the value or an interval end of a claim it names (or of
    a row shown beside one), in the claims' order; the setting's words are the results'."""
    quoted = []
    for cid in ids:
        c = sc.claim(cid)
        quoted += [c["measured"], *c["interval"]]
        quoted += [v for d in c["details"] if d.get("beside")
                   for v in (d["measured"], *d["interval"])]
        assert c["verdict"] in text, (cid, text)
    numbers = [float(n.replace("−", "-")) for n in NUMBER.findall(text)]
    assert numbers == [round(v, 2) for v in quoted][:len(numbers)], (numbers, quoted, text)
    assert len(numbers) == len(quoted), text


def test_the_answer_comes_first_with_one_sentence_per_regime():
    sentences = answer_sentences(_scales())
    assert 2 <= len(sentences) <= 4 and sentences[0][0] == PAPER_CLAIM
    by_label = {label: (text, ids) for text, ids, label in sentences[1:]}
    # the paper's data first, teachers that do not fit before those that do, digits last
    assert [label for _, _, label in sentences[1:]] == [
        "cpu-cifar10 reference", "cpu-cifar10-fit reference", "quick (this build)"]
    for sc in _scales():
        text, ids = by_label[sc.label]
        assert ids == (registry.NOISY_BEATS_TEACHER, registry.NOISY_BEATS_NOISELESS)
        _check_sentence(text, ids, sc)
    under, _ = by_label["cpu-cifar10 reference"]
    assert under.startswith("On CIFAR-10 (cpu-cifar10 reference: 1,200 training images, "
                            "ResNet-8, teachers that do not fit their training images)")
    assert "fell below the continued teacher (−7.02 points [−8.16, −5.88], refuted)" in under
    assert "its teacher" not in under and "digits" not in under
    fit, _ = by_label["cpu-cifar10-fit reference"]
    assert "teachers that fit their training images" in fit and "beat its teacher (+1.25" in fit
    assert "could not be told apart from the noiseless students (+0.30" in fit
    digits, _ = by_label["quick (this build)"]
    assert digits.startswith("On digits (quick (this build): 100 training images, ResNet-56, "
                             "teachers that fit")


def test_the_fit_regime_appears_only_once_its_reference_exists():
    labels = [sc.label for _, sc in regimes(_scales(fit=False))]
    assert labels == ["cpu-cifar10 reference", "quick (this build)"]
    assert len(answer_sentences(_scales(fit=False))) == 3


def test_a_row_beside_the_claim_is_quoted_and_a_baseline_is_read_from_its_row():
    """Where the headline is against the continued teacher, the lead's row beside it (the
    teacher itself, ``beside``) is quoted too; a row's ``baseline`` names what it compares
    with."""
    doc = _doc("cpu-cifar10")
    c = next(c for c in doc["claims"] if c["id"] == registry.NOISY_BEATS_TEACHER)
    (main,) = [d for d in c["details"] if not d.get("beside")]
    (beside,) = [d for d in c["details"] if d.get("beside")]
    assert (main["baseline"], beside["baseline"]) == ("continued teacher", "teacher")
    sc = Scale("cpu-cifar10 reference", doc)
    (_, (text, ids, _)) = answer_sentences([sc, Scale("x", _doc("gpu"))])[:2]
    assert "fell below the continued teacher (−7.02" in text
    pts = lambda x: f"{x:+.2f}".replace("-", "−")    # noqa: E731
    ends = ", ".join(f"{v:.2f}".replace("-", "−") for v in beside["interval"])
    assert (f"fell below the teacher itself ({pts(beside['measured'])} [{ends}], shown beside, "
            "refuted)") in text
    _check_sentence(text, ids, sc)


def test_the_answer_stands_before_the_table_and_its_lead():
    opening = first_screen_html(_scales())
    assert opening.index("class='answer'") < opening.index("<table")
    cell = html.unescape(first_screen_cell(opening)[0]["source"])
    assert cell.index(PAPER_CLAIM) < cell.index("What each scale found.") < cell.index("<table")
    assert answer_html(_scales()[:1]).count("answer-sentence") == 2


def test_each_column_names_its_data_images_network_device_and_teachers():
    words = scale_words(Scale("cpu-cifar10-fit reference", _fit_fixture()))
    assert words == ("CIFAR-10, 1,200 images, ResNet-8, on a CPU; teachers 100.0 % train, "
                     "44.17 % test (cpu-cifar10-fit reference)")
    head = first_screen_html(_scales())
    head = head[head.index("<thead"):head.index("</thead>")]
    assert "1,200 images" in head and "100.0 % train" in head and "on a CPU" in head


def test_each_reference_shows_its_execution_and_finding_under_its_heading():
    """Issue 71, item 5: the finding a reference glued (it lived only in its committed
    notebook) is shown under its section's heading, outside its one toggle."""
    from dsmlib.book.references.section import glued_markdown, reference_cells
    from dsmlib.book.references.stored import Reference, reference_meta
    path = ROOT / "reference" / "cpu-cifar10" / "sec5_distillation.ipynb"
    nb = json.loads(path.read_text())
    ref = Reference("cpu-cifar10", "sec5_distillation", _doc("cpu-cifar10"),
                    reference_meta(path)["provenance"], "k", True, path)
    finding = glued_markdown(nb)["sec5_distillation_finding"].strip()
    assert finding.startswith("Measured with ResNet-8")
    head, *rest = reference_cells(nb, ref)
    assert head["source"].startswith("## The `cpu-cifar10` reference execution")
    assert f"**Its finding.** {finding}" in head["source"]
    assert rest and "hide-output" in rest[0]["metadata"]["tags"]       # the rest: one toggle
    assert "**Its finding.**" not in json.dumps(rest)
