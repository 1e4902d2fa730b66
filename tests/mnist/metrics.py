#!/usr/bin/env python3
"""The MNIST example's metrics: --metrics-jsonl and --tensorboard files appear, hold what
the run printed, and leave stdout byte-identical; the progress bar shows on a terminal
only, and not with --no-progress. Usage: metrics.py MNIST_BINARY DATA_DIR WORK_DIR"""
import json
import math
import pathlib
import re
import shlex
import shutil
import struct
import subprocess
import sys

sys.path.insert(0, str(pathlib.Path(__file__).parent.parent / "metrics"))
import tfevents  # noqa: E402  (the independent tfevents reader)

binary, data, work = sys.argv[1], sys.argv[2], pathlib.Path(sys.argv[3])
shutil.rmtree(work, ignore_errors=True)
work.mkdir(parents=True)


def trainer(epochs):
    return [binary, "--data-dir", data, "--epochs", str(epochs), "--limit-train-batches", "30", "--log-interval", "10",
            "--threads", "2"]


run = trainer(2)


def stdout_of(args):
    return subprocess.run(args, check=True, capture_output=True, text=True).stdout


plain = stdout_of(run)
watched = stdout_of(run + ["--metrics-jsonl", str(work / "m.jsonl"), "--tensorboard", str(work / "tb")])
assert watched == plain, f"stdout changed with metrics on:\n{plain}\n---\n{watched}"

# JSONL: 3 logged steps and 1 epoch row per epoch, matching the printed numbers.
rows = [json.loads(line) for line in (work / "m.jsonl").read_text().splitlines()]
assert [r["kind"] for r in rows] == ["step"] * 3 + ["epoch"] + ["step"] * 3 + ["epoch"], rows
printed_losses = [float(x) for x in re.findall(r"^Epoch: \d \(.*\) - Loss: (\S+)$", plain, flags=re.M)]
steps = [r for r in rows if r["kind"] == "step"]
assert [r["loss"] for r in steps] == printed_losses, (steps, printed_losses)
assert [(r["epoch"], r["batch"], r["step"]) for r in steps] == [
    (1, 0, 1), (1, 10, 11), (1, 20, 21), (2, 0, 31), (2, 10, 41), (2, 20, 51)]
assert [r["lr"] for r in steps] == [1.0] * 3 + [0.7] * 3  # StepLR gamma 0.7 after epoch 1
for r in steps:
    assert 0 <= r["accuracy"] <= 1 and r["images_per_second"] > 0 and r["wall_time"] > 1.6e9, r
epochs = [r for r in rows if r["kind"] == "epoch"]
printed_loss = [float(x) for x in re.findall(r"^loss=(\S+)$", plain, flags=re.M)]
printed_acc = [float(x) for x in re.findall(r"^accuracy=(\S+)$", plain, flags=re.M)]
assert [r["step"] for r in epochs] == [30, 60]
assert [round(r["loss"], 4) for r in epochs] == printed_loss, (epochs, printed_loss)
assert [round(r["accuracy"], 4) for r in epochs] == printed_acc, (epochs, printed_acc)
assert all(r["train_s"] > 0 and r["images_per_second"] > 0 for r in epochs)

# TensorBoard: one file, every scalar equal (as float32) to the JSONL row of its step.
files = list((work / "tb").iterdir())
assert len(files) == 1 and files[0].name.startswith("events.out.tfevents."), files
events = tfevents.read_events(files[0])[1:]
f32 = lambda x: struct.unpack("<f", struct.pack("<f", x))[0]  # noqa: E731
expected = []
for r in rows:
    if r["kind"] == "step":
        tags = [("train/loss", "loss"), ("train/accuracy", "accuracy"), ("train/lr", "lr"),
                ("train/images_per_second", "images_per_second")]
    else:
        tags = [("test/loss", "loss"), ("test/accuracy", "accuracy"), ("epoch/images_per_second", "images_per_second")]
    expected += [(r["step"], tag, f32(r[key]), r["wall_time"]) for tag, key in tags]
got = [(e["step"], *e["values"][0], e["wall_time"]) for e in events]
assert got == expected, f"tfevents:\n{got}\nJSONL:\n{expected}"

# The progress bar: drawn on a terminal (script(1) gives the run one), never with --no-progress.
if shutil.which("script") is None:
    print("SKIP: the progress-bar check needs script(1) (util-linux)")
else:
    def on_terminal(extra):
        command = shlex.join(trainer(1) + extra) + " 2>/dev/null"
        subprocess.run(["script", "-qec", command, str(work / "typescript")], check=True, capture_output=True)
        return (work / "typescript").read_bytes().decode(errors="replace")  # keep the \r
    shown, hidden = on_terminal([]), on_terminal(["--no-progress"])
    assert re.search(r"\rEpoch 1 \[#*\.*\]  \d+/30  loss \d\.\d{4}  \d+ images/s  ETA \d:\d\d\x1b\[K", shown), shown
    assert "images/s" not in hidden and "\x1b[K" not in hidden, hidden
print(f"OK: stdout unchanged; {len(rows)} JSONL rows and {len(events)} TensorBoard scalars agree; bar on a tty only")
