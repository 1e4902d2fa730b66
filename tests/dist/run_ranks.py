#!/usr/bin/env python3
"""Multi-process tests of tinynet::dist: starts the ranks of a job on this machine (loopback),
each with RANK, WORLD_SIZE, MASTER_ADDR and MASTER_PORT, a port found free when the test
runs, and a hard deadline: a test that would hang is killed and fails.

Usage: run_ranks.py SCENARIO WORKER   (WORKER: the dist_worker binary; scenarios below)
"""
import os
import random
import signal
import socket
import subprocess
import sys
import threading
import time

DEADLINE = 120  # seconds any one job may take, whatever happens


def free_port():
    with socket.socket() as s:
        s.bind(("", 0))
        return s.getsockname()[1]


class Rank:
    """One process; its output is collected by threads so it can be watched while it runs."""

    def __init__(self, cmd, env):
        self.proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self._out, self._err = [], []
        self._threads = [threading.Thread(target=self._pump, args=(self.proc.stdout, self._out), daemon=True),
                         threading.Thread(target=self._pump, args=(self.proc.stderr, self._err), daemon=True)]
        for t in self._threads:
            t.start()
        self.ended = None

    @staticmethod
    def _pump(stream, sink):
        for line in stream:
            sink.append(line)

    @property
    def out(self):
        return "".join(self._out)

    @property
    def err(self):
        return "".join(self._err)

    def wait(self, deadline):
        try:
            self.proc.wait(timeout=max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            raise
        finally:
            for t in self._threads:
                t.join(timeout=5)
        if self.ended is None:
            self.ended = time.monotonic()
        return self.proc.returncode


def launch(worker_args, world, port, ranks=None, extra_env=None, env_of=None):
    ranks = list(range(world)) if ranks is None else ranks
    procs = []
    for r in ranks:
        env = dict(os.environ, RANK=str(r), WORLD_SIZE=str(world), MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port),
                   LOCAL_RANK=str(r))
        env.update(extra_env or {})
        if env_of:
            env.update(env_of(r))
        procs.append(Rank(worker_args, env))
    return procs


def finish(procs, limit=DEADLINE):
    deadline = time.monotonic() + limit
    codes = []
    try:
        for p in procs:
            codes.append(p.wait(deadline))
    except subprocess.TimeoutExpired:
        for p in procs:
            if p.proc.poll() is None:
                p.proc.kill()
        dump(procs)
        fail(f"the job did not finish within {limit} s: killed")
    return codes


def dump(procs):
    for i, p in enumerate(procs):
        print(f"--- process {i} (exit {p.proc.returncode}) stdout:\n{p.out}--- stderr:\n{p.err}", flush=True)


def fail(msg):
    print("FAIL: " + msg, flush=True)
    sys.exit(1)


def expect(cond, msg, procs):
    if not cond:
        dump(procs)
        fail(msg)


def wait_for_line(proc, text, limit):
    """Waits until the rank's stdout contains `text`."""
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        if text in proc.out:
            return
        if proc.proc.poll() is not None:
            break
        time.sleep(0.02)
    fail(f"no '{text}' in the output within {limit} s (got: {proc.out[-500:]!r}, stderr {proc.err[-500:]!r})")


# ---- scenarios ----------------------------------------------------------------------------

def all_ok(args, world, ok_line):
    """Runs `world` ranks of dist_worker ARGS; every one must exit 0 and print `ok_line`."""
    procs = launch(args, world, free_port())
    codes = finish(procs)
    expect(codes == [0] * world, f"{' '.join(args[1:])}: exit codes {codes}", procs)
    for p in procs:
        expect(ok_line in p.out, f"no '{ok_line}' line", procs)
    print(procs[0].out)


def collectives(worker, world):
    all_ok([worker, "collectives"], world, "collectives OK")


def ddp(worker, world, model, cap_mb=None, min_buckets=1):
    args = [worker, "ddp", "6", "4", model] + ([str(cap_mb)] if cap_mb else [])
    procs = launch(args, world, free_port())
    codes = finish(procs)
    expect(codes == [0] * world, f"exit codes {codes}", procs)
    buckets = int(procs[0].out.split("buckets: ")[1].split()[0])
    expect(buckets >= min_buckets, f"{buckets} buckets, expected at least {min_buckets}", procs)
    print(procs[0].out)


def ddp_no_sync(worker, world):
    """3 micro-batches per step, the first 2 under no_sync(): gradients stay different on each
    rank until the third backward, and training ends where one process on all rows does."""
    all_ok([worker, "no_sync", "4", "4", "3"], world, "no_sync OK")


def ddp_buffers(worker, world):
    """BatchNorm running statistics: identical on every rank after a forward with
    broadcast_buffers (the default), different without it."""
    for setting in ("on", "off"):
        all_ok([worker, "buffers", setting], world, "buffers OK")


def ddp_unused(worker, world):
    """find_unused_parameters with a head that only rank 0 uses: training matches one process
    on the mean of the ranks' losses, parameters identical on every rank."""
    all_ok([worker, "unused", "4", "4"], world, "unused OK")


def lost_peer(worker, world, sig, expected_code, timeout_s):
    """Rank 1 is killed (SIGKILL) or frozen (SIGSTOP) mid-training: every other rank must exit
    with `expected_code` within the timeout, naming the failed operation and a rank."""
    procs = launch([worker, "train", "100000", "--timeout", str(timeout_s)], world, free_port())
    victim = procs[1]
    wait_for_line(victim, "step 20", 60)
    os.kill(victim.proc.pid, sig)
    hit = time.monotonic()
    survivors = [p for i, p in enumerate(procs) if i != 1]
    codes = finish(survivors, limit=timeout_s + 30)
    elapsed = max(p.ended for p in survivors) - hit
    if sig == signal.SIGSTOP:
        victim.proc.kill()
    victim.proc.wait()
    # A survivor whose own peer died sees "connection closed" (200); one that was waiting
    # on another survivor may time out first (201). Both are retryable.
    expect(all(c in expected_code for c in codes), f"survivors' exit codes {codes}, expected {expected_code}", procs)
    expect(elapsed < timeout_s + 10, f"survivors took {elapsed:.1f} s (timeout {timeout_s} s)", procs)
    for p in survivors:
        expect("error: " in p.err and "rank " in p.err, "no error naming a rank", procs)
        expect(any(op in p.err for op in ("allreduce", "barrier", "allgather")), "no failed operation named", procs)
    print(f"survivors exited {codes} {elapsed:.1f} s after the signal; rank 0 said:\n{survivors[0].err}")


def start_up_error(worker, world, args, expected_codes, message, ranks=None, env_of=None, extra_env=None, limit=60,
                   rank0_only=False):
    procs = launch([worker] + args, world, free_port(), ranks=ranks, env_of=env_of, extra_env=extra_env)
    codes = finish(procs, limit)
    expect(all(c in expected_codes for c in codes), f"exit codes {codes}, expected {expected_codes}", procs)
    for p in procs[:1] if rank0_only else procs:
        expect(message in p.err, f"no '{message}' in stderr", procs)
    print(f"exit codes {codes}; rank 0 said:\n{procs[0].err}")


def duplicate_rank(worker):
    # Both rank-1 processes must reach rank 0's store for one to be refused. Rank 0 keeps it
    # up 5 s after the job has formed: on a loaded machine the second one may still be
    # retrying its connection (every 100 ms) when the first has joined.
    port = free_port()
    procs = launch([worker, "join", "5", "--timeout", "30"], 2, port, ranks=[0, 1, 1])
    codes = finish(procs, 60)
    expect(sorted(codes)[:1] == [0] and 2 in codes, f"exit codes {codes}: expected one duplicate refused (2)", procs)
    expect(any("already joined with RANK=1" in p.err for p in procs), "duplicate not named", procs)
    print(f"exit codes {codes}")


def duplicate_rank0(worker):
    """Two processes with RANK=0: the one that finds the port taken asks the store there and,
    seeing a rank 0 joined, refuses as a misconfigured job (2), not as a port clash (200)."""
    port = free_port()
    procs = launch([worker, "join", "2", "--timeout", "30"], 2, port, ranks=[0, 0, 1])
    codes = finish(procs, 60)
    expect(sorted(codes) == [0, 0, 2], f"exit codes {codes}: expected the job to run and one RANK=0 refused (2)",
           procs)
    expect(any("another process already joined with RANK=0 and hosts the store on port " + str(port) in p.err
               for p in procs), "the second RANK=0 not named", procs)
    print(f"exit codes {codes}")


def hostile(worker):
    """Garbage, an oversized length, half-open connections and a port scan against rank 0's
    store while a job trains: the job must finish and rank 0 log the drops."""
    port = free_port()
    procs = launch([worker, "train", "400", "--timeout", "30"], 2, port)
    wait_for_line(procs[0], "step 5", 60)
    rng = random.Random(1)
    held = []
    for kind in ["random", "oversized", "half-open", "scan", "scan", "scan", "random"]:
        s = socket.create_connection(("127.0.0.1", port), timeout=5)
        if kind == "random":
            s.sendall(bytes(rng.randrange(6, 256) for _ in range(2048)))
        elif kind == "oversized":
            s.sendall(b"\x00" + (1 << 62).to_bytes(8, "little"))
        elif kind == "half-open":
            s.sendall(b"\x05" + (1).to_bytes(8, "little") + (50).to_bytes(8, "little") + b"abc")
            held.append(s)
            continue
        s.close()
    # A port scan that never sends anything, kept open past the end of the job.
    held.append(socket.create_connection(("127.0.0.1", port), timeout=5))
    codes = finish(procs)
    for s in held:
        s.close()
    expect(codes == [0, 0], f"exit codes {codes}: the job was disturbed", procs)
    drops = procs[0].err.count("dropped connection")
    expect(drops >= 3, f"rank 0 logged {drops} dropped connections, expected at least 3", procs)
    print(procs[0].err)


def torch_store(worker):
    """Interoperability with PyTorch 1.13's TCPStore, both ways: the ranks as clients of a
    torch server under the agent-store prefix (torchrun's static rendezvous), and a torch
    client using the store rank 0 hosts."""
    from datetime import timedelta
    try:
        from torch.distributed import TCPStore
    except ImportError:
        print("SKIP: PyTorch (python3-torch) is not installed: no TCPStore to test against")
        return
    port = free_port()
    server = TCPStore("127.0.0.1", port, None, True, timedelta(seconds=30), False)
    env = {"TORCHELASTIC_USE_AGENT_STORE": "True", "TORCHELASTIC_RESTART_COUNT": "3"}
    procs = launch([worker, "join", "--timeout", "20"], 2, port, extra_env=env)
    codes = finish(procs, 60)
    expect(codes == [0, 0], f"exit codes {codes} with torch's store", procs)
    # The tinynet ranks registered under the launcher's attempt prefix (torch's client
    # puts a "/" before every key).
    expect(server.get("worker/attempt_3/tinynet/world_size/1") == b"2", "keys not under the attempt prefix", procs)

    port = free_port()
    procs = launch([worker, "train", "300", "--timeout", "30"], 2, port)
    wait_for_line(procs[0], "step 1", 60)
    client = TCPStore("127.0.0.1", port, None, False, timedelta(seconds=10), False)
    client.set("from_torch", b"hello")
    assert client.get("from_torch") == b"hello"
    assert client.add("counter", 5) == 5 and client.add("counter", 2) == 7
    client.wait(["from_torch"])
    assert client.get("tinynet/world_size/0") == b"2"
    codes = finish(procs)
    expect(codes == [0, 0], f"exit codes {codes} with a torch client attached", procs)
    print("torch 1.13 TCPStore: tinynet ranks joined through its server; its client used tinynet's server")


def torch26_store(worker):
    """The same both ways with PyTorch 2.6's TCPStore (its classic server: Debian's build has
    no libuv), from the trixie chroot (trixie_run.sh; skipped with the reason without it):
    here the ranks must speak the 2.x dialect, and tinynet's server must serve a 2.x client."""
    here = os.path.dirname(os.path.abspath(__file__))
    trixie = ["bash", os.path.join(here, "trixie_run.sh")]
    check = subprocess.run(trixie + ["--check"], capture_output=True, text=True)
    if check.returncode != 0:
        print(check.stdout + check.stderr, flush=True)
        sys.exit(77)
    peer = ["python3", "/host" + os.path.join(here, "torch_store_peer.py")]
    key = "worker/attempt_3/tinynet/world_size/1"
    port = free_port()
    server = Rank(trixie + peer + ["server", str(port), key, "30"], dict(os.environ))
    try:
        wait_for_line(server, "READY", 120)
        env = {"TORCHELASTIC_USE_AGENT_STORE": "True", "TORCHELASTIC_RESTART_COUNT": "3"}
        procs = launch([worker, "join", "--timeout", "20"], 2, port, extra_env=env)
        codes = finish(procs, 60)
        expect(codes == [0, 0], f"exit codes {codes} with torch 2.6's store", procs + [server])
        for r, p in enumerate(procs):
            expect(f"rank {r}: joined the launcher's store at 127.0.0.1:{port} (PyTorch 2.x TCPStore protocol)" in p.err,
                   f"rank {r} did not say it joined the store in the 2.x dialect", procs + [server])
        wait_for_line(server, f"{key}=2", 30)
        print(server.out.strip())
    finally:
        server.proc.kill()
        server.proc.wait()

    # Rank 0 keeps its store up 60 s after the rendezvous: the chroot's python takes a few
    # seconds to import torch.
    port = free_port()
    procs = launch([worker, "join", "60", "--timeout", "30"], 2, port)
    wait_for_line(procs[0], "joined as rank 0", 60)
    client = Rank(trixie + peer + ["client", str(port)], dict(os.environ))
    code = client.wait(time.monotonic() + 120)
    expect(code == 0 and "all commands OK" in client.out, f"torch 2.6 client exited {code}", procs + [client])
    expect(procs[0].proc.poll() is None, "rank 0 (the store's host) ended while the torch client used it",
           procs + [client])
    for p in procs:  # done: no need to sit out the hold
        p.proc.kill()
        p.wait(time.monotonic() + 10)
    expect("dropped connection" not in procs[0].err, "the store dropped a connection", procs + [client])
    print(client.out.strip())
    print("torch 2.6 TCPStore: tinynet ranks joined through its server; its client used tinynet's server")


def file_store(worker):
    """file:// rendezvous through a directory (no MASTER_ADDR/PORT), then the same directory
    again: a stale store must be refused, not half-read."""
    import tempfile
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "rdzv")
        no_master = {"MASTER_ADDR": "", "MASTER_PORT": ""}
        procs = launch([worker, "collectives", "--init", "file://" + path], 2, 0, extra_env=no_master)
        codes = finish(procs)
        expect(codes == [0, 0], f"exit codes {codes} with file://", procs)
        procs = launch([worker, "join", "--timeout", "5", "--init", "file://" + path], 2, 0, extra_env=no_master)
        codes = finish(procs)
        expect(all(c == 2 for c in codes), f"exit codes {codes} reusing a file:// store, expected 2", procs)
        expect("earlier run" in procs[0].err + procs[1].err, "stale store not named", procs)
        print(procs[0].err + procs[1].err)


def snippet(program, data):
    """docs/distributed.md's example program as a 2-rank job."""
    procs = launch([program, data], 2, free_port(), extra_env={"OMP_NUM_THREADS": "1"})
    codes = finish(procs, 300)
    expect(codes == [0, 0], f"exit codes {codes}", procs)
    print(procs[0].out)


def main():
    scenario, worker = sys.argv[1], sys.argv[2]
    mnist_codes = {"bad_input": 2, "peer_lost": 200, "timeout": 201}
    if scenario == "collectives-2":
        collectives(worker, 2)
    elif scenario == "collectives-3":
        collectives(worker, 3)
    elif scenario == "ddp-seq-2":
        ddp(worker, 2, "seq")
    elif scenario == "ddp-free-3-buckets":
        ddp(worker, 3, "free", cap_mb=0.002, min_buckets=3)
    elif scenario == "ddp-no-sync-3":
        ddp_no_sync(worker, 3)
    elif scenario == "ddp-buffers-2":
        ddp_buffers(worker, 2)
    elif scenario == "ddp-unused-3":
        ddp_unused(worker, 3)
    elif scenario == "kill-peer-3":
        lost_peer(worker, 3, signal.SIGKILL, (mnist_codes["peer_lost"], mnist_codes["timeout"]), 10)
    elif scenario == "stop-peer-2":
        lost_peer(worker, 2, signal.SIGSTOP, (mnist_codes["timeout"],), 4)
    elif scenario == "model-mismatch":
        start_up_error(worker, 2, ["mismatch", "1"], (2,), "model differs from rank")
    elif scenario == "bucket-mismatch":
        start_up_error(worker, 3, ["buckets", "2"], (2,), "model differs from rank")
    elif scenario == "world-size-mismatch":
        start_up_error(worker, 2, ["join"], (2,), "WORLD_SIZE", env_of=lambda r: {"WORLD_SIZE": "3" if r == 1 else "2"})
    elif scenario == "missing-rank":
        # Rank 0 names the missing rank when its wait times out; rank 1 may see rank 0's
        # store go away first. Both exit retryable (a pod may just have been slow to start).
        start_up_error(worker, 3, ["join", "--timeout", "3"], (mnist_codes["timeout"], mnist_codes["peer_lost"]),
                       "rank(s) 2 of WORLD_SIZE=3", ranks=[0, 1], rank0_only=True)
    elif scenario == "duplicate-rank":
        duplicate_rank(worker)
    elif scenario == "duplicate-rank0":
        duplicate_rank0(worker)
    elif scenario == "bad-env":
        start_up_error(worker, 2, ["join"], (2,), "MASTER_PORT='abc' is not an integer", extra_env={"MASTER_PORT": "abc"})
        start_up_error(worker, 1, ["join"], (2,), "RANK=1 is not below WORLD_SIZE=1", ranks=[1])
    elif scenario == "snippet":
        snippet(worker, sys.argv[3])
    elif scenario == "file-store":
        file_store(worker)
    elif scenario == "hostile":
        hostile(worker)
    elif scenario == "torch-store":
        torch_store(worker)
    elif scenario == "torch26-store":
        torch26_store(worker)
    else:
        fail("unknown scenario " + scenario)
    print("OK")


if __name__ == "__main__":
    main()
