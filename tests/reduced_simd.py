"""Re-run the tests that depend on how this CPU's kernels round under other kernels, lowered and
sideways (issues 29 and 44): ``python tests/reduced_simd.py [--configs reduced,other] [pytest
args]``, a step of ``.ci/run``. The tests are those marked ``stored_values`` (compared with
numbers stored in the repository) or ``kernels`` (two computations equal only up to rounding,
e.g. a lockstep group and its members' separate runs).

Such a test must not depend on the bits of the CPU it was written on. Two configurations change
those bits on this machine, so that a test that still depends on them fails here, on every
machine, and not first on another CPU's:

``reduced``: every library's dispatch lowered to the x86-64 baseline (what an older CPU runs):

- torch's ATen kernels: ``ATEN_CPU_CAPABILITY=default``; oneDNN: ``ONEDNN_MAX_CPU_ISA=SSE41``;
  MKL (torch's BLAS): ``MKL_ENABLE_INSTRUCTIONS=SSE4_2``;
- numpy's dispatched loops: ``NPY_DISABLE_CPU_FEATURES`` with every dispatched feature group this
  CPU has (numpy refuses to disable its baseline or what the CPU lacks);
- OpenBLAS (numpy's and scipy's BLAS): ``OPENBLAS_CORETYPE=Nehalem`` (SSE4.2 kernels).

``other``: this CPU's highest dispatch (numpy's and torch's own), with other kernels in place of
the defaults, as a CPU with more features (an AVX-512 Intel Xeon) runs other ones, not lower ones:

- torch on two threads per test process (a pytest-xdist worker runs on one), oneDNN off
  (torch's own convolutions: issue 44's lockstep failure shows under it), MKL's reproducible
  path ``MKL_CBWR=COMPATIBLE``;
- OpenBLAS's ``Sandybridge`` kernels (AVX without FMA: other roundings than FMA kernels);
- elementary functions (``exp``, ``log``, ``tanh``, ...) of numpy and torch rounded to the
  neighbouring float for about half of their results, as AVX-512's SVML / Sleef loops round
  some (``tests/ulp_jitter.py``): no library setting changes them on an AVX2 CPU.

Before running, a child process started with each environment must report it in force; the
switches that ``tests/conftest.py`` applies (threads, oneDNN, the rounding) are checked inside
the step by a test marked ``kernels`` (``test_reduced_simd.py::test_the_kernel_switches_are_in_force``).
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Callable

ROOT = Path(__file__).resolve().parents[1]
MARK = "stored_values or kernels"
FIXED = {"ATEN_CPU_CAPABILITY": "default", "ONEDNN_MAX_CPU_ISA": "SSE41",
         "MKL_ENABLE_INSTRUCTIONS": "SSE4_2", "OPENBLAS_CORETYPE": "Nehalem"}
#: Every variable a configuration below may set (cleared first, so that each starts native).
KNOBS = (*FIXED, "NPY_DISABLE_CPU_FEATURES", "MKL_CBWR", "OPENBLAS_NUM_THREADS",
         "DSM_TEST_TORCH_THREADS", "DSM_TEST_MKLDNN", "OMP_WAIT_POLICY", "NUMBA_CPU_NAME", "DSM_TEST_ULP")

PROBE = """
import json, numpy, torch, threadpoolctl, scipy.linalg
try:
    from numpy._core._multiarray_umath import __cpu_dispatch__ as dispatch, __cpu_features__ as has
except ImportError:  # numpy < 2
    from numpy.core._multiarray_umath import __cpu_dispatch__ as dispatch, __cpu_features__ as has
print(json.dumps({"torch": torch.backends.cpu.get_cpu_capability(),
                  "numpy": [f for f in dispatch if has.get(f)],
                  "openblas": sorted({i.get("architecture") for i in threadpoolctl.threadpool_info()
                                      if i.get("internal_api") == "openblas"})}))
"""


def probe(env: dict[str, str]) -> dict:
    out = subprocess.run([sys.executable, "-c", PROBE], env=env, capture_output=True, text=True,
                         check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def native_env(base: dict[str, str] | None = None) -> dict[str, str]:
    """``base`` (the current environment by default) with none of the knobs below set."""
    env = dict(os.environ if base is None else base)
    for key in KNOBS:
        env.pop(key, None)
    return env


def reduced_env(base: dict[str, str] | None = None) -> dict[str, str]:
    """``base`` (the current environment by default) with every dispatch lowered."""
    env = native_env(base)
    env.update(FIXED)
    native = probe({k: v for k, v in env.items() if k not in FIXED})
    if native["numpy"]:
        env["NPY_DISABLE_CPU_FEATURES"] = " ".join(native["numpy"])
    return env


def _with(**knobs: str) -> Callable[[], dict[str, str]]:
    return lambda: native_env() | knobs


#: Named kernel configurations: ``reduced`` (every dispatch lowered) and ``other`` (this
#: CPU's highest dispatch, other kernels) are the two steps of .ci/run; the rest, one knob
#: each, are for measuring how far pinned values move (``tests/pin_spread.py``).
CONFIGS: dict[str, Callable[[], dict[str, str]]] = {
    "native": native_env,
    "reduced": reduced_env,
    "other": _with(DSM_TEST_MKLDNN="0", MKL_CBWR="COMPATIBLE", OPENBLAS_CORETYPE="Sandybridge",
                   DSM_TEST_TORCH_THREADS="2", OMP_WAIT_POLICY="PASSIVE", DSM_TEST_ULP="1"),
    "torch-2-threads": _with(DSM_TEST_TORCH_THREADS="2"),
    "mkldnn-off": _with(DSM_TEST_MKLDNN="0"),
    "aten-default": _with(ATEN_CPU_CAPABILITY="default"),
    "onednn-avx": _with(ONEDNN_MAX_CPU_ISA="AVX"),
    "mkl-compatible": _with(MKL_CBWR="COMPATIBLE"),
    "mkl-avx": _with(MKL_CBWR="AVX"),
    "openblas-sandybridge": _with(OPENBLAS_CORETYPE="Sandybridge"),
    "openblas-nehalem": _with(OPENBLAS_CORETYPE="Nehalem"),
    "openblas-1-thread": _with(OPENBLAS_NUM_THREADS="1"),
    "numpy-lowered": lambda: native_env() | {
        k: v for k, v in reduced_env().items() if k == "NPY_DISABLE_CPU_FEATURES"},
    "numba-generic": _with(NUMBA_CPU_NAME="generic"),
    "ulp": _with(DSM_TEST_ULP="1"),
}
#: pytest-xdist workers per configuration (default ``-n 2``): two torch threads in one worker.
WORKERS = {"torch-2-threads": ["-n", "1"]}


def not_in_force(state: dict) -> list[str]:
    """What the probe says did not take (empty when the reduction is in force)."""
    bad = []
    if state["torch"] != "DEFAULT":
        bad.append(f"torch's CPU capability is {state['torch']}, not DEFAULT")
    if state["numpy"]:
        bad.append(f"numpy still dispatches {', '.join(state['numpy'])}")
    if any(a != "Nehalem" for a in state["openblas"]):
        bad.append(f"OpenBLAS runs {', '.join(map(str, state['openblas']))} kernels, not Nehalem")
    return bad


def not_in_force_other(state: dict, native: dict) -> list[str]:
    """What did not take of ``other`` (``native``: the probe without any knob)."""
    bad = []
    if state["torch"] != native["torch"]:
        bad.append(f"torch's CPU capability is {state['torch']}, not this CPU's {native['torch']}")
    if state["numpy"] != native["numpy"]:
        bad.append(f"numpy dispatches {state['numpy']}, not this CPU's {native['numpy']}")
    if any(a != "Sandybridge" for a in state["openblas"]):
        bad.append(f"OpenBLAS runs {', '.join(map(str, state['openblas']))} kernels, "
                   "not Sandybridge")
    return bad


#: The configurations of the step, with the check that each took.
STEPS: dict[str, Callable[[dict, dict], list[str]]] = {
    "reduced": lambda state, native: not_in_force(state),
    "other": not_in_force_other,
}


def main(argv: list[str]) -> int:
    names = list(STEPS)
    if argv[:1] == ["--configs"]:
        names, argv = argv[1].split(","), argv[2:]
    native = probe(native_env())
    worst = 0
    for name in names:
        env = CONFIGS[name]()
        bad = STEPS[name](probe(env), native)
        if bad:
            print(f"kernel step {name}: the configuration did not take: " + "; ".join(bad),
                  file=sys.stderr)
            return 2
        shown = {k: env[k] for k in KNOBS if k in env}
        print(f"kernel step {name}: " + " ".join(f"{k}={v!r}" for k, v in shown.items()),
              flush=True)
        t0 = time.perf_counter()
        code = subprocess.call([sys.executable, "-m", "pytest", "-m", MARK, "-p",
                                "no:cacheprovider", *argv],
                               cwd=ROOT, env=env)
        print(f"kernel step {name}: {time.perf_counter() - t0:.0f} s, pytest exit status {code}",
              flush=True)
        worst = worst or code
    return worst


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
