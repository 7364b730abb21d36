"""The kernel steps of ``.ci/run`` (``tests/reduced_simd.py``): each configuration's environment
takes effect, it changes the bits of real computations (so a test that depends on one CPU's bits
fails under it) and nothing more, and a step refuses to run when its configuration does not take.
Also the pieces the ``other`` configuration is made of: the switches ``tests/conftest.py``
applies, the one-ulp rounding of ``tests/ulp_jitter.py``, and the recorder of ``tests/pins.py``
that ``tests/pin_spread.py`` measures with."""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import numpy as np
import pytest

import reduced_simd as R

#: A float64 matrix product (OpenBLAS), a float32 exp (numpy's dispatched loops) and float64
#: matrix products in torch (MKL), bit for bit.
BITS = """
import hashlib, json, numpy as np, torch
r = np.random.default_rng(0)
A, B = r.standard_normal((200, 200)), r.standard_normal((200, 200))
x = r.standard_normal(10_001).astype(np.float32)
tA, tB = torch.from_numpy(A), torch.from_numpy(B)
print(json.dumps({"gemm": (A @ B).tolist(), "exp32": np.exp(x).astype(float).tolist(),
                  "torch_mm": (tA @ tB).tolist()}))
"""


def _run(code: str, env: dict[str, str]) -> dict:
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         check=True, timeout=300)
    return json.loads(out.stdout)


@pytest.fixture(scope="module")
def env():
    return R.reduced_env()


@pytest.fixture(scope="module")
def native():
    return R.native_env()


@pytest.fixture(scope="module")
def native_state(native):
    return R.probe(native)


@pytest.fixture(scope="module")
def native_bits(native):
    return _run(BITS, native)


def test_the_reduction_is_in_force(env):
    state = R.probe(env)
    assert R.not_in_force(state) == [], state
    assert env["ATEN_CPU_CAPABILITY"] == "default" and env["OPENBLAS_CORETYPE"] == "Nehalem"


def test_the_other_configuration_is_in_force(native_state):
    state = R.probe(R.CONFIGS["other"]())
    assert R.not_in_force_other(state, native_state) == [], state


def test_the_reduction_changes_bits_and_nothing_more(env, native_state, native_bits):
    """Where this CPU dispatches more than the baseline, some bits differ under the reduction
    (so a bit-for-bit pin fails on every machine), yet every value agrees to a few units in its
    last place: 1e-12 (relative, or absolute for entries near 0: each is a sum of 200 products
    of order 1) in float64, 1e-6 relative in float32 (one ulp is 1.2e-7)."""
    if not native_state["numpy"] and set(native_state["openblas"]) <= {"Nehalem", None}:
        pytest.skip("this CPU dispatches nothing beyond the baseline")
    here, reduced = native_bits, _run(BITS, env)
    assert here != reduced
    for key, rtol, atol in (("gemm", 1e-12, 1e-12), ("exp32", 1e-6, 0.0),
                            ("torch_mm", 1e-12, 1e-12)):
        np.testing.assert_allclose(reduced[key], here[key], rtol=rtol, atol=atol, err_msg=key)


def test_the_other_configuration_changes_bits_and_nothing_more(native_bits):
    """``other`` keeps numpy's dispatch (the float32 exp bit for bit) and moves both BLAS
    libraries' products (OpenBLAS without FMA, MKL's compatible path) by rounding alone."""
    here, other = native_bits, _run(BITS, R.CONFIGS["other"]())
    assert other["exp32"] == here["exp32"]
    for key in ("gemm", "torch_mm"):
        assert other[key] != here[key], key
        np.testing.assert_allclose(other[key], here[key], rtol=1e-12, atol=1e-12, err_msg=key)


@pytest.mark.parametrize("state, says", [
    ({"torch": "AVX2", "numpy": [], "openblas": ["Nehalem"]}, "torch's CPU capability is AVX2"),
    ({"torch": "DEFAULT", "numpy": ["X86_V3"], "openblas": ["Nehalem"]},
     "numpy still dispatches X86_V3"),
    ({"torch": "DEFAULT", "numpy": [], "openblas": ["Nehalem", "Haswell"]},
     "OpenBLAS runs Nehalem, Haswell kernels"),
])
def test_a_reduction_that_did_not_take_is_named(state, says):
    assert [says in line for line in R.not_in_force(state)] == [True]
    assert R.not_in_force({"torch": "DEFAULT", "numpy": [], "openblas": ["Nehalem"]}) == []


@pytest.mark.parametrize("state, says", [
    ({"torch": "DEFAULT", "numpy": ["X86_V3"], "openblas": ["Sandybridge"]},
     "torch's CPU capability is DEFAULT, not this CPU's AVX2"),
    ({"torch": "AVX2", "numpy": [], "openblas": ["Sandybridge"]}, "numpy dispatches []"),
    ({"torch": "AVX2", "numpy": ["X86_V3"], "openblas": ["Haswell"]},
     "OpenBLAS runs Haswell kernels, not Sandybridge"),
])
def test_another_configuration_that_did_not_take_is_named(state, says):
    native = {"torch": "AVX2", "numpy": ["X86_V3"], "openblas": ["Haswell"]}
    assert [says in line for line in R.not_in_force_other(state, native)] == [True]
    assert R.not_in_force_other({**native, "openblas": ["Sandybridge"]}, native) == []


def test_the_step_runs_only_the_marked_tests():
    """``reduced_simd.py`` passes ``-m "stored_values or kernels"`` to pytest: a dry collection
    lists the pinned tests of every chapter whose Monte Carlo values are pinned, the lockstep
    comparisons and the switch check, and little else."""
    out = subprocess.run([sys.executable, "-m", "pytest", "-m", R.MARK, "--collect-only", "-q",
                          "-p", "no:cacheprovider", "-n", "0"], cwd=R.ROOT, capture_output=True,
                         text=True, timeout=600)
    ids = [line for line in out.stdout.splitlines() if "::" in line]
    files = {i.split("::")[0] for i in ids}
    # The marked files exactly: a test marked by mistake elsewhere would make the step re-run it
    # under every reduction. Their count grows with what is pinned (52 when the tiny grid's
    # records were pinned), so the step's reach is held by file, not by a count.
    assert files == {
        "tests/chapters/test_ols.py", "tests/chapters/test_ols_exact.py",
        "tests/chapters/test_prop1_noise.py", "tests/chapters/test_prop2_convergence.py",
        "tests/chapters/test_prop3_regularizer.py", "tests/chapters/test_remark3_barrier.py",
        "tests/chapters/test_remark3_valley.py", "tests/models/test_lockstep.py",
        "tests/models/test_tiny_run_records.py", "tests/test_gpu_run_analysis.py",
        "tests/test_reduced_simd.py"}, sorted(files)
    summary = re.search(r"(\d+)/(\d+) tests collected", out.stdout)
    assert summary and int(summary[1]) == len(ids) < int(summary[2]) / 10, out.stdout[-300:]
    assert [i for i in ids if i.startswith("tests/test_reduced_simd.py")] == [
        "tests/test_reduced_simd.py::test_the_kernel_switches_are_in_force"]


@pytest.mark.kernels
def test_the_kernel_switches_are_in_force():
    """What ``tests/conftest.py`` applies from the environment is in force inside a test: torch's
    threads, oneDNN off, the one-ulp rounding (each step runs this test; so does ``make test``,
    with none of them set)."""
    import torch
    import ulp_jitter
    threads = os.environ.get("DSM_TEST_TORCH_THREADS")
    workers = os.environ.get("PYTEST_XDIST_WORKER_COUNT")
    if threads:
        assert torch.get_num_threads() == int(threads)
    elif workers:
        assert torch.get_num_threads() == max(1, (os.cpu_count() or 1) // int(workers))
    assert torch.backends.mkldnn.enabled is (os.environ.get("DSM_TEST_MKLDNN") != "0")
    wrapped = hasattr(np.exp, "__wrapped__") and hasattr(torch.tanh, "__wrapped__")
    assert wrapped is (os.environ.get("DSM_TEST_ULP") == "1")
    assert ulp_jitter.NAMES and all(hasattr(np, n) for n in ulp_jitter.NAMES)


def test_ulp_jitter_moves_about_half_of_the_results_by_one_ulp_and_keeps_gradients():
    import torch
    import ulp_jitter
    x = np.linspace(-3.0, 3.0, 20_001)
    t = torch.linspace(-2.0, 2.0, 101, dtype=torch.float64, requires_grad=True)
    plain = {"exp64": np.exp(x), "exp32": np.exp(x.astype(np.float32)),
             "tanh": torch.tanh(t.detach()).numpy(), "method": t.detach().tanh().numpy()}
    undo = ulp_jitter.install()
    try:
        moved = {"exp64": np.exp(x), "exp32": np.exp(x.astype(np.float32)),
                 "tanh": torch.tanh(t.detach()).numpy(), "method": t.detach().tanh().numpy()}
        again = np.exp(x)
        out = np.empty_like(x)
        np.log(np.abs(x) + 1, out=out)
        torch.tanh(t).sum().backward()
        zero = (float(np.exp(-np.inf)), float(np.tanh(0.0)), float(np.exp(np.inf)))
    finally:
        undo()
    assert not hasattr(np.exp, "__wrapped__") and not hasattr(torch.tanh, "__wrapped__")
    np.testing.assert_array_equal(again, moved["exp64"])      # the same input, the same output
    for key, y in moved.items():
        ulps = np.abs(y - plain[key]) / np.spacing(np.abs(plain[key]).astype(plain[key].dtype))
        assert set(np.unique(ulps)) <= {0.0, 1.0}, key
        assert 0.4 < np.mean(ulps == 1) < 0.6, key
    assert np.mean(out != np.log(np.abs(x) + 1)) > 0.4          # ``out=`` is rounded too
    torch.testing.assert_close(t.grad, 1 - torch.tanh(t.detach()) ** 2, rtol=1e-15, atol=1e-15)
    assert zero == (0.0, 0.0, np.inf)                           # exact results stay exact


def test_pins_record_their_distance_in_standard_errors(tmp_path, monkeypatch):
    """With ``PINS_RECORD`` set, each comparison with a pinned value (``tests/pins.py``) appends
    the test, its index and its distance in SEs; it still passes or fails as it would."""
    import pins
    path = tmp_path / "pins.jsonl"
    monkeypatch.setenv(pins.RECORD, str(path))
    assert 1.0 + 5e-4 == pins.near(1.0, 1.0)
    assert [2.0, 3.0] == pins.near([2.0, 3.0 - 2e-4], 1.0)
    assert not 1.0 + 2e-3 == pins.near(1.0, 1.0)
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    assert [r["index"] for r in rows] == [0, 1, 2]
    assert [r["z"] for r in rows] == pytest.approx([5e-4, 2e-4, 2e-3])
    assert rows[0]["test"].endswith("::test_pins_record_their_distance_in_standard_errors")
