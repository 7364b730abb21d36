"""What a reader sees of a chapter's provenance (book layer; the record itself is
:mod:`dsmlib.book.execute.provenance`): the line and the folded "parameters used" table under each
chapter's title (:func:`decorate`, which also hides the parameters cells, which would expose the
executing machine's paths), and the reproducibility page's table."""
from __future__ import annotations

import html
import re
from typing import Any

from ...figures.tables import data_table
from ..profiles import GOAL_MACHINE, QUICK_GOAL_S
from .cells import cell_source, cell_tags

__all__ = ["RERUN_SOURCE", "duration_text", "trained_seconds", "training_text", "provenance_line", "provenance_text",
           "parameters_html", "decorate", "provenance_table"]


def _machine(hw: dict[str, Any]) -> str:
    gpu = f", GPU {hw['gpu']}" if hw.get("gpu") else ", no GPU"
    return f"{html.escape(str(hw.get('cpu')))} ({hw.get('cpu_count')} cores{html.escape(gpu)})"


def _dirty(commit: Any) -> str:
    return (" (<code>-dirty</code>: executed with uncommitted changes, so that commit alone "
            "does not reproduce it)" if str(commit).endswith("-dirty") else "")


def trained_seconds(trained: Mapping[str, Any] | None) -> float | None:
    """The training time a reference's provenance states (its ``trained``: the manifest's
    provenance, :func:`store_run_records`): the seconds summed from its run records
    (``records_s``), or None where it has none. Never ``trained["wall_s"]``: that is the
    command that committed the records, which trained nothing when the runs had trained
    before it (``cpu-cifar10``: 19 s, where its 131 records sum to 14,811 s)."""
    spent = (trained or {}).get("records_s")
    return None if spent is None else float(spent)


def duration_text(seconds: float) -> str:
    """A duration as a reader takes it in: seconds below 2 minutes, minutes below 2 hours,
    then hours (``19 s``, ``5.0 min``, ``4.1 h``)."""
    if seconds < 120:
        return f"{seconds:.0f} s"
    return f"{seconds / 60:.1f} min" if seconds < 7200 else f"{seconds / 3600:.1f} h"


def training_text(trained: dict[str, Any] | None) -> str:
    """How long a reference's runs trained, from its run records
    (:func:`trained_seconds`): "4.1 h of training (14,811 s,
    summed from its run records)", or that its records state none."""
    spent = trained_seconds(trained)
    if spent is None:
        return "training time not recorded"
    exact = f"{spent:,.0f} s, " if spent >= 120 else ""
    return f"{duration_text(spent)} of training ({exact}summed from its run records)"


def provenance_line(p: dict[str, Any]) -> str:
    """Where, when and with what a chapter was executed (HTML); for one re-derived from
    committed run records (``p["trained"]``, :mod:`dsmlib.book.references.records`), where and
    at which commit the runs were trained and how long, summed from the records
    (:func:`training_text`), then where and at which commit they were analysed and how long
    the analysis took (the execution's own wall time)."""
    v = p["versions"]
    versions = f"Python {v['python']}, numpy {v['numpy']}, torch {v['torch']}"
    commit = f"commit <code>{p['commit']}</code>{_dirty(p['commit'])}"
    t = p.get("trained")
    if not t:
        return (f"Executed under the <code>{p['profile']}</code> profile in {p['wall_s']:.0f} s "
                f"on {_machine(p['hardware'])}; {versions}; {commit}.")
    tv = t.get("versions") or {}
    return (f"Trained under the <code>{t.get('profile', p['profile'])}</code> profile on "
            f"{_machine(t.get('hardware') or {})} at commit <code>{t.get('commit')}</code>"
            f"{_dirty(t.get('commit'))} with torch {tv.get('torch', '?')}: {training_text(t)}; "
            f"analysed from its committed run records on {_machine(p['hardware'])} at {commit} "
            f"({versions}) in {duration_text(float(p['wall_s']))}.")


def parameters_html(params: dict[str, Any], set_by: dict[str, str] | None = None) -> str:
    """Every parameter value, the overrides (of the notebook's parameters cell) marked."""
    set_by = set_by or {}

    def origin(k: str) -> str:
        return (f"<strong>{html.escape(set_by[k])}</strong>" if k in set_by
                else "notebook default")
    mark = {k: " class='override'" for k in set_by}
    rows = "".join(f"<tr{mark.get(k, '')}>"
                   f"<td><code>{html.escape(k)}</code></td>"
                   f"<td><code>{html.escape(repr(v))}</code></td><td>{origin(k)}</td></tr>"
                   for k, v in params.items())
    n = len(set_by)
    note = f", {n} overridden" if n else ""
    return (f"<details><summary>Parameters used ({len(params)} values{note})</summary>"
            "<table class='params'><thead><tr><th>name</th><th>value</th><th>set by</th>"
            f"</tr></thead><tbody>{rows}</tbody></table></details>")


#: The code of the provenance cell: it shows the runner's provenance (its saved output) until
#: a person re-executes the notebook, when it says so (:mod:`dsmlib.book.execute.rerun`).
RERUN_SOURCE = ("# Re-executed by hand (papermill, Jupyter): this cell says so, here.\n"
                "from dsmlib.book.execute.rerun import announce_rerun\n"
                "announce_rerun({name!r}, globals())")


def decorate(nb: dict[str, Any], p: dict[str, Any], key: str, gpu_notice: str = "",
             name: str = "") -> None:
    """Hide the parameters cells and put the provenance and parameters under the title, in
    place: a cell whose output is the runner's provenance line and parameters table, and whose
    code, when a person re-executes notebook ``name``, shows that run's instead
    (:data:`RERUN_SOURCE`)."""
    cells = nb["cells"]
    for c in cells:
        tags = c.setdefault("metadata", {}).setdefault("tags", [])
        if ("parameters" in tags or "injected-parameters" in tags) and "remove-cell" not in tags:
            tags.append("remove-cell")
    cells[:] = [c for c in cells if "dsmlib-provenance" not in cell_tags(c)]
    title = next((i for i, c in enumerate(cells) if c["cell_type"] == "markdown"
                  and cell_source(c).lstrip().startswith("# ")), -1)
    body = (f"<div class='provenance'>{provenance_line(p)}\n"
            f"{parameters_html(p['parameters'], p.get('set_by'))}</div>\n")
    head = [{"cell_type": "markdown", "id": "dsmlib-gpu-notice",
             "metadata": {"tags": ["dsmlib-provenance"]},
             "source": f"<div class='gpu-notice'>{gpu_notice}</div>\n"}] if gpu_notice else []
    head.append({"cell_type": "code", "id": "dsmlib-provenance", "execution_count": None,
                 "metadata": {"tags": ["dsmlib-provenance", "remove-input"]},
                 "outputs": [{"output_type": "display_data", "metadata": {},
                              "data": {"text/html": body, "text/plain": provenance_text(p)}}],
                 "source": RERUN_SOURCE.format(name=name)})
    # A title cell may hold more than the title: split it so provenance sits right below.
    if title >= 0:
        src = cell_source(cells[title])
        head_line, _, rest = src.lstrip().partition("\n")
        cells[title]["source"] = head_line + "\n"
        extra = [{"cell_type": "markdown", "id": "dsmlib-title-rest",
                  "metadata": {"tags": ["dsmlib-title-rest"]}, "source": rest}] if rest.strip() else []
        cells[title + 1:title + 1] = head + extra
    else:
        cells[0:0] = head
    nb.setdefault("metadata", {})["dsmlib"] = {"key": key, "provenance": p}


def provenance_text(p: dict[str, Any]) -> str:
    """The provenance line as plain text (for a reader of the notebook file)."""
    return html.unescape(re.sub(r"<[^>]+>", "", provenance_line(p)))


def provenance_table(runs: dict[str, dict[str, Any] | None], paths: dict[str, str]) -> str:
    """The reproducibility page's table, one row per chapter (one card per chapter on a
    phone: the six columns scrolled sideways at 390 px), and the chapters' wall times added
    (Markdown with raw HTML; ``paths``: each chapter's page, relative to that page)."""
    rows = []
    for name, p in runs.items():
        link = f"<a href='{html.escape(paths[name])}.html'>{html.escape(name)}</a>"
        if not p:
            rows.append([link, "—", "—", "not recorded", "—", "—"])
            continue
        hw, v, t = p["hardware"], p["versions"], p.get("trained")
        gpu = f"; {hw['gpu']}" if hw.get("gpu") else ""
        where = html.escape(f"{hw['cpu']} ×{hw['cpu_count']}{gpu}")
        commit = f"<code>{html.escape(str(p['commit']))}</code>"
        if t:
            th = t.get("hardware") or {}
            where = html.escape(f"trained on {th.get('gpu') or th.get('cpu')}, analysed on "
                                f"{hw['gpu'] or hw['cpu']}")
            commit = (f"trained <code>{html.escape(str(t.get('commit')))}</code>, analysed "
                      f"<code>{html.escape(str(p['commit']))}</code>")
        wall = f"{p['wall_s']:.0f} s"
        if t:
            wall = f"analysis {wall}; {html.escape(training_text(t))}"
        rows.append([link, f"<code>{html.escape(str(p['profile']))}</code>", wall, where,
                     html.escape(f"{v['python']}, {v['numpy']}, {v['torch']}"), commit])
    table = data_table(["Chapter", "Profile", "Wall time", "Hardware", "Python, numpy, torch",
                        "Commit"], rows, table_class="cases cards provenance-table")
    walls = [float(p["wall_s"]) for p in runs.values() if p]
    cpus = sorted({p["hardware"]["cpu"] for p in runs.values() if p})
    total = (f"\n\nTheir executions took {sum(walls):.0f} s in all on {', '.join(cpus)} (each "
             "chapter's wall time, added; `make book` runs one chapter per two cores at once, "
             "so on more than 3 cores it waits less, and on 2 or 3 cores about this long). "
             f"The `quick` profile's goal, {QUICK_GOAL_S} s for the whole book, is set for "
             f"{GOAL_MACHINE}; another CPU's time scales by its speed."
             if walls else "")
    return f"```{{raw}} html\n{table}\n```{total}\n"
