#!/usr/bin/env python3
"""The MNIST example trained data-parallel on the real data, started the ways users start it:
by hand, by torchrun (--standalone, and static rendezvous where torchrun's agent hosts the
store), as a Kubeflow PyTorchJob's pods would be, killed and restarted from checkpoints,
and for accuracy against a single process; and with --backend nccl: refused clearly where
it cannot run, trained on GPUs where there are some. Every run has a hard deadline.

Usage: mnist_launch.py SCENARIO MNIST_BINARY DATA_DIR WORK_DIR
"""
import os
import re
import shutil
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from run_ranks import Rank, dump, expect, fail, finish, free_port, launch, wait_for_line  # noqa: E402

TORCHRUN = "/usr/bin/torchrun"


def accuracy(text):
    m = re.findall(r"^accuracy=([0-9.]+)$", text, re.M)
    if not m:
        fail("no accuracy= line in:\n" + text)
    return float(m[-1])


def by_hand(mnist, data, work):
    args = [mnist, "--data-dir", data, "--epochs", "1", "--limit-train-batches", "30", "--log-interval", "10",
            "--save-model", "--model-path", os.path.join(work, "model.tnet")]
    procs = launch(args, 2, free_port(), extra_env={"OMP_NUM_THREADS": "1"})
    codes = finish(procs, 300)
    expect(codes == [0, 0], f"exit codes {codes}", procs)
    expect(procs[1].out == "", "rank 1 printed log lines", procs)
    expect("Epoch: 1 (" in procs[0].out and accuracy(procs[0].out) > 0.8, "rank 0's log lines", procs)
    saved = sum("Saved the model" in p.err for p in procs)
    expect(saved == 1 and os.path.exists(os.path.join(work, "model.tnet")), "model not written by rank 0 alone", procs)
    for r, p in enumerate(procs):
        expect(f"rank {r} of 2: tinynet mnist:" in p.err and "1 threads (OMP_NUM_THREADS)" in p.err,
               "per-rank thread line missing", procs)
    print(procs[0].out + procs[0].err)


def torchrun(mnist, data, work, static):
    """torchrun --no_python: Debian's torch 1.13 needs the underscore flag spellings and
    -r 1 -t 1 --log_dir (its default output redirects crash on Python 3.11)."""
    if not os.path.exists(TORCHRUN):
        print("SKIP: torchrun (python3-torch) is not installed")
        return
    logs = os.path.join(work, "logs")
    shutil.rmtree(logs, ignore_errors=True)
    if static:
        port = free_port()
        how = ["--nnodes", "1", "--node_rank", "0", "--master_addr", "127.0.0.1", "--master_port", str(port)]
    else:
        how = ["--standalone"]
    cmd = [TORCHRUN] + how + ["--nproc_per_node", "2", "--no_python", "-r", "1", "-t", "1", "--log_dir", logs,
                              mnist, "--data-dir", data, "--epochs", "1", "--limit-train-batches", "20",
                              "--log-interval", "10", "--dist-timeout", "120"]
    env = dict(os.environ)
    for k in ("RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT", "LOCAL_RANK", "OMP_NUM_THREADS"):
        env.pop(k, None)
    p = Rank(cmd, env)
    try:
        code = p.wait(time.monotonic() + 300)
    except subprocess.TimeoutExpired:
        dump([p])
        fail("torchrun did not finish within 300 s")
    expect(code == 0, f"torchrun exited {code}", [p])
    # torchrun echoes each rank's stdout prefixed [defaultN]:
    both = p.out + p.err
    expect("[default0]:accuracy=" in both, "rank 0's accuracy line not in torchrun's output", [p])
    expect("[default1]:accuracy=" not in both, "rank 1 printed log lines", [p])
    # torchrun gives each worker OMP_NUM_THREADS=1; the ranks say so (on stderr, which -r 1
    # leaves on torchrun's own).
    for r in range(2):
        expect(f"rank {r} of 2: tinynet mnist: model net, optimizer adadelta, 1 threads (OMP_NUM_THREADS)" in both,
               f"rank {r}'s thread line missing", [p])
    if static:
        expect("address already in use" not in both.lower(), "a rank tried to bind torchrun's port", [p])
        expect(both.count("(PyTorch 1.13 TCPStore protocol)") == 2, "the ranks did not speak 1.13's dialect", [p])
    print(both)


TRIXIE_RUN = os.path.join(os.path.dirname(os.path.abspath(__file__)), "trixie_run.sh")


def torchrun26(how, mnist, args):
    """torchrun 2.6 (Debian 13's python3-torch, in the chroot trixie_run.sh enters), with the
    hyphenated flags its users type; each rank runs the host's binary (tinynet-host-exec)."""
    return Rank(["bash", TRIXIE_RUN, "torchrun"] + how + ["--nproc-per-node", "2", "--no-python", "tinynet-host-exec",
                                                          mnist] + args, launcher_env())


def need_torchrun26():
    check = subprocess.run(["bash", TRIXIE_RUN, "--check"], capture_output=True, text=True)
    if check.returncode != 0:
        print(check.stdout + check.stderr, flush=True)
        sys.exit(77)


def launcher_env():
    env = dict(os.environ)
    for k in ("RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT", "LOCAL_RANK", "OMP_NUM_THREADS"):
        env.pop(k, None)
    return env


def static_rendezvous(port):
    """What Kubeflow's TrainJob runs: one node of a static rendezvous on a fixed address."""
    return ["--nnodes", "1", "--node-rank", "0", "--master-addr", "127.0.0.1", "--master-port", str(port)]


def ranks_of(mnist, marker):
    """{pid: environment} of the running tinynet ranks whose arguments include `marker`."""
    found = {}
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                cmd = f.read().split(b"\0")
            if cmd[0] != mnist.encode() or marker.encode() not in cmd:
                continue
            with open(f"/proc/{pid}/environ", "rb") as f:
                found[int(pid)] = dict(kv.decode().split("=", 1) for kv in f.read().split(b"\0") if b"=" in kv)
        except OSError:
            continue
    return found


def kill_rank(mnist, marker, rank, attempt):
    pids = [pid for pid, env in ranks_of(mnist, marker).items()
            if env.get("RANK") == str(rank) and env.get("TORCHELASTIC_RESTART_COUNT") == str(attempt)]
    if len(pids) != 1:
        fail(f"found {len(pids)} processes for rank {rank} of attempt {attempt}, expected 1")
    os.kill(pids[0], signal.SIGKILL)
    return pids[0]


def finish_torchrun(p, limit):
    try:
        return p.wait(time.monotonic() + limit)
    except subprocess.TimeoutExpired:
        dump([p])
        fail(f"torchrun did not finish within {limit} s")


def torchrun26_runs(mnist, data, work, static):
    """torchrun 2.6, --standalone or static rendezvous: its agent hosts the store (2.6 shares
    it with the workers in both modes) and the ranks join it in the 2.x dialect."""
    need_torchrun26()
    port = free_port()
    how = static_rendezvous(port) if static else ["--standalone"]
    p = torchrun26(how, mnist, ["--data-dir", data, "--epochs", "1", "--limit-train-batches", "20", "--log-interval",
                                "10", "--dist-timeout", "120"])
    code = finish_torchrun(p, 300)
    expect(code == 0, f"torchrun exited {code}", [p])
    both = p.out + p.err
    expect(both.count("accuracy=") == 1 and accuracy(p.out) > 0.5, "not exactly one accuracy line (rank 0's)", [p])
    where = f"127.0.0.1:{port}" if static else "localhost:"
    for r in range(2):
        expect(f"rank {r}: joined the launcher's store at {where}" in both, f"rank {r} did not join torchrun's store", [p])
        expect(f"rank {r} of 2: tinynet mnist: model net, optimizer adadelta, 1 threads (OMP_NUM_THREADS)" in both,
               f"rank {r}'s thread line missing", [p])
    expect(both.count("(PyTorch 2.x TCPStore protocol)") == 2, "the ranks did not speak the 2.x dialect", [p])
    expect("address already in use" not in both.lower(), "a rank tried to bind torchrun's port", [p])
    print(both)


def torchrun26_killed_rank(mnist, data, work):
    """A rank killed under torchrun 2.6 without restarts: torchrun stops the other rank and
    fails, naming the killed rank, well within the deadline."""
    need_torchrun26()
    marker = os.path.join(work, "ckpt-killed")
    shutil.rmtree(marker, ignore_errors=True)
    p = torchrun26(static_rendezvous(free_port()) + ["--max-restarts", "0"], mnist,
                   ["--data-dir", data, "--epochs", "2", "--limit-train-batches", "40", "--log-interval", "1",
                    "--dist-timeout", "30", "--checkpoint-dir", marker])
    wait_for_line(p, "Epoch: 1 ( 25.0%)", 200)
    kill_rank(mnist, marker, 1, 0)
    code = finish_torchrun(p, 120)
    both = p.out + p.err
    expect(code != 0, "torchrun succeeded although a rank was killed", [p])
    expect("rank      : 1 (local_rank: 1)" in both and "Signal 9 (SIGKILL)" in both,
           "torchrun's failure report does not name rank 1 and SIGKILL", [p])
    expect(not ranks_of(mnist, marker), "a rank outlived torchrun", [p])
    print(f"torchrun exited {code}:\n" + both[-2000:])


def torchrun26_restart(mnist, data, work):
    """torchrun 2.6 --max-restarts 1: rank 1 killed in epoch 2, torchrun restarts both ranks
    (TORCHELASTIC_RESTART_COUNT=1, a fresh key prefix in its store), they resume from rank 0's
    epoch-1 checkpoint and end with exactly the accuracy of an uninterrupted run."""
    need_torchrun26()
    common = ["--data-dir", data, "--epochs", "2", "--limit-train-batches", "40", "--log-interval", "1",
              "--dist-timeout", "30"]
    whole = launch([mnist] + common, 2, free_port(), extra_env={"OMP_NUM_THREADS": "1"})
    codes = finish(whole, 300)
    expect(codes == [0, 0], f"uninterrupted run: exit codes {codes}", whole)
    expected = accuracy(whole[0].out)

    ckpt = os.path.join(work, "ckpt-restart")
    shutil.rmtree(ckpt, ignore_errors=True)
    p = torchrun26(static_rendezvous(free_port()) + ["--max-restarts", "1"], mnist,
                   common + ["--checkpoint-dir", ckpt, "--resume"])
    wait_for_line(p, "Epoch: 2 ( 25.0%)", 200)
    expect(os.path.exists(os.path.join(ckpt, "checkpoint.tnet")), "no checkpoint after epoch 1", [p])
    kill_rank(mnist, ckpt, 1, 0)
    code = finish_torchrun(p, 300)
    both = p.out + p.err
    expect(code == 0, f"torchrun exited {code} after its restart", [p])
    expect("Resumed from" in both, "the restarted ranks did not resume from the checkpoint", [p])
    got = accuracy(p.out)
    expect(got == expected, f"restarted run ends at accuracy {got}, uninterrupted run at {expected}", [p])
    print(f"rank 1 killed in epoch 2; torchrun restarted the job, which resumed: accuracy {got} == uninterrupted "
          f"{expected}")


def kubeflow(mnist, data, work):
    """The environment training-operator v1 gives a PyTorchJob's pods: MASTER_ADDR names the
    master pod's service (here: localhost), MASTER_PORT, WORLD_SIZE, RANK = pod index (Master 0,
    Worker i -> i+1), PYTHONUNBUFFERED; no LOCAL_RANK, no OMP_NUM_THREADS."""
    port = free_port()
    args = [mnist, "--data-dir", data, "--epochs", "1", "--limit-train-batches", "20", "--log-interval", "10",
            "--threads", "1"]
    procs = []
    for r in range(2):
        env = {k: v for k, v in os.environ.items() if k not in ("LOCAL_RANK", "OMP_NUM_THREADS")}
        env.update(MASTER_ADDR="localhost", MASTER_PORT=str(port), WORLD_SIZE="2", RANK=str(r), PYTHONUNBUFFERED="1")
        procs.append(Rank(args, env))
    codes = finish(procs, 300)
    expect(codes == [0, 0], f"exit codes {codes}", procs)
    expect(accuracy(procs[0].out) > 0.7 and procs[1].out == "", "master's metrics lines", procs)
    print(procs[0].out)


def kill_and_resume(mnist, data, work):
    """A rank killed in epoch 2 takes the job down with a retryable exit code; restarting the
    whole job with --resume (as restartPolicy OnFailure does) continues from rank 0's epoch-1
    checkpoint and ends with the uninterrupted run's accuracy."""
    common = [mnist, "--data-dir", data, "--epochs", "2", "--limit-train-batches", "40", "--log-interval", "1",
              "--dist-timeout", "30"]
    env = {"OMP_NUM_THREADS": "1"}
    whole = launch(common, 2, free_port(), extra_env=env)
    codes = finish(whole, 300)
    expect(codes == [0, 0], f"uninterrupted run: exit codes {codes}", whole)
    expected = accuracy(whole[0].out)

    ckpt = os.path.join(work, "ckpt")
    shutil.rmtree(ckpt, ignore_errors=True)
    args = common + ["--checkpoint-dir", ckpt, "--resume"]
    first = launch(args, 2, free_port(), extra_env=env)
    wait_for_line(first[0], "Epoch: 2 ( 25.0%)", 200)
    os.kill(first[1].proc.pid, signal.SIGKILL)
    codes = finish(first[:1], 60)
    first[1].proc.wait()
    expect(codes[0] in (200, 201), f"rank 0 exited {codes[0]} after its peer was killed, expected 200 or 201", first)
    expect(os.path.exists(os.path.join(ckpt, "checkpoint.tnet")), "no checkpoint after epoch 1", first)

    again = launch(args, 2, free_port(), extra_env=env)
    codes = finish(again, 300)
    expect(codes == [0, 0], f"restarted run: exit codes {codes}", again)
    expect("Resumed from" in again[0].err and "Epoch: 1 (" not in again[0].out, "did not resume after epoch 1", again)
    got = accuracy(again[0].out)
    expect(got == expected, f"resumed run ends at accuracy {got}, uninterrupted run at {expected}", again)
    print(f"killed in epoch 2, exit {codes}; resumed run accuracy {got} == uninterrupted {expected}")


def sigterm(mnist, data, work):
    """SIGTERM to rank 1 alone mid-epoch (one pod evicted): the ranks agree at the next batch
    boundary to stop, rank 0 writes the checkpoint, both exit 143 within seconds; the job
    restarted with --resume ends with exactly the uninterrupted run's accuracy."""
    common = [mnist, "--data-dir", data, "--epochs", "1", "--limit-train-batches", "30", "--log-interval", "1",
              "--dist-timeout", "30", "--no-progress"]
    env = {"OMP_NUM_THREADS": "1"}
    whole = launch(common, 2, free_port(), extra_env=env)
    codes = finish(whole, 120)
    expect(codes == [0, 0], f"uninterrupted run: exit codes {codes}", whole)

    ckpt = os.path.join(work, "ckpt")
    shutil.rmtree(ckpt, ignore_errors=True)
    args = common + ["--checkpoint-dir", ckpt, "--resume"]
    first = launch(args, 2, free_port(), extra_env=env)
    wait_for_line(first[0], "Epoch: 1 ( 20.0%)", 60)
    os.kill(first[1].proc.pid, signal.SIGTERM)
    sent = time.monotonic()
    codes = finish(first, 30)
    took = max(p.ended for p in first) - sent
    expect(codes == [143, 143], f"exit codes {codes} after SIGTERM to rank 1, expected 143 for both", first)
    expect(took < 5, f"the ranks took {took:.1f} s to stop", first)
    stopped = [re.search(r"Stopped by SIGTERM after epoch 0 and (\d+) batches", p.err) for p in first]
    expect(all(stopped) and stopped[0].group(1) == stopped[1].group(1), "the ranks did not stop together", first)
    expect("Wrote the checkpoint" in first[0].err and os.listdir(ckpt) == ["checkpoint.tnet"],
           "rank 0 did not write the checkpoint alone", first)

    again = launch(args, 2, free_port(), extra_env=env)
    codes = finish(again, 120)
    expect(codes == [0, 0], f"resumed run: exit codes {codes}", again)
    expect(f"and {stopped[0].group(1)} batches of epoch 1" in again[0].err, "did not resume mid-epoch", again)
    got, expected = accuracy(again[0].out), accuracy(whole[0].out)
    expect(got == expected, f"resumed run ends at accuracy {got}, uninterrupted run at {expected}", again)
    print(f"SIGTERM to rank 1 after {stopped[0].group(1)} batches: both exited 143 within {took:.2f} s; resumed run "
          f"accuracy {got} == uninterrupted {expected}")


def torchrun_pid(marker):
    """The pid of the torchrun agent (python3 running torchrun) whose arguments include `marker`."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                cmd = [a.decode(errors="replace") for a in f.read().split(b"\0") if a]
        except OSError:
            continue
        if (len(cmd) > 1 and os.path.basename(cmd[0]).startswith("python") and os.path.basename(cmd[1]) == "torchrun"
                and marker in cmd):
            found.append(int(pid))
    if len(found) != 1:
        fail(f"found {len(found)} torchrun agents for {marker}, expected 1")
    return found[0]


def torchrun_sigterm(mnist, data, work, version):
    """SIGTERM to torchrun itself (what Kubernetes sends a pod whose main process is torchrun;
    torchrun 1.13 or 2.6): its agent passes SIGTERM to both ranks, which stop together at the
    next batch boundary; rank 0 writes the checkpoint, no temporary file is left, and both ranks
    are gone within seconds, long before the agent's SIGKILL 30 s later. The job started again
    with --resume ends with exactly the uninterrupted run's accuracy."""
    if version == "2.6":
        need_torchrun26()
    elif not os.path.exists(TORCHRUN):
        print("SKIP: torchrun (python3-torch) is not installed")
        return
    common = ["--data-dir", data, "--epochs", "1", "--limit-train-batches", "30", "--log-interval", "1",
              "--dist-timeout", "30", "--no-progress"]
    whole = launch([mnist] + common, 2, free_port(), extra_env={"OMP_NUM_THREADS": "1"})
    codes = finish(whole, 120)
    expect(codes == [0, 0], f"uninterrupted run: exit codes {codes}", whole)

    ckpt = os.path.join(work, "ckpt")
    shutil.rmtree(ckpt, ignore_errors=True)
    args = common + ["--checkpoint-dir", ckpt, "--resume"]

    def start():
        if version == "2.6":
            return torchrun26(static_rendezvous(free_port()) + ["--max-restarts", "0"], mnist, args)
        logs = os.path.join(work, "logs")
        shutil.rmtree(logs, ignore_errors=True)
        how = ["--nnodes", "1", "--node_rank", "0", "--master_addr", "127.0.0.1", "--master_port", str(free_port()),
               "--max_restarts", "0", "--nproc_per_node", "2", "--no_python", "-r", "1", "-t", "1", "--log_dir", logs]
        return Rank([TORCHRUN] + how + [mnist] + args, launcher_env())

    p = start()
    wait_for_line(p, "Epoch: 1 ( 20.0%)", 120)
    os.kill(torchrun_pid(ckpt), signal.SIGTERM)
    sent = time.monotonic()
    while ranks_of(mnist, ckpt) and time.monotonic() - sent < 60:
        time.sleep(0.05)
    took = time.monotonic() - sent
    stopped_code = finish_torchrun(p, 60)
    both = p.out + p.err
    expect(not ranks_of(mnist, ckpt), "a rank outlived torchrun", [p])
    expect(took < 10, f"the ranks took {took:.1f} s to stop after torchrun's SIGTERM", [p])
    expect(stopped_code != 0, "torchrun reported success for a stopped job", [p])
    stopped = re.findall(r"Stopped by SIGTERM after epoch 0 and (\d+) batches", both)
    expect(len(stopped) == 2 and stopped[0] == stopped[1], f"the ranks did not stop together: {stopped}", [p])
    expect(both.count("Wrote the checkpoint") == 1 and os.listdir(ckpt) == ["checkpoint.tnet"],
           f"expected rank 0's checkpoint alone in {ckpt}, found {os.listdir(ckpt)}", [p])

    again = start()
    code = finish_torchrun(again, 300)
    out = re.sub(r"^\[default\d+\]:", "", again.out, flags=re.M)
    expect(code == 0, f"the resumed job: torchrun exited {code}", [again])
    expect(f"and {stopped[0]} batches of epoch 1" in again.out + again.err, "did not resume mid-epoch", [again])
    got, expected = accuracy(out), accuracy(whole[0].out)
    expect(got == expected, f"resumed run ends at accuracy {got}, uninterrupted run at {expected}", [again])
    print(f"SIGTERM to torchrun {version} after {stopped[0]} batches: both ranks stopped within {took:.2f} s, torchrun "
          f"exited {stopped_code}; resumed run accuracy {got} == uninterrupted {expected}")


def settings_mismatch(mnist, data, work):
    """Ranks started with different settings refuse before they load data, all with exit code 2
    and a message naming the first differing flag and both values; one case per setting that
    must match, and per-rank checkpoint directories where only rank 0's holds a checkpoint."""
    def job(rank0, rank1, expect_flag, here, there, extra=()):
        port = free_port()
        procs = []
        for r, own in enumerate((rank0, rank1)):
            env = dict(os.environ, RANK=str(r), WORLD_SIZE="2", MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port),
                       OMP_NUM_THREADS="1")
            procs.append(Rank([mnist, "--data-dir", data, "--dist-timeout", "30"] + list(extra) + own, env))
        codes = finish(procs, 60)
        expect(codes == [2, 2], f"{expect_flag}: exit codes {codes}, expected 2 for both", procs)
        for r, p in enumerate(procs):
            mine, theirs = (here, there) if r == 0 else (there, here)
            message = f"rank {r}: the ranks disagree on {expect_flag}: {mine} here, {theirs} on rank {1 - r}"
            expect(message in p.err, f"rank {r} does not say '{message}'", procs)
            expect("Loaded" not in p.err, f"rank {r} loaded data before refusing", procs)
        print(procs[1].err.strip().splitlines()[-1])

    job(["--lr", "1"], ["--lr", "0.5"], "--lr", "1", "0.5")
    job([], ["--optimizer", "sgd"], "--optimizer", "adadelta", "sgd")
    job([], ["--dataset", "fashion-mnist"], "--dataset", "mnist", "fashion-mnist")
    job(["--seed", "1"], ["--seed", "2"], "--seed", "1", "2")
    job([], ["--batch-size", "32"], "--batch-size", "64", "32")
    job(["--epochs", "2"], ["--epochs", "3"], "--epochs", "2", "3")
    job([], ["--autocast", "bf16"], "--autocast", "off", "bf16")
    job(["--limit-train-batches", "10"], [], "--limit-train-batches", "10", "none")
    # Per-rank checkpoint directories, only rank 0's with a checkpoint (of epoch 1).
    ckpt0, ckpt1 = os.path.join(work, "ckpt0"), os.path.join(work, "ckpt1")
    for d in (ckpt0, ckpt1):
        shutil.rmtree(d, ignore_errors=True)
    one = Rank([mnist, "--data-dir", data, "--epochs", "1", "--limit-train-batches", "2", "--threads", "1",
                "--checkpoint-dir", ckpt0], {k: v for k, v in os.environ.items() if k not in ("WORLD_SIZE", "RANK")})
    expect(one.wait(time.monotonic() + 60) == 0, "the run writing a checkpoint failed", [one])
    md5 = subprocess.run(["md5sum", os.path.join(ckpt0, "checkpoint.tnet")], capture_output=True,
                         text=True).stdout.split()[0]
    job(["--checkpoint-dir", ckpt0], ["--checkpoint-dir", ckpt1], "the checkpoint --resume continues from",
        f"epoch 1 and 0 batches done, MD5 {md5}", "none", extra=["--epochs", "2", "--resume"])


def soak_sigstop(mnist, data, work):
    """Soak: 2 ranks train 3 epochs while rank 1 is stopped (SIGSTOP) for 6 s out of every
    10 s, always continued well within --dist-timeout, for at least 5 minutes; the job must
    end exactly as an undisturbed run does: the same saved model, byte for byte."""
    common = [mnist, "--data-dir", data, "--epochs", "3", "--log-interval", "100", "--dist-timeout", "60",
              "--save-model"]
    env = {"OMP_NUM_THREADS": "1"}
    plain_model, soaked_model = os.path.join(work, "undisturbed.tnet"), os.path.join(work, "soaked.tnet")
    start = time.monotonic()
    plain = launch(common + ["--model-path", plain_model], 2, free_port(), extra_env=env)
    codes = finish(plain, 1200)
    expect(codes == [0, 0], f"undisturbed run: exit codes {codes}", plain)
    plain_s = time.monotonic() - start

    start = time.monotonic()
    soaked = launch(common + ["--model-path", soaked_model], 2, free_port(), extra_env=env)
    stops = 0
    while soaked[0].proc.poll() is None and soaked[1].proc.poll() is None:
        if time.monotonic() - start > 3000:
            break
        time.sleep(4)
        os.kill(soaked[1].proc.pid, signal.SIGSTOP)
        stops += 1
        time.sleep(6)
        os.kill(soaked[1].proc.pid, signal.SIGCONT)
    codes = finish(soaked, 1200)
    soaked_s = time.monotonic() - start
    expect(codes == [0, 0], f"soaked run: exit codes {codes} after {stops} stops", soaked)
    with open(plain_model, "rb") as a, open(soaked_model, "rb") as b:
        same = a.read() == b.read()
    print(f"undisturbed: {plain_s:.0f} s; soaked: {soaked_s:.0f} s with rank 1 stopped {stops} times for 6 s; "
          f"models {'identical' if same else 'DIFFERENT'}; accuracy {accuracy(soaked[0].out)} vs "
          f"{accuracy(plain[0].out)}")
    expect(same, "the soaked run's model differs from the undisturbed run's", soaked)
    expect(soaked_s >= 300, f"the soaked run lasted {soaked_s:.0f} s, less than the 5 minutes a soak needs", soaked)


def accuracy_vs_single(mnist, data, work):
    """One full epoch: 2 ranks x 1 thread against 1 process x 2 threads, same settings."""
    single = Rank([mnist, "--data-dir", data, "--epochs", "1", "--threads", "2", "--log-interval", "100"],
                  {k: v for k, v in os.environ.items() if k not in ("WORLD_SIZE", "RANK")})
    single.wait(time.monotonic() + 600)
    expect(single.proc.returncode == 0, "single-process run failed", [single])
    procs = launch([mnist, "--data-dir", data, "--epochs", "1", "--log-interval", "100"], 2, free_port(),
                   extra_env={"OMP_NUM_THREADS": "1"})
    codes = finish(procs, 600)
    expect(codes == [0, 0], f"exit codes {codes}", procs)
    a1, a2 = accuracy(single.out), accuracy(procs[0].out)
    print(f"single process: accuracy {a1:.4f}; 2 ranks: {a2:.4f}; difference {abs(a1 - a2) * 100:.2f} points")
    print(single.err + procs[0].err + procs[1].err)
    expect(abs(a1 - a2) <= 0.003, "2-rank accuracy is not within 0.3 points of the single process", procs)


def nccl_refused(mnist, message, ranks):
    """Each started rank of a 2-rank --backend nccl job exits at once with code 2 (permanent),
    saying what is missing, before the rendezvous: even a rank whose peer never comes does
    not wait for it (--dist-timeout is far beyond the deadline)."""
    args = [mnist, "--backend", "nccl", "--data-dir", "unused", "--dist-timeout", "600"]
    # CUDA_VISIBLE_DEVICES="" hides any GPU, so the no-GPU path is tested on GPU machines too.
    procs = launch(args, 2, free_port(), ranks=ranks, extra_env={"CUDA_VISIBLE_DEVICES": ""})
    codes = finish(procs, 60)
    expect(codes == [2] * len(ranks), f"exit codes {codes}, expected 2 (a misconfigured job: permanent)", procs)
    for p in procs:
        expect(f"error: {message}" in p.err, f"stderr does not say 'error: {message}'", procs)
        expect(p.out == "", "a refused rank printed log lines", procs)
    print(procs[0].err)


def nccl_no_gpu(mnist, data, work):
    message = ("--backend nccl needs a CUDA GPU for every rank, but no CUDA device is present (no GPU, or no driver: "
               "see nvidia-smi); use --backend gloo to train data-parallel on the CPU")
    nccl_refused(mnist, message, ranks=[0, 1])
    nccl_refused(mnist, message, ranks=[0])


def nccl_cpu_build(mnist, data, work):
    nccl_refused(mnist, "--backend nccl trains on GPUs, which this binary cannot: it was compiled by g++ with the "
                        "CPU backend only. Run mnist_cuda, the nvcc build of this example", ranks=[0, 1])


def nccl_gpus(mnist, data, work):
    """--backend nccl on this machine's GPUs (one rank per GPU, at most 2; one rank is a valid
    NCCL job too): every rank trains on cuda:LOCAL_RANK, rank 0 reports the accuracy. Exits 77
    (skipped) where nvidia-smi lists no GPU."""
    try:
        listed = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True, timeout=60).stdout
    except (OSError, subprocess.TimeoutExpired):
        listed = ""
    gpus = listed.count("GPU ")
    if gpus == 0:
        print("SKIP: nvidia-smi lists no GPU: --backend nccl not run")
        sys.exit(77)
    world = min(gpus, 2)
    args = [mnist, "--backend", "nccl", "--data-dir", data, "--epochs", "1", "--limit-train-batches", "100",
            "--log-interval", "10", "--dist-timeout", "120"]
    procs = launch(args, world, free_port())
    codes = finish(procs, 300)
    expect(codes == [0] * world, f"exit codes {codes}", procs)
    for r, p in enumerate(procs):
        expect(f"rank {r} of {world}: tinynet mnist: model net" in p.err and f"cuda:{r}\n" in p.err,
               f"rank {r} does not say it trains on cuda:{r}", procs)
    expect(accuracy(procs[0].out) > 0.9, "rank 0's accuracy after 100 batches per rank", procs)
    print(procs[0].out + "".join(p.err for p in procs))


def main():
    scenario, mnist, data, work = sys.argv[1:5]
    os.makedirs(work, exist_ok=True)
    {"by-hand": by_hand, "torchrun-standalone": lambda *a: torchrun(*a, static=False),
     "torchrun-static": lambda *a: torchrun(*a, static=True), "kubeflow": kubeflow,
     "kill-and-resume": kill_and_resume, "sigterm": sigterm,
     "settings-mismatch": settings_mismatch, "accuracy": accuracy_vs_single, "nccl-no-gpu": nccl_no_gpu,
     "nccl-cpu-build": nccl_cpu_build, "nccl-gpus": nccl_gpus,
     "torchrun26-standalone": lambda *a: torchrun26_runs(*a, static=False),
     "torchrun26-static": lambda *a: torchrun26_runs(*a, static=True),
     "torchrun26-killed-rank": torchrun26_killed_rank, "torchrun26-restart": torchrun26_restart,
     "soak-sigstop": soak_sigstop, "torchrun-sigterm": lambda *a: torchrun_sigterm(*a, "1.13"),
     "torchrun26-sigterm": lambda *a: torchrun_sigterm(*a, "2.6")}[scenario](mnist, data, work)
    print("OK")


if __name__ == "__main__":
    main()
