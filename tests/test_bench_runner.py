"""``make bench``'s runner (benchmarks/run.py) collects each script's timings: rows without a
time -- a page's size in bytes, a GPU path that failed -- are echoed but not compared."""
from __future__ import annotations

import json

from helpers import load_script


def _runner():
    return load_script("benchmarks/run.py")


def test_rows_without_a_time_are_echoed_not_compared(tmp_path, capsys):
    rows = [{"name": "timed", "ours_s": 0.5, "baseline_s": 1.0, "ratio": 2.0},
            {"name": "page_bytes:x", "ours_s": None, "baseline_s": None, "ratio": None,
             "bytes": 10},
            {"name": "gpu_graph_error", "ours_s": None, "baseline_s": None, "ratio": None,
             "error": "RuntimeError: boom"}]
    script = tmp_path / "bench_fake.py"
    script.write_text("import json\n" + "".join(f"print(json.dumps({r!r}))\n" for r in rows)
                      + "print('not json')\n")
    rc, timings = _runner().run_script(script, [])
    assert rc == 0 and timings == {"timed": 0.5}
    out = capsys.readouterr().out.splitlines()
    assert [json.loads(line)["name"] for line in out[:3]] == [r["name"] for r in rows]
