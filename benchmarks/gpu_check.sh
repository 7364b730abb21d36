#!/usr/bin/env bash
# GPU checks owed by the Section 5 chapter (issue 10), as one prepared script.
#
#   bash benchmarks/gpu_check.sh [tests] [bench] [profile]     (default: all three)
#
# Run from the repository root on a machine with one CUDA GPU. Results go to $OUT (or
# ./gpu_check_out): device.txt, tests.txt, bench_gpu.jsonl, gpu_profile.txt and the gpu profile's
# claims (sec5_distillation.json) and executed notebook. Rough times on an H100: tests 1-2 min,
# bench 2-4 min (two torch.compile warm-ups), profile 4-6 min; each step has its own timeout.
#   tests   -- the chapter's torch tests on CUDA (the `device` fixture adds CUDA cases):
#              data on the GPU, augmentation there, noise draws, an interrupted run resumed
#              (deterministic kernels) equal to an uninterrupted one, bf16 autocast paths.
#   bench   -- ResNet-56 training throughput on CIFAR-shaped tensors: the GPU-resident pipeline
#              (bf16, channels-last, on-device crops/flips) vs a plain DataLoader loop, in one run;
#              goal >= 15,000 images/s on an H100.
#   profile -- `python -m dsmlib execute sec5_distillation --profile gpu` end to end (ResNet-56
#              on digits upsampled to 32x32, no download), with its wall time.
set -u
OUT=${OUT:-gpu_check_out}
mkdir -p "$OUT"
PY=${PY:-python}
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
steps=${*:-tests bench profile}
{ nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv;
  $PY -c "import torch; print('torch', torch.__version__, 'cuda', torch.version.cuda, torch.cuda.get_device_name(0))"; } \
  2>&1 | tee "$OUT/device.txt"
for step in $steps; do
  case $step in
    tests)
      timeout 420 $PY -m pytest -q -p no:cacheprovider tests/models/test_distill_datasets.py \
        tests/models/test_distill_training.py tests/models/test_distill_runs.py -k cuda 2>&1 \
        | tail -25 | tee "$OUT/tests.txt" ;;
    bench)
      timeout 480 $PY benchmarks/bench_distill.py --gpu --no-cpu --threads 0 2>&1 | tee "$OUT/bench_gpu.jsonl" ;;
    profile)
      start=$(date +%s)
      timeout 560 $PY -m dsmlib execute sec5_distillation --profile gpu --no-progress \
        > "$OUT/gpu_profile.txt" 2>&1
      rc=$?
      echo "exit $rc, wall $(( $(date +%s) - start )) s" | tee -a "$OUT/gpu_profile.txt"
      cp results/gpu/sec5_distillation.json book/chapters/sec5_distillation.ipynb "$OUT/" 2>/dev/null
      $PY - <<'PY' 2>&1 | tee -a "$OUT/gpu_profile.txt"
import json
doc = json.load(open("results/gpu/sec5_distillation.json"))
for c in doc["claims"]:
    print(f"{c['id']}: {c['verdict']} {c['measured']:.4g} [{c['interval'][0]:.4g}, {c['interval'][1]:.4g}]")
PY
      ;;
    *) echo "unknown step $step (tests | bench | profile)"; exit 2 ;;
  esac
done
