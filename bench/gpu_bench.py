#!/usr/bin/env python3
"""One command for the side-by-side GPU benchmark: tinynet (train_bench_cuda) and PyTorch
(bench/pytorch_bench.py, eager) train the MNIST example's networks on the same batches on
one GPU, alternating, several repetitions. Prints a table of medians with ratios and
writes every figure and the machine description to a JSON file.

  python3 bench/gpu_bench.py --build-dir build/release --data-dir data [--reps 5] [--out gpu-bench.json]

By default each run times one epoch (938 batches of 64 for the example's network, 600 of
100 for LeNet) after 20 warm-up batches. The two sides differ in where the data set is:
tinynet gathers each batch on the CPU and uploads it from pinned memory inside the timed
loop (as the MNIST example trains); PyTorch holds the whole training set on the GPU and
indexes it there (its most favourable setting). --device cpu runs the same comparison on
the CPU, which checks this script on a machine without a GPU.
"""
import argparse
import json
import os
import platform
import statistics
import subprocess
import sys

EPOCH_BATCHES = {"net": 938, "lenet": 600}  # 60000 images in batches of 64 / 100

parser = argparse.ArgumentParser()
parser.add_argument("--build-dir", default="build/release")
parser.add_argument("--data-dir", default="data")
parser.add_argument("--reps", type=int, default=3)
parser.add_argument("--batches", type=int, default=0, help="timed batches per run (default: one epoch)")
parser.add_argument("--warmup", type=int, default=20)
parser.add_argument("--threads", type=int, default=2, help="CPU threads of each side")
parser.add_argument("--models", default="net,lenet")
parser.add_argument("--python", default=sys.executable, help="the Python that has PyTorch with CUDA")
parser.add_argument("--device", default="cuda", choices=["cuda", "cpu"])
parser.add_argument("--out", default="gpu-bench-results.json")
args = parser.parse_args()

here = os.path.dirname(os.path.abspath(__file__))
tinynet_bin = os.path.join(args.build_dir, "bench", "train_bench_cuda")
if not os.path.exists(tinynet_bin):
    sys.exit(f"{tinynet_bin} not found: configure with -DTINYNET_BUILD_BENCH=ON and nvcc (TINYNET_WITH_CUDA=ON), "
             "then build target train_bench_cuda")


def run(cmd):
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed with exit code {done.returncode}:\n{done.stderr.strip()}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def gpu_name():
    try:
        return subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"],
                              capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "none found (nvidia-smi)"


models = args.models.split(",")
results = {"machine": {"gpu": gpu_name(), "cores": os.cpu_count(), "platform": platform.platform()},
           "settings": vars(args), "runs": []}


def common(m):
    return ["--device", args.device, "--model", m, "--threads", str(args.threads),
            "--batches", str(args.batches or EPOCH_BATCHES[m]), "--warmup", str(args.warmup),
            "--data-dir", args.data_dir]


impls = {
    "tinynet": lambda m: [tinynet_bin, *common(m)],
    "pytorch": lambda m: [args.python, os.path.join(here, "pytorch_bench.py"), *common(m)],
}
for rep in range(args.reps):
    for m in models:
        for name, cmd in impls.items():  # alternate implementations within each repetition
            r = run(cmd(m))
            r["impl"], r["rep"] = name, rep
            results["runs"].append(r)
            print(f"  {name:8s} {m:6s} rep {rep}: {r['images_per_s']:8.0f} images/s on {r['device']}", file=sys.stderr)


def median(impl, model, key="images_per_s"):
    return statistics.median(r[key] for r in results["runs"] if r["impl"] == impl and r["model"] == model)


print(f"\nMedians of {args.reps} runs on {args.device} ({results['machine']['gpu']}), "
      f"{args.warmup} warm-up batches then {args.batches or 'one epoch of'} timed batches")
print(f"{'model':6s} {'tinynet img/s':>14s} {'PyTorch img/s':>14s} {'time ratio':>10s} "
      f"{'tinynet epoch s':>15s} {'PyTorch epoch s':>15s}")
table = []
for m in models:
    row = {"model": m, "tinynet_images_per_s": median("tinynet", m), "pytorch_images_per_s": median("pytorch", m),
           "tinynet_epoch_s": median("tinynet", m, "epoch_s"), "pytorch_epoch_s": median("pytorch", m, "epoch_s")}
    row["time_ratio"] = row["pytorch_images_per_s"] / row["tinynet_images_per_s"]
    table.append(row)
    print(f"{m:6s} {row['tinynet_images_per_s']:14.0f} {row['pytorch_images_per_s']:14.0f} {row['time_ratio']:10.2f} "
          f"{row['tinynet_epoch_s']:15.2f} {row['pytorch_epoch_s']:15.2f}")
print("time ratio = tinynet time / PyTorch time (< 1: tinynet is faster)")
results["table"] = table
with open(args.out, "w") as f:
    json.dump(results, f, indent=1)
print(f"wrote {args.out}")
