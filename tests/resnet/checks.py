#!/usr/bin/env python3
"""The ResNet example (examples/resnet) end to end, a few seconds to a minute each:

  smoke      Fashion-MNIST, 2 short epochs: the logged loss falls, the test accuracy passes
             70%; the saved model evaluates to the same accuracy.
  threads    the same stdout (augmentation, batch norm, every loss line) run to run; with 1
             thread instead of 2, the same losses to rounding.
  cifar10    the 3x32x32 network on CIFAR-10 files in the binary format, written here; a
             truncated file is refused (exit 4) naming it.
  bad-input  bad flags and combinations: a message naming them and a permanent exit code.
  ddp        two ranks train data-parallel (batch-norm buffers from rank 0); ranks started
             with different recipes refuse to train (exit 2), naming the setting.

Usage: checks.py SCENARIO RESNET_BINARY DATA_DIR WORK_DIR
"""
import os
import random
import re
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "dist"))
from run_ranks import expect, fail, finish, free_port, launch  # noqa: E402

scenario, resnet, data, work = sys.argv[1:5]
shutil.rmtree(work, ignore_errors=True)
os.makedirs(work)


def run(args, code=0):
    p = subprocess.run([resnet, "--no-progress"] + args, capture_output=True, text=True, timeout=600)
    if p.returncode != code:
        fail(f"resnet {' '.join(args)}: exit {p.returncode}, expected {code}\n{p.stdout}\n{p.stderr}")
    return p


def losses(out):
    return [float(x) for x in re.findall(r"^Epoch: \d+ \(.*\) - Loss: (\S+)$", out, re.M)]


def accuracy(out):
    m = re.findall(r"^accuracy=(\S+)$", out, re.M)
    if not m:
        fail("no accuracy= line in:\n" + out)
    return float(m[-1])


def smoke():
    model = os.path.join(work, "resnet20.tnet")
    p = run(["--data-dir", data, "--threads", "2", "--epochs", "2", "--limit-train-batches", "40", "--log-interval",
             "8", "--save-model", "--model-path", model])
    lost = losses(p.stdout)
    expect(len(lost) == 10, f"expected 10 loss lines, got {len(lost)}", [])
    expect(lost[-1] < lost[0] / 2, f"the loss did not fall: {lost}", [])
    expect(len(re.findall(r"^Test accuracy: \d+/10000 \(", p.stdout, re.M)) == 2, "not one test per epoch", [])
    acc = accuracy(p.stdout)
    expect(acc > 0.70, f"test accuracy {acc} is not above 0.70", [])
    again = run(["--data-dir", data, "--threads", "2", "--evaluate", model])
    expect(accuracy(again.stdout) == acc, f"the saved model evaluates to {accuracy(again.stdout)}, not {acc}", [])
    print(f"loss {lost[0]} -> {lost[-1]}, test accuracy {acc}, the saved model's the same")


def threads():
    args = ["--data-dir", data, "--epochs", "1", "--limit-train-batches", "6", "--log-interval", "1"]
    two, again, one = run(args + ["--threads", "2"]), run(args + ["--threads", "2"]), run(args + ["--threads", "1"])
    expect(two.stdout == again.stdout, f"two runs differ:\n{two.stdout}\n---\n{again.stdout}", [])
    # Sums split differently over 1 and 2 threads round differently, and training amplifies
    # that step by step; the batches (their augmentation included) are the same, so the first
    # steps' losses agree to rounding (another batch would move them by percents).
    first, second = losses(one.stdout), losses(two.stdout)
    expect(len(first) == len(second) == 6, f"losses {first} and {second}", [])
    for a, b in zip(first[:3], second[:3]):
        expect(abs(a - b) <= 1e-4 * abs(b), f"1 and 2 threads: losses {first} and {second}", [])
    print(f"2 threads twice: the same {len(two.stdout.splitlines())} lines; 1 thread: the first 3 losses to 1e-4")


def write_cifar(root, train_records, test_records):
    """CIFAR-10's binary layout: a label byte, then 3x32x32 pixel bytes, per record; the
    pixels are brighter for higher labels, so the network has something to learn."""
    folder = os.path.join(root, "cifar-10-batches-bin")
    os.makedirs(folder, exist_ok=True)
    rng = random.Random(7)

    def records(n):
        out = bytearray()
        for _ in range(n):
            label = rng.randrange(10)
            out.append(label)
            out += bytes(min(255, label * 25 + rng.randrange(30)) for _ in range(3072))
        return bytes(out)

    for i in range(1, 6):
        with open(os.path.join(folder, f"data_batch_{i}.bin"), "wb") as f:
            f.write(records(train_records))
    with open(os.path.join(folder, "test_batch.bin"), "wb") as f:
        f.write(records(test_records))
    return folder


def cifar10():
    root = os.path.join(work, "data")
    folder = write_cifar(root, 64, 100)
    p = run(["--data-dir", root, "--dataset", "cifar10", "--threads", "2", "--epochs", "2", "--batch-size", "32",
             "--log-interval", "2"])
    expect("Loaded cifar10: 320 training and 100 test images" in p.stderr, "not CIFAR-10's 320 + 100 images", [])
    expect(len(re.findall(r"^Test accuracy: \d+/100 \(", p.stdout, re.M)) == 2, "not one test per epoch", [])
    print(f"CIFAR-10 layout: 2 epochs of 320 images, test accuracy {accuracy(p.stdout)}")
    with open(os.path.join(folder, "test_batch.bin"), "r+b") as f:
        f.truncate(3073 * 100 - 5)
    bad = run(["--data-dir", root, "--dataset", "cifar10", "--epochs", "1"], code=4)
    expect("test_batch.bin" in bad.stderr, f"the truncated file is not named: {bad.stderr}", [])
    print("a truncated test_batch.bin: exit 4, " + bad.stderr.strip().splitlines()[-1][:160])


def bad_input():
    cases = [(["--dataset", "imagenet"], "--dataset"),
             (["--schedule", "step"], "--schedule"),
             (["--augment", "yes"], "--augment"),
             (["--weight-decay", "-1"], "--weight-decay"),
             (["--label-smoothing", "1.5"], "--label-smoothing"),
             (["--momentum", "nan"], "--momentum"),
             (["--batch-size", "0"], "--batch-size"),
             (["--resume"], "--checkpoint-dir"),
             (["--momentum", "0", "--data-dir", data], "nesterov")]
    for args, named in cases:
        p = subprocess.run([resnet] + args, capture_output=True, text=True, timeout=120)
        said = p.stdout + p.stderr
        expect(1 <= p.returncode <= 127 and named in said, f"{args}: exit {p.returncode}, said:\n{said}", [])
        print(f"ok   {' '.join(args)}: exit {p.returncode}: {said.strip().splitlines()[-1][:120]}")


def ddp():
    args = [resnet, "--data-dir", data, "--threads", "1", "--no-progress", "--epochs", "1", "--limit-train-batches",
            "8", "--batch-size", "64", "--log-interval", "2", "--dist-timeout", "120"]
    procs = launch(args, 2, free_port())
    codes = finish(procs, 300)
    expect(codes == [0, 0], f"exit codes {codes}", procs)
    expect("accuracy=" in procs[0].out and procs[1].out == "", "rank 0 alone should print the results", procs)
    for r, p in enumerate(procs):
        expect(f"rank {r} of 2: Epoch 1: trained" in p.err, f"rank {r} did not train", procs)
    print(f"two ranks: test accuracy {accuracy(procs[0].out)} after 8 batches of 2 x 64")
    port = free_port()
    procs = launch(args, 2, port, ranks=[0]) + launch(args + ["--weight-decay", "0.001"], 2, port, ranks=[1])
    codes = finish(procs, 120)
    expect(codes == [2, 2], f"exit codes {codes}, expected 2 on both ranks", procs)
    expect(all("--weight-decay" in p.err for p in procs), "the differing setting is not named", procs)
    print("ranks with different --weight-decay: exit 2 on both, " + procs[0].err.strip().splitlines()[-1][:160])


{"smoke": smoke, "threads": threads, "cifar10": cifar10, "bad-input": bad_input, "ddp": ddp}[scenario]()
print("OK")
