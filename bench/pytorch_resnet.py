#!/usr/bin/python3
"""The PyTorch twin of examples/resnet: ResNet-20 (torch_models.ResNet20, the same layers and
parameter count) trained by the same recipe, flags and log lines: per-sample random crop
(padding 2 for the 28x28 sets, 4 for CIFAR-10) and horizontal flip (not for MNIST's digits),
normalised after; SGD with Nesterov momentum and weight decay; OneCycleLR (constant momentum)
or CosineAnnealingLR stepped every batch; cross-entropy with optional label smoothing; the
test set evaluated after every epoch. The shuffling and augmentation draw from torch's own
generator, so the data order is the same recipe, not the same batches.

  /usr/bin/python3 bench/pytorch_resnet.py --dataset fashion-mnist --epochs 20 --threads 2 --data-dir DIR
"""
import argparse
import pathlib
import sys
import time

from torch_tuning import reexec_if_tuned

parser = argparse.ArgumentParser()
parser.add_argument("--dataset", default="fashion-mnist", choices=["fashion-mnist", "mnist", "cifar10"])
parser.add_argument("--data-dir", default="data")
parser.add_argument("--epochs", type=int, default=20)
parser.add_argument("--batch-size", type=int, default=128)
parser.add_argument("--test-batch-size", type=int, default=1000)
parser.add_argument("--lr", type=float, default=0.1)
parser.add_argument("--momentum", type=float, default=0.9)
parser.add_argument("--no-nesterov", action="store_true")
parser.add_argument("--weight-decay", type=float, default=5e-4)
parser.add_argument("--schedule", default="onecycle", choices=["onecycle", "cosine"])
parser.add_argument("--label-smoothing", type=float, default=0.0)
parser.add_argument("--augment", default="auto", choices=["auto", "no"])
parser.add_argument("--seed", type=int, default=1)
parser.add_argument("--threads", type=int, default=2)
parser.add_argument("--log-interval", type=int, default=10)
parser.add_argument("--limit-train-batches", type=int, default=0)
parser.add_argument("--autocast", default="off", choices=["off", "bf16"])
parser.add_argument("--device", default="cpu", choices=["cpu", "cuda"],
                    help="cuda: the model and each batch on the GPU (batches made on the CPU, as tinynet does)")
parser.add_argument("--tuned", action="store_true", help="OPENBLAS_NUM_THREADS=1 (torch_tuning.py)")
args = parser.parse_args()
reexec_if_tuned(args.tuned)

import numpy as np  # noqa: E402  (imported after the re-exec above)
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from torch_models import ResNet20, find, read_idx  # noqa: E402

torch.set_num_threads(args.threads)
torch.manual_seed(args.seed)

# Each data set's training-set mean and std per channel, as tinynet's normalize() gives them.
STATS = {"mnist": ([0.1307], [0.3081]), "fashion-mnist": ([0.2860], [0.3530]),
         "cifar10": ([0.4914, 0.4822, 0.4465], [0.2470, 0.2435, 0.2616])}


def load(train):
    """The split as uint8 images [N, C, H, W] and int64 labels."""
    root = pathlib.Path(args.data_dir)
    if args.dataset == "cifar10":
        folder = root / "cifar-10-batches-bin"
        names = [f"data_batch_{i}.bin" for i in range(1, 6)] if train else ["test_batch.bin"]
        raw = np.concatenate([np.fromfile(find(folder, n), dtype=np.uint8).reshape(-1, 3073) for n in names])
        return torch.from_numpy(raw[:, 1:].reshape(-1, 3, 32, 32).copy()), torch.from_numpy(raw[:, 0].astype(np.int64))
    folder = root / args.dataset
    prefix = "train" if train else "t10k"
    images = read_idx(find(folder, f"{prefix}-images-idx3-ubyte"))
    labels = read_idx(find(folder, f"{prefix}-labels-idx1-ubyte"))
    return torch.from_numpy(images.copy()).unsqueeze(1), torch.from_numpy(labels.astype(np.int64))


mean, std = (torch.tensor(v).view(1, -1, 1, 1) for v in STATS[args.dataset])


def normalize(batch_u8):
    return (batch_u8.float() / 255.0 - mean) / std


def augment(batch_u8, generator):
    """torchvision's RandomCrop(size, padding) and RandomHorizontalFlip per sample, on bytes."""
    if args.augment == "no":
        return batch_u8
    n, _, h, w = batch_u8.shape
    pad = 4 if args.dataset == "cifar10" else 2
    padded = F.pad(batch_u8, (pad, pad, pad, pad))
    tops = torch.randint(0, 2 * pad + 1, (n,), generator=generator)
    lefts = torch.randint(0, 2 * pad + 1, (n,), generator=generator)
    flips = torch.rand(n, generator=generator) < 0.5
    out = torch.empty_like(batch_u8)
    for k in range(n):
        crop = padded[k, :, tops[k]:tops[k] + h, lefts[k]:lefts[k] + w]
        out[k] = crop.flip(-1) if flips[k] and args.dataset != "mnist" else crop
    return out


def percentage(fraction):
    return "{: 5.1f}%".format(100.0 * fraction)


def test(model, images, labels):
    model.eval()
    loss_sum, correct = 0.0, 0
    with torch.no_grad():
        for i in range(0, len(images), args.test_batch_size):
            out = model(normalize(images[i:i + args.test_batch_size]).to(device))
            target = labels[i:i + args.test_batch_size].to(device)
            loss_sum += F.cross_entropy(out, target, reduction="sum").item()
            correct += (out.argmax(1) == target).sum().item()
    accuracy = correct / len(images)
    print(f"Test accuracy: {correct}/{len(images)} ({percentage(accuracy)})")
    print(f"loss={loss_sum / len(images):.4f}")
    print(f"accuracy={accuracy:.4f}", flush=True)


train_images, train_labels = load(True)
test_images, test_labels = load(False)
device = torch.device(args.device)
model = ResNet20(train_images.shape[1]).to(device)
optimizer = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=args.momentum, nesterov=not args.no_nesterov,
                            weight_decay=args.weight_decay)
batches = (len(train_images) + args.batch_size - 1) // args.batch_size
if args.limit_train_batches:
    batches = min(batches, args.limit_train_batches)
if args.schedule == "onecycle":
    scheduler = torch.optim.lr_scheduler.OneCycleLR(optimizer, args.lr, total_steps=batches * args.epochs,
                                                    cycle_momentum=False)
else:
    scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, batches * args.epochs)
generator = torch.Generator().manual_seed(args.seed)
print(f"pytorch resnet: ResNet-20 on {args.dataset}, torch {torch.__version__}, {args.threads} threads, {device}"
      f"{', autocast bfloat16' if args.autocast == 'bf16' else ''}", file=sys.stderr)
for epoch in range(1, args.epochs + 1):
    model.train()
    order = torch.randperm(len(train_images), generator=generator)
    start, images_seen = time.perf_counter(), 0
    for batch_idx in range(batches):
        idx = order[batch_idx * args.batch_size:(batch_idx + 1) * args.batch_size]
        data = normalize(augment(train_images[idx], generator)).to(device, non_blocking=True)
        target = train_labels[idx].to(device, non_blocking=True)
        optimizer.zero_grad()
        with torch.autocast(device.type, dtype=torch.bfloat16, enabled=args.autocast == "bf16"):
            loss = F.cross_entropy(model(data), target, label_smoothing=args.label_smoothing)
        loss.backward()
        optimizer.step()
        scheduler.step()
        images_seen += len(idx)
        if batch_idx % args.log_interval == 0:
            print(f"Epoch: {epoch} ({percentage(batch_idx / batches)}) - Loss: {loss.item()!r}", flush=True)
    if device.type == "cuda":
        torch.cuda.synchronize()
    train_s = time.perf_counter() - start
    test_start = time.perf_counter()
    test(model, test_images, test_labels)
    print(f"Epoch {epoch}: trained in {train_s:.2f} s ({images_seen / train_s:.0f} images/s), tested in "
          f"{time.perf_counter() - test_start:.2f} s", file=sys.stderr)
