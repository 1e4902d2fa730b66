"""The networks of tinynet's examples written in PyTorch, and the IDX reader, shared by the
PyTorch sides of bench/ (pytorch_bench.py, pytorch_resnet.py)."""
import gzip
import sys

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F


def read_idx(path):
    raw = gzip.open(path).read() if path.suffix == ".gz" else path.read_bytes()
    ndim = raw[3]
    dims = [int.from_bytes(raw[4 + 4 * i:8 + 4 * i], "big") for i in range(ndim)]
    return np.frombuffer(raw, dtype=np.uint8, offset=4 + 4 * ndim).reshape(dims)


def find(folder, name):
    for candidate in (folder / name, folder / (name + ".gz")):
        if candidate.exists():
            return candidate
    sys.exit(f"missing {name} in {folder}")


class Net(nn.Module):  # PyTorch's MNIST example network
    def __init__(self):
        super().__init__()
        self.conv1, self.conv2 = nn.Conv2d(1, 32, 3, 1), nn.Conv2d(32, 64, 3, 1)
        self.dropout1, self.dropout2 = nn.Dropout(0.25), nn.Dropout(0.5)
        self.fc1, self.fc2 = nn.Linear(9216, 128), nn.Linear(128, 10)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv2(F.relu(self.conv1(x)))), 2)
        x = self.dropout2(F.relu(self.fc1(torch.flatten(self.dropout1(x), 1))))
        return F.log_softmax(self.fc2(x), dim=1)


class LeNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1, self.conv2 = nn.Conv2d(1, 20, 5, 1), nn.Conv2d(20, 50, 5, 1)
        self.fc1, self.fc2 = nn.Linear(800, 500), nn.Linear(500, 10)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv2(F.max_pool2d(F.relu(self.conv1(x)), 2))), 2)
        return F.log_softmax(self.fc2(F.relu(self.fc1(torch.flatten(x, 1)))), dim=1)


class Residual(nn.Module):
    """relu(body(x) + shortcut(x)), named as tinynet's nn::Residual names its tensors."""
    def __init__(self, cin, cout, stride):
        super().__init__()
        self.body = nn.Sequential(nn.Conv2d(cin, cout, 3, stride, 1, bias=False), nn.BatchNorm2d(cout), nn.ReLU(),
                                  nn.Conv2d(cout, cout, 3, 1, 1, bias=False), nn.BatchNorm2d(cout))
        self.shortcut = nn.Identity()
        if stride != 1 or cin != cout:
            self.shortcut = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, 0, bias=False), nn.BatchNorm2d(cout))

    def forward(self, x):
        return F.relu(self.body(x) + self.shortcut(x))


class ResNet20(nn.Module):  # examples/resnet/models.hpp's ResNet20<C, H, W>
    def __init__(self, channels=1):
        super().__init__()
        self.conv1 = nn.Conv2d(channels, 16, 3, 1, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(16)
        blocks, cin = [], 16
        for cout, stride in [(16, 1), (32, 2), (64, 2)]:
            for i in range(3):
                blocks.append(Residual(cin, cout, stride if i == 0 else 1))
                cin = cout
        self.blocks = nn.Sequential(*blocks)
        self.fc = nn.Linear(64, 10)

    def forward(self, x):
        x = self.blocks(F.relu(self.bn1(self.conv1(x))))
        return self.fc(torch.flatten(F.adaptive_avg_pool2d(x, 1), 1))


def resnet20_macs(h, w):  # the convolutions' and the classifier's multiply-adds per image
    macs, cin = 16 * 9 * h * w, 16
    for stage, c in enumerate([16, 32, 64]):
        for block in range(3):
            down = block == 0 and stage > 0
            if down:
                h, w = (h + 1) // 2, (w + 1) // 2
            macs += c * cin * 9 * h * w + c * c * 9 * h * w + (c * cin * h * w if down else 0)
            cin = c
    return macs + 640
