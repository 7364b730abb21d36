"""Tables of the ``prop1_noise`` chapter (figures layer)."""
from __future__ import annotations

from typing import Any

import numpy as np

from ..foundation.stats import covariance
from .tables import math_html

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
        rows.append(
            f"<tr><td>{r.setting}</td><td>{'with' if r.replacement else 'without'}</td>"
            f"<td>{r.noise_mode}</td><td>{p['c_sgd']:.4f}</td>"
            f"<td>{tr(r.xi_star) / np.trace(p['cov_star_paper']):.4f}</td>"
            f"<td>{p['c_uln']:.4f}</td><td>{tr(r.xi_uln) / np.trace(p['cov_uln_paper']):.4f}</td>"
            f"<td>{np.linalg.norm(r.xi_uln.mean(0)) / rms:.4f}</td></tr>")
    head = "".join(f"<th>{math_html(h)}</th>" for h in [
        "model", "replacement", "noise", "exact factor, $\\xi^*$", "measured / Prop. 1, $\\xi^*$",
        "exact factor, $\\xi^{\\mathrm{ULN}}$", "measured / Prop. 1, $\\xi^{\\mathrm{ULN}}$",
        "$\\|$mean $\\xi^{\\mathrm{ULN}}\\|$ / RMS"])
    return HTML(f"<table class='cases'><thead><tr>{head}</tr></thead><tbody>"
                + "".join(rows) + "</tbody></table>")
