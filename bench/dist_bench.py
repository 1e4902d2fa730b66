#!/usr/bin/env python3
"""Data-parallel figures on this machine:
  1. all-reduce of the MNIST example's gradient size, tinynet's GlooGroup vs Gloo directly
     (bench/dist_bench, 2 ranks on loopback): medians and tinynet's overhead as a ratio;
  2. training throughput of the MNIST example at world size 1 (one process, --threads C)
     vs world size 2 (two ranks, C/2 threads each): the same total core count C.

  python3 bench/dist_bench.py --build-dir build/release --data-dir ../shared/data [--batches 100]
"""
import argparse
import json
import os
import re
import socket
import subprocess
import sys

parser = argparse.ArgumentParser()
parser.add_argument("--build-dir", default="build/release")
parser.add_argument("--data-dir", default="data")
parser.add_argument("--batches", type=int, default=100, help="training batches per rank")
parser.add_argument("--cores", type=int, default=2)
parser.add_argument("--reps", type=int, default=30)
args = parser.parse_args()

bench = os.path.join(args.build_dir, "bench", "dist_bench")
mnist = os.path.join(args.build_dir, "examples", "mnist", "mnist")
for f in (bench, mnist):
    if not os.path.exists(f):
        sys.exit(f"{f} not found: configure with -DTINYNET_BUILD_BENCH=ON and build dist_bench and mnist")


def free_port():
    with socket.socket() as s:
        s.bind(("", 0))
        return s.getsockname()[1]


def ranks(cmd, world, threads):
    port = free_port()
    procs = [subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                              env=dict(os.environ, RANK=str(r), WORLD_SIZE=str(world), MASTER_ADDR="127.0.0.1",
                                       MASTER_PORT=str(port), OMP_NUM_THREADS=str(threads)))
             for r in range(world)]
    outs = [p.communicate(timeout=1200) for p in procs]
    for p, (o, e) in zip(procs, outs):
        if p.returncode != 0:
            sys.exit(f"{cmd[0]} failed ({p.returncode}):\n{o}\n{e}")
    return outs


result = {}
out, _ = ranks([bench, "--reps", str(args.reps)], 2, 1)[0]
result["allreduce"] = json.loads(out.strip().splitlines()[-1])

train = [mnist, "--data-dir", args.data_dir, "--epochs", "1", "--limit-train-batches", str(args.batches),
         "--log-interval", "1000000"]
images_s = lambda err: sum(float(x) for x in re.findall(r"\(([0-9.]+) images/s\)", err))
ws1 = subprocess.run(train + ["--threads", str(args.cores)], capture_output=True, text=True, check=True,
                     env={k: v for k, v in os.environ.items() if k not in ("WORLD_SIZE", "RANK")})
result["ws1_images_per_s"] = images_s(ws1.stderr)
outs = ranks(train, 2, args.cores // 2)
result["ws2_images_per_s"] = sum(images_s(e) for _, e in outs)
result["ws2_over_ws1"] = result["ws2_images_per_s"] / result["ws1_images_per_s"]
a = result["allreduce"]
print(f"all-reduce {a['elements']} float32, 2 ranks: tinynet {a['tinynet_ms']:.2f} ms, Gloo directly "
      f"{a['gloo_ms']:.2f} ms, ratio {a['ratio']:.3f} (median of {a['reps']})")
print(f"MNIST training, {args.cores} cores in total, {args.batches} batches of 64 per rank: world size 1 "
      f"{result['ws1_images_per_s']:.0f} images/s, world size 2 {result['ws2_images_per_s']:.0f} images/s "
      f"(x{result['ws2_over_ws1']:.2f})")
print(json.dumps(result))
