#!/usr/bin/env python3
"""PyTorch's own TCPStore facing tinynet's store, for run_ranks.py's torch26-store scenario;
run by a python3 that has torch (2.6, in the trixie chroot).

  torch_store_peer.py server PORT KEY HOLD_S  hosts a TCPStore server (torchrun's agent store
                                              stand-in), prints READY, waits for KEY, prints
                                              "KEY=VALUE", then keeps serving HOLD_S seconds
  torch_store_peer.py client PORT             uses the store at PORT (tinynet's) with every
                                              command a 2.x client has, checks each reply
"""
import sys
import time
from datetime import timedelta

import torch
from torch.distributed import TCPStore


def server(port, key, hold):
    store = TCPStore("127.0.0.1", port, None, True, timedelta(seconds=60), wait_for_workers=False)
    print(f"READY torch {torch.__version__}, libuv backend: {store.libuvBackend}", flush=True)
    store.wait([key])
    print(f"{key}={store.get(key).decode()}", flush=True)
    time.sleep(hold)


def client(port):
    c = TCPStore("127.0.0.1", port, None, False, timedelta(seconds=20), wait_for_workers=False)
    checks = []

    def check(what, got, want):
        checks.append(what)
        if got != want:
            sys.exit(f"FAIL: {what}: got {got!r}, expected {want!r}")

    c.set("from_torch", b"hello")
    check("get", c.get("from_torch"), b"hello")
    check("add", (c.add("counter", 5), c.add("counter", 2)), (5, 7))
    check("check", (c.check(["from_torch"]), c.check(["from_torch", "absent"])), (True, False))
    c.wait(["from_torch", "counter"])
    check("tinynet's key", c.get("tinynet/world_size/0"), b"2")
    check("compare_set", c.compare_set("from_torch", b"hello", b"swapped"), b"swapped")
    check("compare_set, stale", c.compare_set("from_torch", b"hello", b"again"), b"swapped")
    c.append("log", b"a")
    c.append("log", b"bc")
    c.multi_set(["m1", "m2"], [b"1", b"2"])
    check("multi_get", c.multi_get(["log", "m2", "m1"]), [b"abc", b"2", b"1"])
    n = c.num_keys()
    check("delete_key", (c.delete_key("m1"), c.delete_key("m1")), (True, False))
    check("num_keys", c.num_keys(), n - 1)
    start = time.monotonic()
    try:
        c.wait(["never_set"], timedelta(milliseconds=500))
        sys.exit("FAIL: wait for a key nobody sets returned")
    except Exception as e:  # torch raises DistStoreError after CANCEL_WAIT
        checks.append(f"wait timeout ({type(e).__name__} after {time.monotonic() - start:.1f} s)")
    check("the connection after CANCEL_WAIT", c.get("log"), b"abc")
    print(f"torch {torch.__version__} client: " + ", ".join(checks) + ": all commands OK", flush=True)


if __name__ == "__main__":
    if sys.argv[1] == "server":
        server(int(sys.argv[2]), sys.argv[3], float(sys.argv[4]))
    else:
        client(int(sys.argv[2]))
