"""Re-run the tests that compare with stored values with the CPU's SIMD dispatch lowered
(issue 29): ``python tests/reduced_simd.py [pytest args]``, a step of ``.ci/run``.

A test that compares a number computed here with one stored in the repository must not depend
on the bits of the CPU that stored it. Lowering every library's dispatch to the x86-64 baseline
changes those bits on this machine, so a test that still depends on them fails here on every
machine, not only on another CPU's:

- torch's ATen kernels: ``ATEN_CPU_CAPABILITY=default``; oneDNN: ``ONEDNN_MAX_CPU_ISA=SSE41``;
  MKL (torch's BLAS): ``MKL_ENABLE_INSTRUCTIONS=SSE4_2``;
- numpy's dispatched loops: ``NPY_DISABLE_CPU_FEATURES`` with every dispatched feature group this
  CPU has (numpy refuses to disable its baseline or what the CPU lacks);
- OpenBLAS (numpy's and scipy's BLAS): ``OPENBLAS_CORETYPE=Nehalem`` (SSE4.2 kernels).

Before running, a child process started with that environment must report it in force (torch's
capability ``DEFAULT``, no dispatched numpy feature, OpenBLAS's core ``Nehalem``); otherwise the
step fails, naming what did not take.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MARK = "stored_values"
FIXED = {"ATEN_CPU_CAPABILITY": "default", "ONEDNN_MAX_CPU_ISA": "SSE41",
         "MKL_ENABLE_INSTRUCTIONS": "SSE4_2", "OPENBLAS_CORETYPE": "Nehalem"}

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


def reduced_env(base: dict[str, str] | None = None) -> dict[str, str]:
    """``base`` (the current environment by default) with every dispatch lowered."""
    env = dict(os.environ if base is None else base)
    for key in ("NPY_DISABLE_CPU_FEATURES", *FIXED):
        env.pop(key, None)
    env.update(FIXED)
    native = probe({k: v for k, v in env.items() if k not in FIXED})
    if native["numpy"]:
        env["NPY_DISABLE_CPU_FEATURES"] = " ".join(native["numpy"])
    return env


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


def main(argv: list[str]) -> int:
    env = reduced_env()
    bad = not_in_force(probe(env))
    if bad:
        print("reduced-SIMD step: the reduction did not take: " + "; ".join(bad), file=sys.stderr)
        return 2
    shown = {k: env[k] for k in (*FIXED, "NPY_DISABLE_CPU_FEATURES") if k in env}
    print("reduced-SIMD step: " + " ".join(f"{k}={v!r}" for k, v in shown.items()), flush=True)
    t0 = time.perf_counter()
    code = subprocess.call([sys.executable, "-m", "pytest", "-m", MARK, "-p", "no:cacheprovider",
                            *argv], cwd=ROOT, env=env)
    print(f"reduced-SIMD step: {time.perf_counter() - t0:.0f} s, pytest exit status {code}",
          flush=True)
    return code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
