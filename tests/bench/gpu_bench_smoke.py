#!/usr/bin/env python3
"""bench/gpu_bench.py end to end on the CPU (--device cpu), so the GPU benchmark's driver is
known to work before a GPU machine is used: one repetition of 2 LeNet batches on each side, and
its JSON file holds both sides' runs and the table.

  gpu_bench_smoke.py BUILD_DIR DATA_DIR PYTHON_WITH_TORCH WORK_DIR
"""
import json
import os
import subprocess
import sys

build_dir, data_dir, python, work = sys.argv[1:5]
if subprocess.run([python, "-c", "import torch"], capture_output=True).returncode != 0:
    print(f"SKIP: {python} has no torch (Debian: python3-torch)")
    sys.exit(0)
os.makedirs(work, exist_ok=True)
out = os.path.join(work, "gpu-bench.json")
script = os.path.join(os.path.dirname(__file__), "..", "..", "bench", "gpu_bench.py")
cmd = [python, script, "--device", "cpu", "--build-dir", build_dir, "--data-dir", data_dir, "--python", python,
       "--reps", "1", "--batches", "2", "--warmup", "1", "--models", "lenet", "--out", out]
done = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
print(f"$ {' '.join(cmd)}\nexit {done.returncode}\n{done.stdout}{done.stderr}")
if done.returncode != 0:
    sys.exit(f"FAIL: exit code {done.returncode}")
with open(out) as f:
    results = json.load(f)
impls = sorted(r["impl"] for r in results["runs"])
if impls != ["pytorch", "tinynet"] or any(r["device"] != "cpu" or r["batches"] != 2 for r in results["runs"]):
    sys.exit(f"FAIL: expected one 2-batch CPU run per side, got {results['runs']}")
row = results["table"][0]
if row["model"] != "lenet" or not row["time_ratio"] > 0 or "lenet" not in done.stdout:
    sys.exit(f"FAIL: no table row for lenet: {results['table']}")
print(f"OK: both sides ran, time ratio {row['time_ratio']:.2f}")
