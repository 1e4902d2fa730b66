#!/usr/bin/env python3
"""SIGTERM and SIGINT as a training job gets them (Kubernetes, torchrun, Ctrl-C), the trainer
running as PID 1 of its own PID namespace, as in a container (`unshare --pid --fork
--mount-proc`; root only, else as an ordinary process, which the output says):

  mid-epoch       SIGTERM in the middle of an epoch: exit 143 within seconds, a checkpoint
                  of where it stood and nothing else in its directory; --resume goes on from
                  there and prints exactly the lines and accuracy of a run never stopped.
  checkpoint      SIGTERM while the checkpoint is being written: the write completes, the
                  run stops at the next batch boundary (143), the checkpoint loads, no
                  temporary file is left.
  twice           two SIGTERMs while the checkpoint is being written: the second ends the
                  process at once (143), leaving the temporary file, which the next run
                  removes, saying so, before resuming from the checkpoint before it.
  early           SIGTERM while the data loads (nothing to save): exit 143 at once; SIGINT
                  in training without a checkpoint directory: exit 130.

Usage: signals.py SCENARIO TRAINER DATA_DIR WORK_DIR   (TRAINER: examples/mnist's or examples/resnet's)
"""
import os
import re
import shutil
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "dist"))
from run_ranks import Rank, dump, expect, fail, wait_for_line  # noqa: E402

scenario, mnist, data, work = sys.argv[1:5]
shutil.rmtree(work, ignore_errors=True)
os.makedirs(work)
ckpt = os.path.join(work, "ckpt")


def in_namespace():
    if os.geteuid() != 0 or subprocess.run(["unshare", "--pid", "--fork", "--mount-proc", "true"]).returncode != 0:
        print("note: no PID namespace here (needs root and unshare): the trainer runs as an ordinary process")
        return False
    return True


NAMESPACE = in_namespace()


def start(args):
    """The trainer, as PID 1 of a new PID namespace where possible. Returns (Rank, pid of the
    trainer as seen from here)."""
    cmd = [mnist, "--data-dir", data, "--threads", "1", "--no-progress"] + args
    if not NAMESPACE:
        p = Rank(cmd, dict(os.environ))
        return p, p.proc.pid
    p = Rank(["unshare", "--pid", "--fork", "--mount-proc"] + cmd, dict(os.environ))
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:  # unshare forks the trainer: its only child
        try:
            with open(f"/proc/{p.proc.pid}/task/{p.proc.pid}/children") as f:
                children = f.read().split()
        except OSError:
            children = []
        if children:
            child = int(children[0])
            with open(f"/proc/{child}/status") as f:
                nspid = [line.split()[1:] for line in f if line.startswith("NSpid:")][0]
            expect(nspid[-1] == "1", f"the trainer is not PID 1 of its namespace (NSpid {nspid})", [p])
            return p, child
        time.sleep(0.01)
    fail("unshare started no trainer")


def finish(p, limit, what):
    try:
        return p.wait(time.monotonic() + limit)
    except subprocess.TimeoutExpired:
        dump([p])
        fail(f"{what}: still running {limit} s after the signal")


def leftovers():
    return sorted(n for n in os.listdir(ckpt) if n != "checkpoint.tnet") if os.path.isdir(ckpt) else []


def loss_lines(text):
    return re.findall(r"^Epoch: .*$", text, re.M)


def accuracy(text):
    m = re.findall(r"^accuracy=(\S+)$", text, re.M)
    if not m:
        fail("no accuracy= line in:\n" + text)
    return m[-1]


def run(args, what):
    p = Rank([mnist, "--data-dir", data, "--threads", "1", "--no-progress"] + args, dict(os.environ))
    code = finish(p, 120, what)
    expect(code == 0, f"{what} exited {code}", [p])
    return p


def mid_epoch():
    args = ["--epochs", "1", "--limit-train-batches", "24", "--log-interval", "1"]
    whole = run(args, "the uninterrupted run")
    p, pid = start(args + ["--checkpoint-dir", ckpt])
    wait_for_line(p, "Epoch: 1 ( 25.0%)", 60)
    os.kill(pid, signal.SIGTERM)
    sent = time.monotonic()
    code = finish(p, 10, "SIGTERM mid-epoch")
    took = p.ended - sent
    expect(code == 143, f"exit code {code} after SIGTERM, expected 143", [p])
    expect(took < 5, f"took {took:.1f} s to stop", [p])
    m = re.search(r"Stopped by SIGTERM after epoch 0 and (\d+) batches of epoch 1", p.err)
    expect(m and "Wrote the checkpoint " + os.path.join(ckpt, "checkpoint.tnet") in p.err,
           "no word of stopping and writing the checkpoint", [p])
    done = int(m.group(1))
    expect(6 <= done < 24, f"stopped after {done} batches", [p])
    expect(leftovers() == [], f"files beside the checkpoint: {leftovers()}", [p])

    again = run(args + ["--checkpoint-dir", ckpt, "--resume"], "the resumed run")
    expect(f"Resumed from {ckpt}/checkpoint.tnet after epoch 0 and {done} batches of epoch 1" in again.err,
           "did not resume mid-epoch", [again])
    expected = loss_lines(whole.out)[done:]  # --log-interval 1: a line per batch
    expect(loss_lines(again.out) == expected and accuracy(again.out) == accuracy(whole.out),
           f"the resumed run's lines differ from the uninterrupted run's:\n{again.out}\n---\n{whole.out}",
           [again, whole])
    print(f"SIGTERM after {done} of 24 batches (PID 1: {NAMESPACE}): exit 143 in {took:.2f} s; resumed run "
          f"ends at accuracy {accuracy(again.out)}, as the uninterrupted one")


def wait_for_temp_file(p, limit):
    """Polls the checkpoint directory until a write is in progress there."""
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline and p.proc.poll() is None:
        if any(n.startswith(".checkpoint.tnet.tmp.") for n in leftovers()):
            return True
        time.sleep(0.0005)
    return False


def checkpoint():
    args = ["--epochs", "2", "--limit-train-batches", "3", "--log-interval", "1", "--checkpoint-dir", ckpt]
    p, pid = start(args)
    expect(wait_for_temp_file(p, 60), "never saw the checkpoint being written", [p])
    os.kill(pid, signal.SIGTERM)
    sent = time.monotonic()
    code = finish(p, 10, "SIGTERM during the checkpoint write")
    expect(code == 143, f"exit code {code}, expected 143", [p])
    m = re.search(r"Stopped by SIGTERM after epoch (\d) and 0 batches of epoch \d", p.err)
    expect(m is not None, "did not stop at the next batch boundary", [p])
    expect(leftovers() == [], f"files left beside the checkpoint: {leftovers()}", [p])
    again = run(["--epochs", "2", "--limit-train-batches", "3", "--checkpoint-dir", ckpt, "--resume"], "resuming")
    expect(f"after epoch {m.group(1)}\n" in again.err, "the checkpoint is not the one written when signalled", [again])
    print(f"SIGTERM during the write of epoch {m.group(1)}'s checkpoint: exit 143 in {p.ended - sent:.2f} s, the "
          "checkpoint complete, nothing left beside it")


def twice():
    args = ["--epochs", "2", "--limit-train-batches", "3", "--checkpoint-dir", ckpt]
    for attempt in range(3):
        shutil.rmtree(ckpt, ignore_errors=True)
        p, pid = start(args)
        seen = wait_for_temp_file(p, 60)
        os.kill(pid, signal.SIGTERM)
        # Signals of one kind do not queue: the second is sent once the first was taken.
        deadline = time.monotonic() + 5
        while "stopping at the next batch boundary" not in p.err and time.monotonic() < deadline:
            time.sleep(0.0005)
        os.kill(pid, signal.SIGTERM)
        code = finish(p, 10, "two SIGTERMs")
        expect(seen and code == 143 and "SIGTERM: stopping now" in p.err, f"exit code {code}", [p])
        left = leftovers()
        if left:
            break
        print(f"attempt {attempt + 1}: the write ended before the second signal; again")
    else:
        fail("three times the write ended before the second signal arrived")
    expect(len(left) == 1 and left[0].startswith(".checkpoint.tnet.tmp."), f"left: {left}", [p])
    again = run(args + ["--resume"], "the next run")
    expect(f"Removed '{os.path.join(ckpt, left[0])}', left by a write that was cut short" in again.err,
           "the next run did not say it removed the temporary file", [again])
    expect(leftovers() == [], f"still beside the checkpoint: {leftovers()}", [again])
    print(f"the second SIGTERM left {left[0]}; the next run removed it and resumed")


def early():
    p, pid = start(["--epochs", "1", "--limit-train-batches", "3"])
    deadline = time.monotonic() + 10
    while "tinynet " not in p.err and time.monotonic() < deadline:
        time.sleep(0.005)
    os.kill(pid, signal.SIGTERM)
    code = finish(p, 5, "SIGTERM while loading")
    expect(code == 143 and "SIGTERM: stopping now" in p.err and "Loaded" not in p.err,
           f"exit code {code}: expected 143 before the data was loaded", [p])
    p, pid = start(["--epochs", "1", "--limit-train-batches", "200", "--log-interval", "1"])
    wait_for_line(p, "Epoch: 1 (  2.0%)", 60)
    os.kill(pid, signal.SIGINT)
    code = finish(p, 10, "SIGINT")
    expect(code == 130 and "Stopped by SIGINT after epoch 0" in p.err and
           "No --checkpoint-dir: this run's progress is not kept" in p.err, f"exit code {code}, expected 130", [p])
    print("SIGTERM while loading: 143 at once; SIGINT in training: 130")


{"mid-epoch": mid_epoch, "checkpoint": checkpoint, "twice": twice, "early": early}[scenario]()
print("OK")
