#!/usr/bin/env python3
"""PyTorch state_dicts both ways, against the real PyTorch (Debian's python3-torch).

1. PyTorch trains the MNIST example's Net for 100 batches and saves its state_dict;
   tinynet (interop_logits, and the example's --evaluate) reads it and must predict the
   same class as PyTorch for every one of the 10,000 test images.
2. The example trains 100 batches and writes --save-pytorch; PyTorch loads it with
   torch.load(weights_only=True) into Net and its outputs on 1,000 test images must be
   within 1e-5 of tinynet's.

Usage: pytorch_roundtrip.py [--torch-version V --host-root DIR --host-exec CMD] MNIST_BIN LOGITS_BIN DATA_DIR WORK_DIR
Prints "SKIP: ..." and exits 0 when torch is not importable (the test's skip pattern).

PyTorch 2.6 runs in the Debian 13 chroot (tests/dist/trixie_run.sh python3 ...): there the
paths given are the host's, the script reads and writes them under --host-root (/host), runs
the host's binaries through --host-exec (tinynet-host-exec), and --torch-version 2.6 makes
any other torch, or none, a failure rather than a skip."""
import argparse
import gzip
import pathlib
import re
import subprocess
import sys
import time

parser = argparse.ArgumentParser()
parser.add_argument("--torch-version", help="fail unless torch.__version__ starts with this")
parser.add_argument("--host-root", default="/", help="where the host's root is seen from here")
parser.add_argument("--host-exec", help="runs a host binary from here (the chroot's tinynet-host-exec)")
parser.add_argument("mnist_bin")
parser.add_argument("logits_bin")
parser.add_argument("data_dir")
parser.add_argument("work")
args = parser.parse_args()

try:
    import numpy as np
    import torch
    import torch.nn as nn
    import torch.nn.functional as F
except ImportError as e:
    if args.torch_version:
        sys.exit(f"FAIL: PyTorch {args.torch_version} is not importable by {sys.executable} ({e})")
    print(f"SKIP: PyTorch is not importable by {sys.executable} ({e}); install python3-torch")
    sys.exit(0)
if args.torch_version and not torch.__version__.startswith(args.torch_version):
    sys.exit(f"FAIL: expected PyTorch {args.torch_version}, {sys.executable} has {torch.__version__}")

# Host paths: handed to the host's binaries as they are, opened here under --host-root.
mnist_bin, logits_bin, data_dir, work = args.mnist_bin, args.logits_bin, pathlib.Path(args.data_dir), pathlib.Path(args.work)
host_exec = [args.host_exec] if args.host_exec else []


def here(path):
    """A host path as this process opens it."""
    return path if args.host_root == "/" else pathlib.Path(args.host_root) / path.relative_to("/")


here(work).mkdir(parents=True, exist_ok=True)
torch.set_num_threads(2)
MEAN, STD = 0.1307, 0.3081


class Net(nn.Module):
    """PyTorch's MNIST example network, as examples/mnist/main.py defines it."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 32, 3, 1)
        self.conv2 = nn.Conv2d(32, 64, 3, 1)
        self.dropout1 = nn.Dropout(0.25)
        self.dropout2 = nn.Dropout(0.5)
        self.fc1 = nn.Linear(9216, 128)
        self.fc2 = nn.Linear(128, 10)

    def forward(self, x):
        x = F.relu(self.conv1(x))
        x = F.relu(self.conv2(x))
        x = F.max_pool2d(x, 2)
        x = self.dropout1(x)
        x = torch.flatten(x, 1)
        x = F.relu(self.fc1(x))
        x = self.dropout2(x)
        x = self.fc2(x)
        return F.log_softmax(x, dim=1)


def idx(name, offset):
    with gzip.open(here(data_dir) / "mnist" / name) as f:
        return np.frombuffer(f.read(), dtype=np.uint8, offset=offset)


def images(name):
    x = torch.from_numpy(idx(name, 16).astype(np.float32) / 255.0).reshape(-1, 1, 28, 28)
    return (x - MEAN) / STD


def run(*command):
    """Runs a host binary; paths in `command` are host paths."""
    started = time.time()
    command = host_exec + [str(a) for a in command]
    r = subprocess.run(command, capture_output=True, text=True, timeout=600)
    print(f"$ {' '.join(command)}  ({time.time() - started:.1f} s)\n{r.stdout}{r.stderr}", end="")
    if r.returncode != 0:
        sys.exit(f"FAIL: exit code {r.returncode}")
    return r.stdout


def outputs(net, x):
    net.eval()
    with torch.no_grad():
        return torch.cat([net(x[i:i + 1000]) for i in range(0, len(x), 1000)])


def tinynet_outputs(model_file, n):
    out = work / "tinynet_outputs.bin"
    run(logits_bin, model_file, data_dir, out, n)
    return torch.from_numpy(np.fromfile(here(out), dtype="<f4").reshape(n, 10))


test_x, test_y = images("t10k-images-idx3-ubyte.gz"), torch.from_numpy(idx("t10k-labels-idx1-ubyte.gz", 8).astype(np.int64))
print(f"torch {torch.__version__}")
failures = 0

# 1. PyTorch -> tinynet.
torch.manual_seed(1)
train_x, train_y = images("train-images-idx3-ubyte.gz"), torch.from_numpy(idx("train-labels-idx1-ubyte.gz", 8).astype(np.int64))
net = Net()
optimizer = torch.optim.Adadelta(net.parameters(), lr=1.0)
order = torch.randperm(len(train_x))
net.train()
for b in range(100):
    rows = order[b * 64:(b + 1) * 64]
    optimizer.zero_grad()
    loss = F.nll_loss(net(train_x[rows]), train_y[rows])
    loss.backward()
    optimizer.step()
print(f"PyTorch trained 100 batches, last loss {loss.item():.4f}")
torch.save(net.state_dict(), here(work) / "pytorch_net.pt")
theirs = outputs(net, test_x)
ours = tinynet_outputs(work / "pytorch_net.pt", len(test_x))
same = int((theirs.argmax(1) == ours.argmax(1)).sum())
correct = int((theirs.argmax(1) == test_y).sum())
print(f"PyTorch -> tinynet: same prediction on {same}/10000 test images; max |output difference| "
      f"{(theirs - ours).abs().max().item():.3g}; PyTorch's accuracy {correct}/10000")
if same != 10000:
    failures += 1
    print("FAIL: tinynet and PyTorch predict differently")
evaluated = run(mnist_bin, "--evaluate", work / "pytorch_net.pt", "--data-dir", data_dir, "--threads", "2")
m = re.search(r"Test accuracy: (\d+)/10000", evaluated)
if not m or int(m.group(1)) != correct:
    failures += 1
    print(f"FAIL: the example's --evaluate of the PyTorch file does not report PyTorch's {correct}/10000")

# 2. tinynet -> PyTorch.
run(mnist_bin, "--data-dir", data_dir, "--epochs", "1", "--limit-train-batches", "100", "--threads", "2",
    "--log-interval", "50", "--save-model", "--model-path", work / "tinynet_net.tnet",
    "--save-pytorch", work / "tinynet_net.pt")
loaded = Net()
loaded.load_state_dict(torch.load(here(work) / "tinynet_net.pt", weights_only=True))
theirs = outputs(loaded, test_x[:1000])
ours = tinynet_outputs(work / "tinynet_net.tnet", 1000)
diff = (theirs - ours).abs().max().item()
same = int((theirs.argmax(1) == ours.argmax(1)).sum())
print(f"tinynet -> PyTorch (weights_only=True): max |output difference| on 1000 test images {diff:.3g} "
      f"(tolerance 1e-5), same prediction on {same}/1000")
if not diff <= 1e-5:
    failures += 1
    print("FAIL: PyTorch's outputs differ from tinynet's by more than 1e-5")
sys.exit(1 if failures else 0)
