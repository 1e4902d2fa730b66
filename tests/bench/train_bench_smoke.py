#!/usr/bin/env python3
"""Smoke tests of the benchmark harness, so CI proves its builds link and run.

  train_bench_smoke.py BINARY DATA_DIR cpu         2 timed batches on the CPU: a sane JSON line
  train_bench_smoke.py BINARY DATA_DIR cuda        train_bench_cuda --device cuda: trains where a GPU
                                                   is present, else fails with the no-device message
  train_bench_smoke.py BINARY DATA_DIR g++-cuda    train_bench (g++) --device cuda: refused, naming
                                                   train_bench_cuda
"""
import json
import subprocess
import sys

binary, data_dir, mode = sys.argv[1:4]
device = "cpu" if mode == "cpu" else "cuda"
cmd = [binary, "--device", device, "--model", "lenet", "--batches", "2", "--warmup", "1", "--threads", "2",
       "--data-dir", data_dir]
done = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
print(f"$ {' '.join(cmd)}\nexit {done.returncode}\nstdout: {done.stdout.strip()}\nstderr: {done.stderr.strip()}")


def fail(why):
    sys.exit(f"FAIL: {why}")


def check_trained(expected_device):
    if done.returncode != 0:
        fail(f"exit code {done.returncode}, expected 0")
    r = json.loads(done.stdout.strip().splitlines()[-1])
    if r["impl"] != "tinynet" or r["device"] != expected_device or r["model"] != "lenet":
        fail(f"unexpected impl/device/model in {r}")
    if r["batches"] != 2 or r["batch"] != 100 or not r["seconds"] > 0 or not r["images_per_s"] > 0:
        fail(f"implausible timing in {r}")
    print(f"OK: 2 batches on {expected_device}, {r['images_per_s']:.0f} images/s")


def check_refused(message):
    if done.returncode != 1:
        fail(f"exit code {done.returncode}, expected 1 (an error, not a crash)")
    if message not in done.stderr:
        fail(f"stderr does not say '{message}'")
    if done.stdout.strip():
        fail("a refused run printed a result")
    print("OK: refused with a clear message")


if mode == "cpu":
    check_trained("cpu")
elif mode == "cuda":
    if "no CUDA device is present" in done.stderr:
        check_refused("error: --device cuda: no CUDA device is present (no GPU, or no driver: see nvidia-smi)")
    else:
        check_trained("cuda:0")
elif mode == "g++-cuda":
    check_refused("error: --device cuda: this train_bench was compiled by g++ without the CUDA backend; "
                  "run train_bench_cuda")
else:
    fail(f"unknown mode {mode}")
