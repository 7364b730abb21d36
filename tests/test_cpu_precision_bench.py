"""The scripts of issue 69 at a tiny size: benchmarks/cpu_precision.py (item 1) at ResNet-8, a
teacher and a lockstep group of two students, one step per cell, the compiled form traced by
dynamo without compiling (``--compile-backend eager``) -- its rows' schema, the ratio to fp32
eager timed in the same run, a compile that fails recorded as a row, and the reach table where
the rates allow it; benchmarks/cpu_parity.py (item 2) and benchmarks/cpu_measure_share.py
(item 3) on the smoke profile (digits), and the measurement share's arithmetic on fabricated
rows. Seconds."""
from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest

from helpers import ROOT

TINY = ["--depths", "8", "--students", "2", "--steps", "1", "--rounds", "1"]
CELL_KEYS = {"name", "depth", "role", "precision", "step", "images_per_s", "ratio", "ours_s",
             "baseline_s", "cpu", "amx", "avx512_bf16", "capability", "gflops", "of_peak",
             "matmul_gflops"}


def _bench():
    """The script as a module (registered: its dataclass needs its module in sys.modules)."""
    if "cpu_precision" not in sys.modules:
        spec = importlib.util.spec_from_file_location("cpu_precision",
                                                      ROOT / "benchmarks" / "cpu_precision.py")
        module = importlib.util.module_from_spec(spec)
        sys.modules["cpu_precision"] = module
        spec.loader.exec_module(module)
    return sys.modules["cpu_precision"]


def test_the_bench_times_every_cell_against_fp32_eager_in_one_run(tmp_path, capsys):
    out = tmp_path / "rows.jsonl"
    rows = _bench().main(TINY + ["--compile-backend", "eager", "--out", str(out)])
    cells = [r for r in rows if r["name"].startswith("cpu_precision_resnet")]
    assert {(r["role"], r["precision"], r["step"]) for r in cells} == {
        (role, p, s) for role in ("teacher", "students") for p in ("fp32", "bf16")
        for s in ("eager", "compiled")}
    for r in cells:
        assert CELL_KEYS <= set(r) and r["depth"] == 8 and isinstance(r["amx"], bool)
        assert r["name"] == f"cpu_precision_resnet8_{r['role']}_{r['precision']}_{r['step']}"
    timed = [r for r in cells if r["ours_s"] is not None]
    skipped = [r for r in cells if "skipped" in r]
    # compiled: the teacher by default, not the students (left out, said so)
    assert {(r["role"], r["step"]) for r in skipped} == {("students", "compiled")}
    assert all(r["images_per_s"] is None and r["ratio"] is None for r in skipped)
    for r in timed:
        base = next(b for b in cells if (b["role"], b["precision"], b["step"])
                    == (r["role"], "fp32", "eager"))
        assert r["baseline_s"] == base["ours_s"] and r["ratio"] == base["ours_s"] / r["ours_s"]
        members = 1 if r["role"] == "teacher" else 2
        assert r["members"] == members
        assert r["images_per_s"] == 64 * members / r["ours_s"]
        assert r["of_peak"] == r["gflops"] / r["matmul_gflops"] > 0
    assert all(r["ratio"] == 1.0 for r in timed if (r["precision"], r["step"]) == ("fp32", "eager"))
    (mm,) = [r for r in rows if r["name"] == "cpu_precision_matmul"]
    assert mm["fp32_gflops"] > 0 and mm["bf16_gflops"] > 0 and mm["ratio"] > 0
    assert {r["matmul_gflops"] for r in cells if r["precision"] == "bf16"} == {mm["bf16_gflops"]}
    assert not [r for r in rows if r["name"].startswith("reach_")]   # 2 students, one depth
    assert [json.loads(line) for line in out.read_text().splitlines()] == rows
    printed = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert printed == rows


def test_a_compile_that_fails_is_a_row_with_its_error_and_the_rest_are_timed():
    rows = _bench().main(TINY + ["--compile-backend", "no_such_backend"])
    failed = [r for r in rows if r.get("error")]
    assert {(r["role"], r["step"]) for r in failed} == {("teacher", "compiled")}
    assert all(r["ours_s"] is None and r["compile_s"] is not None for r in failed)
    assert all(r["ours_s"] for r in rows if r["name"].startswith("cpu_precision_resnet")
               and r["step"] == "eager")


def test_the_reach_rows_come_from_twelve_students_at_every_depth_in_fp32():
    bench = _bench()

    def row(depth, role, precision, ips):
        return {"name": "x", "depth": depth, "role": role, "precision": precision,
                "step": "eager", "images_per_s": ips}
    rows = [row(d, role, "fp32", ips) for d, t in ((8, 400.0), (20, 100.0), (56, 40.0))
            for role, ips in (("teacher", t), ("students", 12 * t))]
    reach = bench.reach_rows(rows, 12)
    assert [r["name"] for r in reach] == ["reach_resnet20_fp32", "reach_resnet56_fp32"]
    assert (reach[0]["images"] or 0) >= (reach[1]["images"] or 0)    # deeper: no more images
    assert all(r["epochs"] == 100 and r["budget_s"] == 8 * 3600 for r in reach)
    assert bench.reach_rows(rows, 2) == [] and bench.reach_rows(rows[:4], 12) == []


def test_the_parity_script_trains_each_seed_in_both_precisions_and_writes_one_row(tmp_path):
    """benchmarks/cpu_parity.py on the smoke profile (digits, 64 images, one epoch): three
    seeds' teachers in fp32 and bf16 through run_many, one row whose name says parity."""
    _bench()                                  # the module it imports, registered
    spec = importlib.util.spec_from_file_location("cpu_parity",
                                                  ROOT / "benchmarks" / "cpu_parity.py")
    parity = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(parity)
    out = tmp_path / "parity.jsonl"
    row = parity.main(["--profile", "smoke", "--images", "64", "--epochs", "1",
                       "--runs-dir", str(tmp_path / "runs"), "--out", str(out)])
    assert "parity" in row["name"] and row["seeds"] == [0, 1, 2] and row["epochs"] == 1
    assert row["verdict"] in ("confirmed", "refuted", "inconclusive")
    assert row["ratio"] == row["baseline_s"] / row["ours_s"] and isinstance(row["amx"], bool)
    assert json.loads(out.read_text()) == row
    runs = sorted(p.name for p in (tmp_path / "runs").iterdir())
    assert len(runs) == 6                     # 3 seeds x 2 precisions, each its own key


def _script(name: str):
    spec = importlib.util.spec_from_file_location(name, ROOT / "benchmarks" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_measurement_share_is_read_from_the_rows_timings():
    """Fabricated rows: 4 epochs, each 10 s of steps; row 0 measured in 3 s, the epochs between
    in 1 s (0.6 evaluation, 0.4 G), the last (whole) in 5 s; 25 s of wall time in all."""
    share = _script("cpu_measure_share")
    rows = [{"train_s": 0.0, "eval_s": 2.0, "gradnorm_s": 1.0, "n_train": 1200, "lockstep": 12}]
    rows += [{"train_s": 10.0, "eval_s": 0.6, "gradnorm_s": 0.4} for _ in range(2)]
    rows += [{"train_s": 10.0, "eval_s": 4.0, "gradnorm_s": 1.0}]
    config = type("C", (), {"depth": 8, "n_train_eval": 256, "n_gradnorm": 64,
                            "gradnorm_probes": 2})()
    r = share.side_row(rows, 50.0, config, "after", 300)
    assert r["name"] == "measure_share_resnet8_students_after" and r["members"] == 12
    assert (r["train_s_per_epoch"], r["measure_s_per_epoch"], r["share"]) == (10.0, 1.0, 0.1)
    assert (r["row0_s"], r["whole_s"], r["setup_and_targets_s"]) == (3.0, 5.0, 50.0 - 40.0)
    assert r["run_share"] == pytest.approx((3.0 + 28 * 1.0 + 5.0 + 10.0) / (30 * 10.0))
    # 556 images evaluated, 64 with 2 probes, against 1,200 steps of 12 members
    assert r["floor_share"] == pytest.approx(876 / (1200 * (3 + 1 / 12)))


def test_the_measurement_share_script_runs_one_side(tmp_path):
    rows = _script("cpu_measure_share").main(["--profile", "smoke", "--images", "64",
                                              "--out", str(tmp_path / "share.jsonl")])
    (row,) = rows
    assert row["side"] == "after" and row["epochs"] == 3 and row["members"] == 5
    assert row["share"] == row["measure_s_per_epoch"] / row["train_s_per_epoch"]
    assert Path(row["lib"]) == ROOT
