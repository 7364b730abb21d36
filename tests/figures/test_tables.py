"""Claims as tables and summaries (dsmlib.figures.tables)."""
from __future__ import annotations

from dsmlib.figures import tables
from dsmlib.foundation import claims as C


def _claims():
    ok = C.case(paper=1.0, measured=1.0, se=0.01, band=(0.9, 1.1))
    high = C.case(paper=1.0, measured=2.0, se=0.01, band=(0.9, None))
    return [C.measure("x.a", "A holds.", paper=1.0, measured=1.0, se=0.01, band=(0.9, 1.1)),
            C.every_case("x.b", "B holds in every case.", {"one": ok, "two": high}),
            C.measure("x.c", "A correction.", paper=0.0, measured=0.5, se=0.01, band=(None, 0.1),
                      source="book")]


def test_claims_table_lists_every_claim_with_its_verdict():
    html = tables.claims_table(_claims()).data
    assert html.count("<tr data-scale='build' class='claim") == 3     # one row per claim ...
    assert html.count("<tr data-scale='build' class='more'>") == 3    # ... and one folded row each
    assert html.index("Verdict") < html.index("Claim") < html.index("Measured")
    for text in ("<code>x.a</code>", "<code>x.c</code> <span class='book-tag'>book</span>",
                 "✔ confirmed", "✘ refuted", "[0.9, 1.1]", "[−∞, 0.1]", "<details>"):
        assert text in html


def test_cases_table_and_summary():
    cl = _claims()
    html = tables.cases_table(cl).data
    assert html.count("<tr data-scale='build' class='v-") == 2    # x.b's two cases
    assert "<td data-label='Case'>two</td>" in html and "[0.9, ∞]" in html
    assert "class='cases case-verdicts cards'" in html
    md = tables.verdict_summary(cl).data
    line = md.splitlines()[2]
    assert line.startswith("- **✘ refuted** *(the book's correction)*: A correction.")
    for text in ("Measured 0.5", "99% CI [0.4742, 0.5258]", "band [−∞, 0.1]", "paper 0",
                 "`x.c`"):
        assert text in line, text


def test_data_table_labels_every_cell_for_the_phone_cards():
    html = tables.data_table(["panel", "η<sub>max</sub>"], [["(a)", "0.0698"], ["(b)", "1.2e−03"]])
    assert "class='cases cards'" in html and "<th>η<sub>max</sub></th>" in html
    assert html.count("data-label='ηmax'") == 2 and "<td data-label='panel'>(a)</td>" in html
    html = tables.data_table(["$x$"], [["1"]], labels=["x"])
    assert "data-label='x'" in html
    import pytest
    with pytest.raises(ValueError, match="^every row and labels must have 1 cells"):
        tables.data_table(["a"], [["1", "2"]])


def test_a_condition_is_a_correction_only_for_a_refuted_claim():
    """A refuted claim's condition says what would make it hold; an undecided claim's is only
    a guess at what would decide it, and is never presented as a correction."""
    refuted = C.measure("x.r", "R.", paper=0.0, measured=0.5, se=0.01, band=(None, 0.1),
                        condition="Holds if y.")
    undecided = C.measure("x.u", "U.", paper=0.0, measured=0.1, se=0.1, band=(None, 0.1),
                          condition="Needs z.")
    assert (refuted.verdict, undecided.verdict) == ("refuted", "inconclusive")
    html = tables.claims_table([refuted, undecided]).data
    md = tables.verdict_summary([refuted, undecided]).data
    for text in (html, md):
        assert text.count("What would make it hold") == 1
        assert text.count("What might decide it (a guess, not measured)") == 1
        assert text.index("What would make it hold") < text.index("Holds if y.") \
            < text.index("What might decide it") < text.index("Needs z.")


def test_with_scale_marks_every_verdict_row_and_captions_the_tables():
    """A reference execution's rows say so (``data-scale``), whichever version of this module
    made them (rows without the attribute too), and its tables carry a caption; rows of other
    tables are left alone."""
    page = tables.claims_table(_claims()).data + tables.cases_table(_claims()).data
    old = page.replace(" data-scale='build'", "")            # a reference made before the mark
    other = tables.data_table(["a"], [["1"]], row_classes=["override"])
    for src in (page, old):
        out = tables.with_scale(src + other, tables.reference_scale("gpu"), "Verdicts of <b>gpu</b>")
        assert out.count("<tr data-scale='reference gpu' class='") == 3 + 3 + 2 * 2
        assert "data-scale='build'" not in out and "<tr class='override'>" in out
        assert out.count("<caption>Verdicts of <b>gpu</b></caption>") == 1 + 2   # claims + 2 case tables
    assert tables.with_scale(page, "build") == page


def test_band_words_say_what_a_claim_is_tested_against():
    """Issue 33: a one-sided band reads as words ("at least 1", "below 0" for a sign), not as
    "[−∞, −1e−12] around the paper's 0"."""
    inf = float("inf")
    assert tables.band_words([None, -1e-12]) == "below 0"
    assert tables.band_words([-inf, -1e-12]) == "below 0"
    assert tables.band_words([1e-12, inf]) == "above 0"
    assert tables.band_words([1.0, None]) == "at least 1"
    assert tables.band_words([None, 0.05]) == "at most 0.05"
    assert tables.band_words([0.9, 1.1]) == "between 0.9 and 1.1"
    assert tables.band_words([None, None]) == "any value"


def test_a_verdict_row_shows_what_it_was_tested_against():
    """The ledger's Paper column shows the band in words beside the paper's value (a
    measured 1.934 "confirmed" against the paper's 10.47 was only readable in Details)."""
    claim = C.measure("ols.shape", "Shape.", paper=10.47, measured=1.934, se=0.01,
                      band=(1.0, None))
    html = tables.claims_html([claim])
    assert "<td class='c-paper'>10.47 <span class='band'>tested: at least 1</span></td>" in html


def test_plain_quantity_says_the_jargon_in_words():
    q = tables.plain_quantity("mean of x, coordinate 2 of 2 (joint 99% box)", "e")
    assert q == ("mean of x, component 2 of 2 (the intervals of all 2 components hold together "
                 "at 99 %) (shown: case e, the one that heads the claim)")
    assert tables.plain_quantity("slope of y") == "slope of y"
    stored = C.every_case("x.b", "B.", {"e": C.joint_case([0.0, 5.0], [0.1, 0.1], paper=0.0,
                                                          band=(-1.0, 1.0), quantity="m")})
    assert stored.case == "e" and "deciding" not in stored.quantity      # the case is data
    assert "joint" not in tables.plain_quantity(stored.quantity, stored.case)


def test_the_case_that_heads_a_claim_is_named_in_the_readers_words():
    """Issue 70, item 4: the heading case is stored on the claim (``case``), no longer written
    into its quantity and parsed back; the table and the errata say it in the words they used
    ("(shown: case e, the one that heads the claim)"), and a stored claim from before the field
    (no ``case``) is shown without it."""
    from dataclasses import asdict
    from dsmlib.book.site.ledger import errata_markdown
    a = C.case(paper=1, measured=1.0, se=0.01, band=(0.9, 1.1), quantity="ratio of x")
    b = C.case(paper=1, measured=3.0, se=0.01, band=(0.9, 1.1), quantity="ratio of x")
    claim = C.every_case("x.r", "R.", {"η = 0.1": a, "η = 0.2": b}, scope="setting",
                         condition="c")
    assert (claim.case, claim.quantity) == ("η = 0.2", "ratio of x")
    words = "ratio of x (shown: case η = 0.2, the one that heads the claim)"
    assert f"<dt>Quantity</dt><dd>{words}</dd>" in tables.claims_html([claim])
    doc = {"notebook": "n", "profile": "quick", "claims": [asdict(claim)]}
    assert f"({words}; `x.r`)" in errata_markdown([doc], chapter_paths={}, profile="quick")
    old = {k: v for k, v in asdict(claim).items() if k != "case"}
    assert "<dt>Quantity</dt><dd>ratio of x</dd>" in tables.claims_html([old])
