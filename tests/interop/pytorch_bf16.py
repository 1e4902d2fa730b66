#!/usr/bin/env python3
"""bfloat16 state_dicts both ways, against the real PyTorch (Debian's python3-torch).

1. tinynet writes every bfloat16 bit pattern; torch.load(weights_only=True) must give a
   torch.bfloat16 tensor with the same bits, and 1, 0.1, -3.5 rounded as torch rounds them.
2. PyTorch saves bfloat16 tensors (one of them a transposed view); tinynet must read the
   same bits in row-major order.

Usage: pytorch_bf16.py BF16_STATE_DICT_BIN WORK_DIR
Prints "SKIP: ..." and exits 0 when torch is not importable (the test's skip pattern)."""
import pathlib
import subprocess
import sys

try:
    import torch
except ImportError as e:
    print(f"SKIP: PyTorch is not importable by {sys.executable} ({e}); install python3-torch")
    sys.exit(0)

tool, work = sys.argv[1], pathlib.Path(sys.argv[2])
work.mkdir(parents=True, exist_ok=True)


def bits(t):
    return [v & 0xFFFF for v in t.contiguous().view(torch.int16).flatten().tolist()]


ours = work / "tinynet_bf16.pt"
subprocess.run([tool, "write", str(ours)], check=True)
sd = torch.load(ours, weights_only=True)
assert sd["all"].dtype == torch.bfloat16 and sd["all"].shape == (256, 256), (sd["all"].dtype, sd["all"].shape)
assert bits(sd["all"]) == list(range(65536)), "bit patterns differ"
want = torch.tensor([1.0, 0.1, -3.5]).to(torch.bfloat16)
assert bits(sd["v"]) == bits(want), (bits(sd["v"]), bits(want))

theirs = work / "torch_bf16.pt"
x = torch.tensor([1.0, 0.1, -3.5, float("inf"), 1.0 + 2**-8, 1.0 + 3 * 2**-8]).to(torch.bfloat16)
y = torch.arange(12, dtype=torch.float32).reshape(3, 4).t().to(torch.bfloat16)
assert y.stride() == (1, 4), y.stride()  # a view: tinynet reads it through its strides
torch.save({"x": x, "y": y}, theirs)
out = subprocess.run([tool, "read", str(theirs)], check=True, capture_output=True, text=True).stdout.splitlines()
expected = [
    "x bfloat16 [6] " + " ".join(f"{b:04x}" for b in bits(x)),
    "y bfloat16 [4, 3] " + " ".join(f"{b:04x}" for b in bits(y)),
]
if out != expected:
    sys.exit("FAIL: tinynet read\n  " + "\n  ".join(out) + "\nexpected\n  " + "\n  ".join(expected))
print(f"OK: PyTorch {torch.__version__} and tinynet agree on every bfloat16 bit, both ways")
