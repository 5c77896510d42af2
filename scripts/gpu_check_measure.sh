#!/usr/bin/env bash
# Check `interfpred measure` on a real GPU: eight workloads' solo windows, every pair and self pair
# under streams, and an Nsight Compute profile of each, then `interfpred fit` on the result alone.
# Everything is written under $OUT (default ./gpu_check); the whole script stays under 10 minutes.
#
#   OUT=/some/folder bash scripts/gpu_check_measure.sh
#
# Needs, on the GPU machine: python3 with torch (CUDA) and torchvision, interfpred's dependencies
# (numpy, scipy, scikit-learn, river, numba, pydantic), and ncu on PATH for the profiles.
set -u
cd "$(dirname "$0")/.."
OUT=${OUT:-gpu_check}
mkdir -p "$OUT"
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
PY=${PYTHON:-python3}
W=examples/measure_workloads.py

{
  date -u
  nvidia-smi
  nvidia-smi -L
  nvidia-smi --query-gpu=name,mig.mode.current,compute_mode,clocks.sm,clocks.max.sm --format=csv
  command -v ncu && ncu --version
  ls -l /tmp/nvidia-mps 2>&1 | head -3
  $PY -c 'import torch, torchvision; print("torch", torch.__version__, "torchvision", torchvision.__version__, torch.cuda.get_device_name(0))'
  $PY -c 'import numpy, scipy, sklearn, river, numba, pydantic; print("interfpred dependencies present")'
} > "$OUT/env.txt" 2>&1

T0=$SECONDS
timeout 360 $PY -m interfpred measure \
  --workload resnet50:8 --workload resnet50:64 --workload vit_b_16:16 --workload mobilenet_v3_large:32 \
  --workload $W:bert_base:8 --workload $W:llm_decode:8 --workload $W:triad:1:fp32 --workload $W:gemm:1:bf16 \
  --ncu-timeout-s 30 --out "$OUT/campaign" > "$OUT/measure.out" 2> "$OUT/measure.err"
RC=$?
echo "measure: status $RC after $((SECONDS - T0)) s" | tee -a "$OUT/summary.txt"
if [ "$RC" -ne 0 ] && [ -f "$OUT/campaign/campaign.json" ]; then
  # stopped by the time limit: finish the windows it holds without the profiles (what resuming is for)
  timeout 90 $PY -m interfpred measure \
    --workload resnet50:8 --workload resnet50:64 --workload vit_b_16:16 --workload mobilenet_v3_large:32 \
    --workload $W:bert_base:8 --workload $W:llm_decode:8 --workload $W:triad:1:fp32 --workload $W:gemm:1:bf16 \
    --ncu-timeout-s 30 --no-profiles --resume --out "$OUT/campaign" >> "$OUT/measure.out" 2>> "$OUT/measure.err"
  echo "resume: status $? after $((SECONDS - T0)) s" | tee -a "$OUT/summary.txt"
fi
tail -n 30 "$OUT/measure.err" >> "$OUT/summary.txt"

if [ -f "$OUT/campaign/measurements.csv" ]; then
  timeout 90 $PY -m interfpred fit --measurements "$OUT/campaign/measurements.csv" --out "$OUT/model.json" \
    > "$OUT/fit.txt" 2>&1
  echo "fit (measurements alone): status $?" | tee -a "$OUT/summary.txt"
  timeout 60 $PY - "$OUT/campaign" >> "$OUT/summary.txt" 2>&1 <<'EOF'
import csv, statistics, sys
folder = sys.argv[1]
rows = list(csv.DictReader(open(f"{folder}/measurements.csv")))
sd = [float(r["observed_ms"]) / float(r["solo_ms"]) for r in rows]
ev = [float(r["exec_ms"]) / float(r["solo_exec_ms"]) for r in rows]
print(f"{len(rows)} rows; throughput slowdown {min(sd):.2f}-{max(sd):.2f} (median {statistics.median(sd):.2f}); "
      f"event slowdown median {statistics.median(ev):.2f}; eager members {sum(r['graph'] == '0' for r in rows)}")
for r in csv.DictReader(open(f"{folder}/solo.csv")):
    print(f"solo {r['model']}:{r['batch_size']} {float(r['solo_ms']):.3f} ms spread {r['spread_pct']} % "
          f"events {float(r['exec_ms']):.3f} ms graph {r['graph']}")
EOF
fi
echo "total $((SECONDS - T0)) s" | tee -a "$OUT/summary.txt"
