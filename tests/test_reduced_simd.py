"""The reduced-SIMD step of ``.ci/run`` (``tests/reduced_simd.py``): its environment takes effect,
it changes the bits of real computations (so a test that depends on one CPU's bits fails under
it), and it refuses to run when the reduction does not take."""
from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

import reduced_simd as R

#: A float64 matrix product (OpenBLAS) and a float32 exp (numpy's dispatched loops), bit for bit.
BITS = """
import hashlib, json, numpy as np
r = np.random.default_rng(0)
A, B = r.standard_normal((200, 200)), r.standard_normal((200, 200))
x = r.standard_normal(10_001).astype(np.float32)
print(json.dumps({"gemm": (A @ B).tolist(), "exp32": np.exp(x).astype(float).tolist()}))
"""


def _run(code: str, env: dict[str, str]) -> dict:
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         check=True, timeout=300)
    return json.loads(out.stdout)


@pytest.fixture(scope="module")
def env():
    return R.reduced_env()


def test_the_reduction_is_in_force(env):
    state = R.probe(env)
    assert R.not_in_force(state) == [], state
    assert env["ATEN_CPU_CAPABILITY"] == "default" and env["OPENBLAS_CORETYPE"] == "Nehalem"


def test_the_reduction_changes_bits_and_nothing_more(env):
    """Where this CPU dispatches more than the baseline, some bits differ under the reduction
    (so a bit-for-bit pin fails on every machine), yet every value agrees to a few units in its
    last place: 1e-12 (relative, or absolute for entries near 0: each is a sum of 200 products
    of order 1) in float64, 1e-6 relative in float32 (one ulp is 1.2e-7)."""
    native_state = R.probe({k: v for k, v in env.items()
                            if k not in (*R.FIXED, "NPY_DISABLE_CPU_FEATURES")})
    if not native_state["numpy"] and set(native_state["openblas"]) <= {"Nehalem", None}:
        pytest.skip("this CPU dispatches nothing beyond the baseline")
    native = _run(BITS, {k: v for k, v in env.items()
                         if k not in (*R.FIXED, "NPY_DISABLE_CPU_FEATURES")})
    reduced = _run(BITS, env)
    assert native != reduced
    for key, rtol, atol in (("gemm", 1e-12, 1e-12), ("exp32", 1e-6, 0.0)):
        np.testing.assert_allclose(reduced[key], native[key], rtol=rtol, atol=atol, err_msg=key)


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


def test_the_step_runs_only_the_marked_tests(tmp_path):
    """``reduced_simd.py`` passes ``-m stored_values`` to pytest: a dry collection lists the
    pinned tests of every chapter whose Monte Carlo values are pinned, and little else."""
    out = subprocess.run([sys.executable, "-m", "pytest", "-m", R.MARK, "--collect-only", "-q",
                          "-p", "no:cacheprovider", "-n", "0"], cwd=R.ROOT, capture_output=True,
                         text=True, timeout=600)
    ids = [line for line in out.stdout.splitlines() if "::" in line]
    assert 10 <= len(ids) <= 40, ids
    files = {i.split("::")[0] for i in ids}
    assert {"tests/chapters/test_prop2_convergence.py", "tests/chapters/test_ols.py",
            "tests/chapters/test_prop1_noise.py", "tests/chapters/test_ols_exact.py"} <= files
