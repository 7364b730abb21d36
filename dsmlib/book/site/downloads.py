"""Every claim as data (book layer): ``claims.json`` and ``claims.csv``, linked from the
ledger, one row per claim per execution (the built profile's and each committed reference's),
with what a reader needs to use a number elsewhere: verdict, value, interval, band, the
paper's and the exact value, scope, kind, the case that heads a claim of several, and the
profile and commit that measured it."""
from __future__ import annotations

import csv
import io
import json
import math
from typing import Any, Iterable, Sequence

from ..references.stored import Reference

__all__ = ["FIELDS", "claim_rows", "claims_json", "claims_csv", "downloads_markdown"]

#: The columns, in order (a list value is split into ``_low`` / ``_high`` in the CSV).
FIELDS = ("notebook", "id", "statement", "verdict", "measured", "interval", "band", "unit",
          "size", "paper", "exact", "scope", "kind", "source", "quantity", "case", "profile",
          "commit", "current")


def _row(nb: str, c: dict[str, Any], profile: str, commit: str, current: bool) -> dict[str, Any]:
    return {"notebook": nb, "id": c["id"], "statement": c.get("statement", ""),
            "verdict": c["verdict"], "measured": c.get("measured"),
            "interval": list(c.get("interval") or [None, None]),
            "band": list(c.get("band") or [None, None]), "unit": c.get("unit", ""),
            "size": c.get("size", ""), "paper": c.get("paper"),
            "exact": c.get("exact"), "scope": c.get("scope"), "kind": c.get("kind"),
            "source": c.get("source", "paper"), "quantity": c.get("quantity", ""),
            "case": c.get("case", ""), "profile": profile, "commit": commit, "current": current}


def claim_rows(docs: Sequence[dict[str, Any]], commits: dict[str, str], profile: str,
               references: Iterable[Reference] = ()) -> list[dict[str, Any]]:
    """The built ``profile``'s claims (``docs``; ``commits``: chapter -> the commit its
    execution ran at), then every reference's; ``current`` is False for a stale reference."""
    rows = [_row(d["notebook"], c, profile, commits.get(d["notebook"], "unknown"), True)
            for d in docs for c in d["claims"]]
    rows += [_row(r.name, c, r.profile, r.commit, r.fresh)
             for r in references for c in r.doc.get("claims", [])]
    return rows


def _finite(v: Any) -> Any:
    """A number JSON can hold: an open end (±∞) or a missing value (NaN) becomes None."""
    if isinstance(v, float) and not math.isfinite(v):
        return None
    if isinstance(v, list):
        return [_finite(x) for x in v]
    return v


def claims_json(rows: Sequence[dict[str, Any]]) -> str:
    """``{"fields", "claims"}``, standard JSON (an open end or a missing value is null)."""
    clean = [{k: _finite(v) for k, v in r.items()} for r in rows]
    return json.dumps({"fields": list(FIELDS), "claims": clean}, indent=1,
                      ensure_ascii=False, allow_nan=False, default=str) + "\n"


def _flat(v: Any) -> Any:
    v = _finite(v)
    return "" if v is None else v


def claims_csv(rows: Sequence[dict[str, Any]]) -> str:
    """One line per claim; intervals and bands as ``_low`` and ``_high`` columns, an open end
    empty."""
    head = [f"{f}_{end}" if f in ("interval", "band") else f for f in FIELDS
            for end in (("low", "high") if f in ("interval", "band") else ("",))]
    out = io.StringIO()
    w = csv.writer(out, lineterminator="\n")
    w.writerow(head)
    for r in rows:
        w.writerow([_flat(x) for f in FIELDS
                    for x in ((r[f] + [None, None])[:2] if f in ("interval", "band") else [r[f]])])
    return out.getvalue()


def downloads_markdown(json_path: str, csv_path: str, n: int) -> str:
    """The ledger's download line (Sphinx ``{download}`` roles, paths relative to the page)."""
    return (f"**Every claim as data** ({n} rows: this build's and each reference's): "
            f"{{download}}`claims.json <{json_path}>`, {{download}}`claims.csv <{csv_path}>` "
            "(verdict, value, interval, band, their unit (empty: a pure number; points: of test "
            "accuracy), size against δ, paper and exact value, scope, kind, profile, commit).")
