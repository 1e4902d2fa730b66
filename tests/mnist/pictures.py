#!/usr/bin/env python3
"""--predictions-png and --confusion-png, read back pixel by pixel: the example trains 50
batches and draws both pictures; its saved model's predictions (interop_logits) say which
grid cells must be framed in red and what colour every confusion-matrix cell must have.

Usage: pictures.py MNIST_BIN LOGITS_BIN DATA_DIR WORK_DIR
Prints "SKIP: ..." and exits 0 without matplotlib (which reads the PNG files)."""
import gzip
import math
import pathlib
import subprocess
import sys

try:
    import matplotlib.image
    import numpy as np
except ImportError as e:
    print(f"SKIP: matplotlib is not importable by {sys.executable} ({e}); install python3-matplotlib")
    sys.exit(0)

mnist_bin, logits_bin, data_dir, work = sys.argv[1], sys.argv[2], pathlib.Path(sys.argv[3]), pathlib.Path(sys.argv[4])
work.mkdir(parents=True, exist_ok=True)
# The layout in examples/mnist/pictures.hpp.
CELL, CELL_H, COLUMNS, M_CELL, M_LEFT, M_TOP = 64, 78, 10, 44, 56, 48


def run(*args):
    r = subprocess.run([str(a) for a in args], capture_output=True, text=True, timeout=600)
    print(f"$ {' '.join(map(str, args))}\n{r.stderr[-2000:]}", end="")
    if r.returncode != 0:
        sys.exit(f"FAIL: exit code {r.returncode}")


run(mnist_bin, "--data-dir", data_dir, "--epochs", "1", "--limit-train-batches", "50", "--threads", "2",
    "--save-model", "--model-path", work / "net.tnet", "--predictions-png", work / "predictions.png",
    "--confusion-png", work / "confusion.png")
run(logits_bin, work / "net.tnet", data_dir, work / "outputs.bin")
predicted = np.fromfile(work / "outputs.bin", dtype="<f4").reshape(-1, 10).argmax(1)
with gzip.open(data_dir / "mnist" / "t10k-labels-idx1-ubyte.gz") as f:
    truth = np.frombuffer(f.read(), dtype=np.uint8, offset=8).astype(np.int64)
failures = []

grid = np.rint(matplotlib.image.imread(work / "predictions.png")[:, :, :3] * 255).astype(int)
if grid.shape != (10 * CELL_H, COLUMNS * CELL, 3):
    failures.append(f"predictions.png is {grid.shape}, expected {(10 * CELL_H, COLUMNS * CELL, 3)}")
else:
    for n in range(100):
        cx, cy = (n % COLUMNS) * CELL, (n // COLUMNS) * CELL_H
        framed = tuple(grid[cy + 1, cx + 1]) == (220, 30, 30)
        wrong = predicted[n] != truth[n]
        if framed != wrong:
            failures.append(f"cell {n}: predicted {predicted[n]}, true {truth[n]}, red frame {framed}")
        if grid[cy + 4:cy + 60, cx + 4:cx + 60].max() < 250:
            failures.append(f"cell {n}: no digit drawn")
    if not failures:
        print(f"predictions.png: {int((predicted[:100] != truth[:100]).sum())} of the first 100 misclassified, "
              f"framed in red exactly where expected")
grid_failures = len(failures)

matrix = np.rint(matplotlib.image.imread(work / "confusion.png")[:, :, :3] * 255).astype(int)
counts = np.zeros((10, 10), dtype=np.int64)
np.add.at(counts, (truth, predicted), 1)
for t in range(10):
    for p in range(10):
        frac = math.sqrt(counts[t, p] / counts[t].sum())
        want = [round(255 * (1 - frac) + dark * frac) for dark in (8, 48, 107)]
        got = matrix[M_TOP + t * M_CELL + 3, M_LEFT + p * M_CELL + 3].tolist()
        if any(abs(a - b) > 1 for a, b in zip(got, want)):
            failures.append(f"confusion cell (true {t}, predicted {p}): count {counts[t, p]}, colour {got}, "
                            f"expected {want}")
if len(failures) == grid_failures:
    print(f"confusion.png: all 100 cells coloured by their share of the row (diagonal {np.trace(counts)}/10000)")
for f in failures[:20]:
    print("FAIL:", f)
sys.exit(1 if failures else 0)
