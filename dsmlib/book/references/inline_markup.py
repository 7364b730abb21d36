"""MyST inline markup as HTML (book layer), for text that the book writes into an HTML output
itself rather than into a Markdown cell: a reference's section headings and figure captions
(:mod:`dsmlib.book.references.section`). Written into HTML as it was, "$G$ over the epochs" and
"(`gpu` reference.)" showed their dollars and backticks (issue 71, item 2).

The text is parsed as MyST parses a paragraph (markdown-it with dollar math and roles), so that
`` `code` ``, ``$math$``, ``**bold**``, ``*emphasis*`` and links read as they do in the page's
own prose; everything else, raw HTML included, is escaped. Math becomes Sphinx's own inline-math element
(``<span class="math notranslate nohighlight">\\(…\\)</span>``), which the page's MathJax
typesets inside an output, and a role (`` {numref}`fig-x` ``), which HTML cannot resolve,
reads as its text (the title of ``Title <target>``, else the target).
"""
from __future__ import annotations

import html
import re
from functools import lru_cache
from typing import Any

__all__ = ["inline_html", "math_span", "role_text"]

#: ``Title <target>``: a role's explicit title.
_TITLED = re.compile(r"^(?P<title>.*?)\s*<(?P<target>[^<>]+)>$", re.S)


def math_span(tex: str) -> str:
    """Inline math as Sphinx writes it (what the page's MathJax is configured to typeset)."""
    return f'<span class="math notranslate nohighlight">\\({html.escape(tex.strip())}\\)</span>'


def role_text(content: str) -> str:
    """What a role (`` {name}`content` ``) reads as outside Sphinx: its title where it has one
    (``Title <target>``), else its content."""
    m = _TITLED.match(content.strip())
    return (m.group("title") or m.group("target")) if m else content.strip()


@lru_cache(maxsize=1)
def _parser() -> Any:
    from markdown_it import MarkdownIt
    from mdit_py_plugins.dollarmath import dollarmath_plugin
    from mdit_py_plugins.myst_role import myst_role_plugin

    md = MarkdownIt("commonmark", {"html": False}).use(dollarmath_plugin).use(myst_role_plugin)
    md.add_render_rule("math_inline", lambda self, tokens, idx, options, env:
                       math_span(tokens[idx].content))
    md.add_render_rule("myst_role", lambda self, tokens, idx, options, env:
                       html.escape(role_text(tokens[idx].content)))
    return md


def inline_html(text: str) -> str:
    """``text``, one line of MyST inline markup, as HTML: markup rendered, the rest escaped
    ("a < b, **not**" gives "a &lt; b, <strong>not</strong>")."""
    return _parser().renderInline(text).strip()
