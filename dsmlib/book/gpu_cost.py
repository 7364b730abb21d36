"""What Section 5 costs at the paper's scale (book layer), on the site: the GPU-hours per seed
of the paper's Figure 1 grid that ``benchmarks/bench_distill.py --gpu`` measured, read from the
committed raw outputs of GPU sessions (``benchmarks/gpu_runs/<date>_<card>/<call>/bench.jsonl``)."""
from __future__ import annotations

import html
import json
from pathlib import Path
from typing import Any, Sequence

from ..figures.tables import data_table

__all__ = ["GPU_RUNS", "cost_rows", "cost_markdown"]

GPU_RUNS = Path("benchmarks") / "gpu_runs"
ROW = "paper_grid_gpu_hours_"


def cost_rows(root: Path) -> list[dict[str, Any]]:
    """Every ``paper_grid_gpu_hours_<step>`` row committed under :data:`GPU_RUNS`, with the
    call it came from (oldest first); a line that is not JSON is skipped."""
    rows = []
    for path in sorted((root / GPU_RUNS).glob("*/*/bench.jsonl")):
        for line in path.read_text().splitlines():
            try:
                r = json.loads(line)
            except ValueError:
                continue
            if str(r.get("name", "")).startswith(ROW) and "gpu_hours_per_seed" in r:
                rows.append({**r, "call": path.parent.relative_to(root).as_posix(),
                             "date": path.parent.parent.name.split("_")[0]})
    return rows


def cost_markdown(rows: Sequence[dict[str, Any]], seeds: int | None) -> str:
    """A sentence on the cheapest measured way to run the grid and a table of every row;
    ``seeds``: how many the ``paper`` profile trains (None: not said)."""
    if not rows:
        return ("No GPU session has measured the paper's grid yet (`benchmarks/gpu_check.sh` "
                "does, and its outputs are committed under `benchmarks/gpu_runs/`).\n")
    best = min(rows, key=lambda r: r["gpu_hours_per_seed"])
    total = (f", so the `paper` profile's {seeds} seeds take about "
             f"{best['gpu_hours_per_seed'] * seeds:.0f} GPU-hours" if seeds else "")
    lines = [f"At the rates measured on one {best['device']} ({best['date']}), the paper's "
             "Figure 1 grid (SVHN, CIFAR-10 and CIFAR-100; a ResNet-56 teacher and "
             f"{best.get('students_per_group', '?')} students each; 200 epochs) costs "
             f"**{best['gpu_hours_per_seed']:.2f} GPU-hours per seed** with the "
             f"`{best['step']}` step{total}; every run alone at the eager teacher's rate would "
             f"take {best['baseline_gpu_hours_per_seed']:.1f} GPU-hours per seed (the bench's "
             f"note: {best.get('note', 'none')}).", ""]
    table = data_table(
        ["Measured", "Card", "Step", "GPU-hours per seed", "Every run alone", "Raw output"],
        [[html.escape(r["date"]), html.escape(r["device"]), f"<code>{html.escape(r['step'])}</code>",
          f"{r['gpu_hours_per_seed']:.2f}", f"{r['baseline_gpu_hours_per_seed']:.1f}",
          f"<code>{html.escape(r['call'])}/bench.jsonl</code>"] for r in rows],
        table_class="cases gpu-cost cards")
    return "\n".join(lines + ["```{raw} html", table, "```"]) + "\n"
