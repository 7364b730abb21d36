"""How far the pinned values move under other kernels: ``python tests/pin_spread.py [CONFIG ...]``
(a measuring tool, not a test; the tolerances in ``tests/pins.py`` cite what it printed).

Each configuration (``reduced_simd.CONFIGS``: thread counts, oneDNN off, MKL's and OpenBLAS's
other code paths, the SIMD dispatch lowered, ...) re-runs the tests marked ``stored_values``
with ``PINS_RECORD`` set, so that every comparison with a pinned value records its distance in
standard errors. It prints, per configuration, whether the tests passed and the largest
distance of any pin, then the largest distance per pin over all configurations, as JSON lines.
"""
from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import reduced_simd as R


def run(name: str, extra: list[str]) -> tuple[int, dict[tuple[str, int], float], float]:
    env = R.CONFIGS[name]()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "pins.jsonl"
        env["PINS_RECORD"] = str(path)
        t0 = time.perf_counter()
        code = subprocess.call([sys.executable, "-m", "pytest", "-q", "-m", R.MARK,
                                "-p", "no:cacheprovider", *R.WORKERS.get(name, ["-n", "2"]),
                                *extra], cwd=R.ROOT, env=env, stdout=subprocess.DEVNULL)
        seconds = time.perf_counter() - t0
        z: dict[tuple[str, int], float] = {}
        for line in path.read_text().splitlines() if path.exists() else []:
            r = json.loads(line)
            key = (r["test"], r["index"])
            z[key] = max(z.get(key, 0.0), r["z"])
    return code, z, seconds


def main(argv: list[str]) -> int:
    names = [a for a in argv if a in R.CONFIGS] or list(R.CONFIGS)
    extra = [a for a in argv if a not in R.CONFIGS]
    worst: dict[tuple[str, int], tuple[float, str]] = {}
    for name in names:
        code, z, seconds = run(name, extra)
        top = max(z.values(), default=0.0)
        print(json.dumps({"config": name, "pytest_exit": code, "pins": len(z),
                          "largest_z": top, "seconds": round(seconds)}), flush=True)
        for key, v in z.items():
            if v >= worst.get(key, (-1.0, ""))[0]:
                worst[key] = (v, name)
    for (test, index), (v, name) in sorted(worst.items(), key=lambda kv: -kv[1][0]):
        print(json.dumps({"test": test, "index": index, "largest_z": v, "config": name}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
