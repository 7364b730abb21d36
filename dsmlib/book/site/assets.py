"""The files the site serves beside its pages (book layer): plotly.js and MathJax, copied from
the installed packages (or the committed plotly.js bundle) at build time, so that pages work
offline and their versions match what wrote the figures."""
from __future__ import annotations

import re
import shutil
import sys
from pathlib import Path

__all__ = ["PLOTLY_BUNDLE", "bundle_version", "full_plotly_bundle", "plotly_source", "copy_assets"]


#: plotly.js's cartesian bundle (every trace type the book draws, a third of the full size),
#: committed with its licence and a README saying how to update it.
PLOTLY_BUNDLE = Path("book") / "_vendor" / "plotly-cartesian.min.js"


def bundle_version(path: Path) -> str | None:
    """The plotly.js version a bundle's licence header names (``v4.1.1`` -> ``4.1.1``)."""
    with path.open(encoding="utf-8") as f:
        head = f.read(400)
    m = re.search(r"plotly\.js \([^)]*\) v(\d+\.\d+\.\d+)", head)
    return m.group(1) if m else None


def full_plotly_bundle() -> Path:
    """The full plotly.js bundle that the installed ``plotly`` package ships."""
    import plotly
    return Path(plotly.__file__).parent / "package_data" / "plotly.min.js"


def plotly_source(root: Path) -> Path:
    """The plotly.js the site serves: the committed cartesian bundle when it is the version the
    installed ``plotly`` writes figures for, else (with a warning) that package's full bundle."""
    from plotly.offline import get_plotlyjs_version
    bundle = root / PLOTLY_BUNDLE
    want = get_plotlyjs_version()
    have = bundle_version(bundle) if bundle.exists() else None
    if have == want:
        return bundle
    print(f"[dsmlib] warning: {PLOTLY_BUNDLE} is plotly.js {have or 'missing'}, the installed "
          f"plotly writes figures for {want}: serving the full bundle (4.8 MB, slower pages); "
          f"see {PLOTLY_BUNDLE.parent}/README.md to update it", file=sys.stderr)
    return full_plotly_bundle()


def copy_assets(root: Path) -> None:
    """Serve plotly.js (:func:`plotly_source`) and MathJax from the site itself, matching the
    installed versions."""
    import mathjax  # django-static-mathjax
    static = root / "book" / "_static"
    static.mkdir(parents=True, exist_ok=True)
    shutil.copy2(plotly_source(root), static / "plotly.min.js")
    src = Path(mathjax.__file__).parent / "static" / "mathjax" / "es5"
    dst = static / "mathjax"
    if not (dst / "tex-mml-chtml.js").exists():
        shutil.copytree(src, dst, dirs_exist_ok=True)
