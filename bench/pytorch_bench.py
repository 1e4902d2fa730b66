#!/usr/bin/python3
"""PyTorch's side of bench/run.py: the same training work as train_bench (the MNIST example's
networks on real MNIST held in memory, the same batches, warm-up then timed batches), or
an SGEMM through PyTorch's BLAS; prints one JSON object.

  /usr/bin/python3 bench/pytorch_bench.py --model net --threads 2 --batches 100 --data-dir DIR [--tuned] [--autocast bf16]
  /usr/bin/python3 bench/pytorch_bench.py --sgemm 2048 --threads 2 --tuned

--tuned keeps OpenBLAS from starting threads of its own next to PyTorch's
(OPENBLAS_NUM_THREADS=1), which is how PyTorch 1.13 from Debian is fastest on few cores.
--autocast bf16 runs the forward and the loss inside torch.autocast('cpu', dtype=torch.bfloat16)
(convolutions and linear layers in bfloat16, weights kept in float32), the backward and the
optimizer step outside it, as PyTorch's documentation recommends; the JSON's "autocast" says
which ("bf16" or null) and "forward_dtype" the dtype autocast gave the first convolution."""
import argparse
import json
import pathlib
import resource
import sys
import time

from torch_tuning import blas_library, impl_name, reexec_if_tuned

parser = argparse.ArgumentParser()
parser.add_argument("--model", default="net", choices=["net", "lenet", "resnet20"])
parser.add_argument("--threads", type=int, default=2)
parser.add_argument("--batches", type=int, default=100)
parser.add_argument("--warmup", type=int, default=10)
parser.add_argument("--data-dir", default="data")
parser.add_argument("--tuned", action="store_true")
parser.add_argument("--sgemm", type=int, default=0)
parser.add_argument("--device", default="cpu", help="cpu or cuda (data and model held on the device)")
parser.add_argument("--autocast", default="off", choices=["off", "bf16"],
                    help="bf16: forward and loss under torch.autocast(dtype=torch.bfloat16)")
args = parser.parse_args()
reexec_if_tuned(args.tuned)

import numpy as np  # noqa: E402  (imported after the re-exec above)
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from torch_models import LeNet, Net, ResNet20, find, read_idx, resnet20_macs  # noqa: E402

torch.set_num_threads(args.threads)
torch.manual_seed(1)
autocast = None if args.autocast == "off" else args.autocast
impl = impl_name(args.tuned, autocast)

if args.sgemm:
    n = args.sgemm
    a, b = torch.randn(n, n), torch.randn(n, n)
    torch.mm(a, b)
    times = []
    for _ in range(5):
        t0 = time.perf_counter()
        torch.mm(a, b)
        times.append(time.perf_counter() - t0)
    best = min(times)
    print(json.dumps({"impl": impl, "sgemm": n, "threads": args.threads, "gflops": round(2 * n ** 3 / best / 1e9, 1),
                      "blas": blas_library()}))
    sys.exit(0)


folder = pathlib.Path(args.data_dir) / "mnist"
images = torch.from_numpy(read_idx(find(folder, "train-images-idx3-ubyte")).astype(np.float32) / 255.0)
images = ((images - 0.1307) / 0.3081).unsqueeze(1).contiguous()
labels = torch.from_numpy(read_idx(find(folder, "train-labels-idx1-ubyte")).astype(np.int64))


if args.model == "net":
    model, batch, macs = Net(), 64, 32 * 9 * 26 * 26 + 64 * 32 * 9 * 24 * 24 + 9216 * 128 + 128 * 10
elif args.model == "lenet":
    model, batch, macs = LeNet(), 100, 20 * 25 * 24 * 24 + 50 * 20 * 25 * 8 * 8 + 800 * 500 + 500 * 10
else:
    model, batch, macs = ResNet20(), 128, resnet20_macs(28, 28)
    assert sum(p.numel() for p in model.parameters()) == 272186  # as tinynet's ResNet20<1, 28, 28>
device = torch.device(args.device)
model, images, labels = model.to(device), images.to(device), labels.to(device)
if args.model == "net":
    opt = torch.optim.Adadelta(model.parameters(), lr=1.0)
elif args.model == "lenet":
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
else:
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, nesterov=True, weight_decay=5e-4)
loss_fn = F.cross_entropy if args.model == "resnet20" else F.nll_loss  # ResNet20 gives logits
model.train()
n = len(images)


def sync():
    if device.type == "cuda":
        torch.cuda.synchronize()


def step(s):
    idx = torch.arange(s * batch, (s + 1) * batch, device=device) % n  # the same samples train_bench uses
    opt.zero_grad()
    with torch.autocast(device.type, dtype=torch.bfloat16, enabled=autocast == "bf16"):
        loss = loss_fn(model(images[idx]), labels[idx])
    loss.backward()  # outside autocast; its ops follow the dtypes the forward recorded
    opt.step()


# The dtype autocast gives the first convolution's output (float32 without autocast).
with torch.no_grad(), torch.autocast(device.type, dtype=torch.bfloat16, enabled=autocast == "bf16"):
    forward_dtype = str(model.conv1(images[:1]).dtype).replace("torch.", "")


for s in range(args.warmup):
    step(s)
sync()
t0 = time.perf_counter()
for s in range(args.warmup, args.warmup + args.batches):
    step(s)
sync()
secs = time.perf_counter() - t0
imgs = args.batches * batch
print(json.dumps({
    "impl": impl, "autocast": autocast, "forward_dtype": forward_dtype, "torch": torch.__version__, "device": args.device, "model": args.model, "threads": torch.get_num_threads(), "batch": batch, "batches": args.batches,
    "seconds": round(secs, 4), "images_per_s": round(imgs / secs, 1), "gflops": round(imgs * 6 * macs / secs / 1e9, 2),
    "epoch_s": round(60000 / (imgs / secs), 2),
    "max_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)}))
