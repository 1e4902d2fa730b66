#!/usr/bin/python3
"""PyTorch's side of bench/op_bench: forward and backward of single ops at the MNIST
examples' shapes and of ResNet-20's convolutions, batch norms and residual sums, median
milliseconds; one JSON object per op.

  /usr/bin/python3 bench/pytorch_op_bench.py --threads 2 [--reps 30] [--warmup 5] [--tuned] [--only net.conv2] [--autocast bf16]

--tuned: OPENBLAS_NUM_THREADS=1 (bench/torch_tuning.py).
--autocast bf16: only the convolutions and linear layers (the ops CPU autocast runs in
bfloat16), each forward inside torch.autocast('cpu', dtype=torch.bfloat16) from float32
inputs and weights (so the casts are timed too, as in autocast training), the backward
outside it, and ResNet-20's batch norms (from a bfloat16 input, a convolution's output
there) and residual sums; the JSON gets "autocast" and the output's "dtype"."""
import argparse
import json
import statistics
import time

from torch_tuning import impl_name, reexec_if_tuned

parser = argparse.ArgumentParser()
parser.add_argument("--threads", type=int, default=2)
parser.add_argument("--reps", type=int, default=30)
parser.add_argument("--warmup", type=int, default=5)
parser.add_argument("--tuned", action="store_true")
parser.add_argument("--only", default="")
parser.add_argument("--autocast", default="off", choices=["off", "bf16"])
args = parser.parse_args()
reexec_if_tuned(args.tuned)

import torch  # noqa: E402  (imported after the re-exec above)
import torch.nn.functional as F  # noqa: E402

torch.set_num_threads(args.threads)
torch.manual_seed(1)
autocast = None if args.autocast == "off" else args.autocast
impl = impl_name(args.tuned, autocast)


def time_op(name, shapes, forward, bf16_input=False):
    if args.only not in name or (autocast and forward not in product_ops and forward not in activation_ops):
        return
    inputs = [torch.randn(*s, requires_grad=True) for s in shapes]
    fwd, bwd, gy = [], [], None
    for r in range(args.warmup + args.reps):
        for t in inputs:
            t.grad = None
        # A bfloat16 first input, cast before the forward is timed (the backward's time
        # includes the cast's), as op_bench does.
        given = [inputs[0].to(torch.bfloat16)] + inputs[1:] if bf16_input and autocast else inputs
        t0 = time.perf_counter()
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=autocast == "bf16"):
            y = forward(given)
        f = time.perf_counter() - t0
        if gy is None and y.dim() > 0:
            gy = torch.randn_like(y)
        t0 = time.perf_counter()
        y.backward(gy if y.dim() > 0 else None)
        b = time.perf_counter() - t0
        if r >= args.warmup:
            fwd.append(f * 1e3)
            bwd.append(b * 1e3)
    print(json.dumps({"impl": impl, "autocast": autocast, "dtype": str(y.dtype).replace("torch.", ""),
                      "op": name, "threads": torch.get_num_threads(),
                      "forward_ms": round(statistics.median(fwd), 4), "backward_ms": round(statistics.median(bwd), 4)}),
          flush=True)


def labels(n):
    return torch.tensor([(i * 7) % 10 for i in range(n)])


product_ops = set()  # the ops autocast runs in bfloat16, timed under it
activation_ops = set()  # and the ops timed under it beside them (ResNet-20's)


def products(forward):
    product_ops.add(forward)
    return forward


conv = products(lambda t: F.conv2d(t[0], t[1], t[2]))
lin = products(lambda t: F.linear(t[0], t[1], t[2]))
pool = lambda t: F.max_pool2d(t[0], 2)  # noqa: E731
relu = lambda t: F.relu(t[0])  # noqa: E731
drop = lambda t: F.dropout(t[0], 0.25, training=True)  # noqa: E731
t64, t100 = labels(64), labels(100)
time_op("net.conv1", [(64, 1, 28, 28), (32, 1, 3, 3), (32,)], conv)
time_op("net.conv2", [(64, 32, 26, 26), (64, 32, 3, 3), (64,)], conv)
time_op("net.relu", [(64, 64, 24, 24)], relu)
time_op("net.max_pool2d", [(64, 64, 24, 24)], pool)
time_op("net.dropout", [(64, 64, 12, 12)], drop)
time_op("net.fc1", [(64, 9216), (128, 9216), (128,)], lin)
time_op("net.fc2", [(64, 128), (10, 128), (10,)], lin)
time_op("net.log_softmax_nll", [(64, 10)], lambda t: F.nll_loss(F.log_softmax(t[0], 1), t64))
time_op("lenet.conv1", [(100, 1, 28, 28), (20, 1, 5, 5), (20,)], conv)
time_op("lenet.max_pool2d_1", [(100, 20, 24, 24)], pool)
time_op("lenet.conv2", [(100, 20, 12, 12), (50, 20, 5, 5), (50,)], conv)
time_op("lenet.max_pool2d_2", [(100, 50, 8, 8)], pool)
time_op("lenet.fc1", [(100, 800), (500, 800), (500,)], lin)
time_op("lenet.fc2", [(100, 500), (10, 500), (10,)], lin)
time_op("lenet.log_softmax_nll", [(100, 10)], lambda t: F.nll_loss(F.log_softmax(t[0], 1), t100))


def conv_sp(stride, padding):
    return products(lambda t: F.conv2d(t[0], t[1], None, stride, padding))


time_op("resnet20.conv_28", [(128, 16, 28, 28), (16, 16, 3, 3)], conv_sp(1, 1))
time_op("resnet20.conv_14", [(128, 32, 14, 14), (32, 32, 3, 3)], conv_sp(1, 1))
time_op("resnet20.conv_7", [(128, 64, 7, 7), (64, 64, 3, 3)], conv_sp(1, 1))
time_op("resnet20.down_conv", [(128, 16, 28, 28), (32, 16, 3, 3)], conv_sp(2, 1))
time_op("resnet20.shortcut", [(128, 16, 28, 28), (32, 16, 1, 1)], conv_sp(2, 0))


# The first stage's batch norms (with the ReLU after the block's first convolution, without
# it after the second) and its residual sum with the ReLU after it.
running_mean, running_var = torch.zeros(16), torch.ones(16)


def bn(relu):
    def forward(t):
        y = F.batch_norm(t[0], running_mean, running_var, t[1], t[2], training=True)
        return F.relu(y) if relu else y
    activation_ops.add(forward)
    return forward


add_relu = lambda t: F.relu(t[0] + t[1])  # noqa: E731
activation_ops.add(add_relu)
time_op("resnet20.bn_relu_28", [(128, 16, 28, 28), (16,), (16,)], bn(True), bf16_input=True)
time_op("resnet20.bn_28", [(128, 16, 28, 28), (16,), (16,)], bn(False), bf16_input=True)
time_op("resnet20.add_relu_28", [(128, 16, 28, 28), (128, 16, 28, 28)], add_relu)
