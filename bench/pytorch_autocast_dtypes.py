#!/usr/bin/env python3
"""The dtype PyTorch's CPU autocast returns from each op docs/autocast.md compares with.

Each op runs inside torch.autocast("cpu", dtype=torch.bfloat16), once on a float32 input
and once on a bfloat16 one (what a convolution hands the next layer); prints one JSON line
per op. Run it with the PyTorch to compare, e.g. Debian's: /usr/bin/python3
bench/pytorch_autocast_dtypes.py
"""
import json

import torch
import torch.nn.functional as F

torch.manual_seed(1)
x4 = torch.randn(4, 8, 6, 6)  # an activation: batch, channels, height, width
w = torch.randn(8, 8, 3, 3)
x2 = torch.randn(4, 16)
target = torch.tensor([0, 3, 1, 2])
bn_mean, bn_var = torch.zeros(8), torch.ones(8)

ops = {
    "conv2d": (x4, lambda x: F.conv2d(x, w, padding=1)),
    "linear": (x2, lambda x: F.linear(x, torch.randn(5, 16))),
    "matmul": (x2, lambda x: x @ torch.randn(16, 5)),
    "relu": (x4, F.relu),
    "max_pool2d": (x4, lambda x: F.max_pool2d(x, 2)),
    "avg_pool2d": (x4, lambda x: F.avg_pool2d(x, 2)),
    "dropout": (x4, lambda x: F.dropout(x, 0.25, training=True)),
    "add": (x4, lambda x: x + x),
    "softmax": (x2, lambda x: F.softmax(x, 1)),
    "log_softmax": (x2, lambda x: F.log_softmax(x, 1)),
    "sum": (x2, torch.sum),
    "mean": (x2, torch.mean),
    "nll_loss": (x2, lambda x: F.nll_loss(F.log_softmax(x, 1), target)),
    "cross_entropy": (x2, lambda x: F.cross_entropy(x, target)),
    "batch_norm": (x4, lambda x: F.batch_norm(x, bn_mean.clone(), bn_var.clone(), training=True)),
}

for name, (x, op) in ops.items():
    out = {}
    for dtype in (torch.float32, torch.bfloat16):
        with torch.autocast("cpu", dtype=torch.bfloat16):
            out[str(dtype).replace("torch.", "")] = str(op(x.to(dtype)).dtype).replace("torch.", "")
    print(json.dumps({"torch": torch.__version__, "op": name, "output_dtype_for_input": out}), flush=True)
