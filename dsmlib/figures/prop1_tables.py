"""Tables of the ``prop1_noise`` chapter (figures layer)."""
from __future__ import annotations

from typing import Any

import numpy as np

from ..foundation.stats import covariance
from .tables import data_table, math_html

__all__ = ["scheme_table"]


def scheme_table(results) -> Any:
    """Per model and sampling scheme: Prop. 1's exact factors beside the measured ratios of
    the two covariances, and the size of the label-noise term's mean (HTML)."""
    from IPython.display import HTML
    rows = []
    for r in results:
        p = r.predicted
        tr = lambda a: float(np.trace(covariance(a)))  # noqa: E731
        rms = np.sqrt((r.xi_uln ** 2).sum(1).mean())
        rows.append([r.setting, "with" if r.replacement else "without", r.noise_mode,
                     f"{p['c_sgd']:.4f}", f"{tr(r.xi_star) / np.trace(p['cov_star_paper']):.4f}",
                     f"{p['c_uln']:.4f}", f"{tr(r.xi_uln) / np.trace(p['cov_uln_paper']):.4f}",
                     f"{np.linalg.norm(r.xi_uln.mean(0)) / rms:.4f}"])
    head = [math_html(h) for h in [
        "model", "replacement", "noise", "exact factor, $\\xi^*$", "measured / Prop. 1, $\\xi^*$",
        "exact factor, $\\xi^{\\mathrm{ULN}}$", "measured / Prop. 1, $\\xi^{\\mathrm{ULN}}$",
        "$\\|$mean $\\xi^{\\mathrm{ULN}}\\|$ / RMS"]]
    labels = ["model", "replacement", "noise", "exact factor, ξ*", "measured / Prop. 1, ξ*",
              "exact factor, ξᵁᴸᴺ", "measured / Prop. 1, ξᵁᴸᴺ", "‖mean ξᵁᴸᴺ‖ / RMS"]
    return HTML(data_table(head, rows, labels))
