"""Section 5 on CIFAR-10 in its two regimes side by side (issue 67, item 3): one row per claim of
Figures 1 and 2, a column per regime headed by its teachers' training and test accuracy, and one
sentence on what changes when the teacher fits, every number in it one of the two executions'
claims. Tested on the committed ``cpu-cifar10`` reference and a ``cpu-cifar10-fit``-shaped
fixture (its reference is still training); without both regimes there is no table."""
from __future__ import annotations

import copy
import re

from dsmlib.book.references.contrast import Scale
from dsmlib.book.references.regimes import (REGIMES, change_sentence, opening_html,
                                            regime_heading, regime_scales, regimes_html)
from dsmlib.chapters.sec5_distillation import registry
from sec5_fixtures import fit_fixture as _fit_fixture
from sec5_fixtures import reference_doc as _doc

NUMBER = re.compile(r"[+−-]?\d+\.\d+")


def _fit() -> dict:
    doc = _fit_fixture()
    doc["extra"]["teacher_epochs"] = 100
    return doc


def _pair() -> list[Scale]:
    return [Scale("quick (this build)", copy.deepcopy(_doc("gpu"))),
            Scale("cpu-cifar10 reference", _doc("cpu-cifar10")),
            Scale("cpu-cifar10-fit reference", _fit())]


def _num(s: str) -> float:
    return float(s.replace("−", "-"))


def test_the_two_regimes_are_read_off_their_results():
    scales = _pair()
    pair = regime_scales(scales)
    assert set(pair) == set(REGIMES)
    assert pair[False].label == "cpu-cifar10 reference"
    assert pair[True].label == "cpu-cifar10-fit reference"
    assert regime_heading(pair[True], True) == (
        "teachers that fit: no crops or flips, 100 epochs; teachers 100.0 % train, 44.17 % test "
        "(cpu-cifar10-fit reference)")
    under = regime_heading(pair[False], False)
    s = next(iter(pair[False].extra["settings"].values()))
    assert under.startswith("teachers that do not fit: crops and flips, 30 epochs; teachers "
                            f"{s['teacher_train_acc']:.1f} % train, {s['teacher_acc']:.2f} % test")


def test_the_table_has_a_row_per_claim_and_a_column_per_regime():
    html = regimes_html(_pair())
    assert html.count("<th") >= 3 and "teachers that fit: no crops or flips" in html
    ids = [c.id for c in registry.CLAIMS]
    rows = re.findall(r"<code>(fig[12]\.[a-z0-9_]+)</code>", html)
    assert rows == [i for i in ids if i in rows] and set(rows) == {
        c["id"] for c in _doc("cpu-cifar10")["claims"]}
    # no table without both regimes; the page's opening then is the first screen alone
    one = _pair()[:2]
    assert regimes_html(one) == "" and "teachers that fit:" not in opening_html(one)
    assert "CIFAR-10 in two regimes" in opening_html(_pair())


def test_the_sentence_quotes_the_two_executions_claims():
    pair = regime_scales(_pair())
    text = change_sentence(pair)
    quoted = []
    for cid in (registry.NOISY_BEATS_TEACHER, registry.NOISY_BEATS_NOISELESS):
        for fit in (True, False):
            c = pair[fit].claim(cid)
            quoted += [c["measured"], *c["interval"]]
    got = [_num(x) for x in NUMBER.findall(text)]
    assert len(got) == len(quoted) and all(abs(a - b) < 0.006 for a, b in zip(got, quoted)), text
    assert "against the teacher" in text and "against the continued teacher" in text
    g = [c.id for c in registry.CLAIMS if not c.accuracy]
    same = sum(pair[True].claim(i)["verdict"] == pair[False].claim(i)["verdict"] for i in g)
    assert f"; {same} of the {len(g)} claims on G(θ) and the losses keep their verdict." in text
    assert change_sentence({False: pair[False]}) == ""
