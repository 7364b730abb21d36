"""Why the `gpu` profile leaves sigma2 = 1 undecided, read from the committed `gpu` reference
(issue 14): the gap log(G_noisy / G_noiseless) per epoch, how much of the seeds' spread the
G probes could explain, and the seeds a verdict would take.

    python benchmarks/gpu_runs/sigma2_gap.py [NOTEBOOK [RESULTS]]

NOTEBOOK defaults to reference/gpu/sec5_distillation.ipynb and RESULTS to the JSON beside it
(a custom run, such as `gpu_check.sh explore`'s, keeps its results in results/custom/). Reads
the executed notebook's "G per epoch" figure (geometric means over seeds, so the log
ratio of two curves is the mean over seeds of the paired log gap) and the claim's interval in
the JSON beside it. The probes are redrawn every epoch, so with the learning rate at 1/100 of
its start (the last quarter of the epochs), the epoch-to-epoch scatter of the mean gap bounds
the probes' share: per seed, probe error <= scatter * sqrt(seeds).
"""
from __future__ import annotations

import base64
import json
import math
import sys
from pathlib import Path

import numpy as np
from scipy import stats

from dsmlib.foundation.power import units_to_decide

CLAIM = "fig1.noise_lowers_gradnorm_sigma2"
TITLE = "G(θ), gaussian noise (σ²)"


def _values(v) -> np.ndarray:
    if isinstance(v, dict):                       # plotly's packed arrays
        return np.frombuffer(base64.b64decode(v["bdata"]), dtype=v["dtype"]).astype(float)
    return np.asarray(v, dtype=float)


def gaussian_curves(nb: dict) -> dict[str, np.ndarray]:
    """Per curve name, the geometric mean of G over seeds at every epoch (0 = before training)."""
    for cell in nb["cells"]:
        for out in cell.get("outputs", []):
            fig = out.get("data", {}).get("application/vnd.plotly.v1+json")
            if fig and fig["layout"].get("yaxis", {}).get("title", {}).get("text") == TITLE:
                return {t["name"]: _values(t["y"]) for t in fig["data"]
                        if t.get("yaxis", "y") == "y"}
    raise SystemExit(f"no figure with the y-axis title {TITLE!r} in the notebook")


def analyse(path: Path, results: Path | None = None) -> dict:
    """The figures :func:`main` prints, by name (the gaps by epoch; the sigma2 = 1 case; the
    seeds that case would take, with the seeds' spread as measured and without the probes'
    share of it)."""
    nb = json.loads(path.read_text())
    doc = json.loads((results or path.with_suffix(".json")).read_text())
    params = doc["run"]["parameters"]
    seeds = len(params["seeds"])
    epochs = params.get("student_epochs") or params["teacher_epochs"]   # None: the teacher's
    curves = gaussian_curves(nb)
    none = np.log(curves["noiseless student"])
    late = np.arange(len(none)) > 0.75 * epochs    # after the second drop (lr / 100)
    out: dict = {"seeds": seeds, "epochs": epochs, "gaps": {}}
    for name, g in curves.items():
        if name.startswith("σ²"):
            gap = np.log(g) - none
            dof = int(late.sum()) - 1
            if dof < 2:     # too few epochs after the drop to bound the probes (a tiny run)
                sd = upper = math.nan
            else:
                sd = float(gap[late].std(ddof=1))
                upper = sd * math.sqrt(dof / stats.chi2.ppf(0.01, dof))     # 99 % upper limit
            out["gaps"][name] = dict(by_epoch=gap[1:], late_mean=float(gap[late].mean()),
                                     probe=sd * math.sqrt(seeds),
                                     probe_upper=upper * math.sqrt(seeds))
    claim = next(c for c in doc["claims"] if c["id"] == CLAIM)
    case = claim["details"][0]
    q = stats.t.ppf(0.995, seeds - 1)               # the ledger's 99 % interval over seeds
    spread = (case["interval"][1] - case["interval"][0]) / 2 / q * math.sqrt(seeds)
    probe = out["gaps"][case["case"].split(": ")[-1]]["probe_upper"]
    share = min(1.0, (probe / spread) ** 2) if math.isfinite(probe) else math.nan
    out.update(case=case, spread=spread, probe_share=share,
               exact_spread=math.sqrt(max(spread ** 2 - probe ** 2, 0.0)), plans=[])
    spreads = [("as measured", spread)] + ([("with exact G", out["exact_spread"])]
                                           if math.isfinite(probe) else [])
    for label, s in spreads:
        for effect in (case["measured"], 2 * case["measured"]):
            se = s / math.sqrt(seeds)
            m = units_to_decide(effect, se, (effect - q * se, effect + q * se), claim["band"],
                                seeds)
            out["plans"].append((label, s, effect, m))
    return out


def main(path: Path, results: Path | None = None) -> None:
    a = analyse(path, results)
    print(f"{path}: {a['seeds']} seeds, students {a['epochs']} epochs, lr / 10 after epochs "
          f"{a['epochs'] // 2} and {3 * a['epochs'] // 4}")
    for name, g in a["gaps"].items():
        print(f"  {name}: gap by epoch {np.round(g['by_epoch'], 3).tolist()}")
        print(f"    last quarter: mean {g['late_mean']:+.3f}; probe error per seed <= "
              f"{g['probe']:.3f} (99 % upper limit {g['probe_upper']:.3f})")
    c = a["case"]
    share = (f"the probes explain at most {a['probe_share']:.0%} of its variance"
             if math.isfinite(a["probe_share"]) else
             "the probes' share is not bounded (fewer than 3 epochs after the second drop)")
    print(f"  {c['case']}: {c['measured']:+.3f} [{c['interval'][0]:.3f}, {c['interval'][1]:.3f}]"
          f" (99 %), spread over seeds {a['spread']:.3f}; {share}")
    for label, s, effect, m in a["plans"]:
        print(f"    spread {s:.3f} ({label}), gap {effect:+.3f}: {m} seeds for an 80 % chance "
              f"of a verdict")


if __name__ == "__main__":
    main(Path(sys.argv[1] if len(sys.argv) > 1 else "reference/gpu/sec5_distillation.ipynb"),
         Path(sys.argv[2]) if len(sys.argv) > 2 else None)
