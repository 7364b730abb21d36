"""Text the book writes into HTML itself reads as MyST would render it (issue 71, item 2): a
reference's headings and captions showed "$G$ over the epochs" and "(`gpu` reference.)"."""
from __future__ import annotations

from dsmlib.book.references.inline_markup import inline_html, role_text

MATH_G = '<span class="math notranslate nohighlight">\\(G\\)</span>'


def test_code_and_math_are_rendered_not_shown():
    assert inline_html("$G$ over the epochs (`gpu` reference)") == \
        f"{MATH_G} over the epochs (<code>gpu</code> reference)"
    assert inline_html("$\\sigma^2 < 1$") == \
        '<span class="math notranslate nohighlight">\\(\\sigma^2 &lt; 1\\)</span>'


def test_emphasis_and_links_are_rendered_and_everything_else_escaped():
    assert inline_html("a < b & **not** *so*") == "a &lt; b &amp; <strong>not</strong> <em>so</em>"
    assert inline_html("[the paper](https://arxiv.org/abs/2304.00320)") == \
        '<a href="https://arxiv.org/abs/2304.00320">the paper</a>'
    assert inline_html("<script>x</script>") == "&lt;script&gt;x&lt;/script&gt;"
    assert inline_html("`<b>`") == "<code>&lt;b&gt;</code>"


def test_a_role_reads_as_its_title_or_target():
    assert role_text("Figure 2 <fig-sec5-loss>") == "Figure 2"
    assert role_text("eq-sec5-noise") == "eq-sec5-noise"
    assert inline_html("as {numref}`Figure 2 <fig-x>` shows") == "as Figure 2 shows"
    assert "{" not in inline_html("{eq}`eq-sec5-noise`") and "`" not in inline_html("{eq}`e`")


def test_plain_text_is_unchanged():
    text = "The teachers' test accuracy, 85–93 % (99 % intervals)"
    assert inline_html(text) == text
