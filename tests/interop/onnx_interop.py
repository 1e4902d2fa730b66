#!/usr/bin/env python3
"""ONNX export, checked with the real tools.

  onnx_interop.py prepare MNIST_BIN LOGITS_BIN LAYERS_BIN DATA_DIR WORK
      The example trains 100 batches and writes --save-model and --export-onnx; tinynet's
      outputs on the 10,000 test images, the normalised test images, and the two networks of
      interop_onnx_layers (every layer the exporter translates) go to WORK.
  onnx_interop.py check WORK
      onnx.checker.check_model(full_check=True) on the models (Debian's python3-onnx), and
      the opset, the dynamic batch dimension and the initializer names.
  onnx_interop.py runtime WORK ORT_MODULE_DIR
      ONNX Runtime (onnxruntime-node, run by node) runs the models: outputs within 1e-4 of
      tinynet's, and the same predicted class for every test image.
  onnx_interop.py runtime-python WORK VERSION
      The same checks with the Python package onnxruntime, which must be version VERSION
      (1.21: Debian 13's python3-onnxruntime, run in the trixie chroot by
      tests/dist/trixie_run.sh, WORK seen from there).

A missing tool prints "SKIP: <reason>" (the tests' skip pattern) and exits 0; in
runtime-python it exits 77 (the test's SKIP_RETURN_CODE, as trixie_run.sh does without the
chroot)."""
import gzip
import os
import pathlib
import shutil
import subprocess
import sys
import tempfile
import time

import numpy as np

MEAN, STD = 0.1307, 0.3081
TOLERANCE = 1e-4


def run(*args):
    started = time.time()
    r = subprocess.run([str(a) for a in args], capture_output=True, text=True, timeout=600)
    tail = "".join(line + "\n" for line in (r.stdout + r.stderr).splitlines() if not line.startswith("Epoch: "))
    print(f"$ {' '.join(map(str, args))}  ({time.time() - started:.1f} s)\n{tail}", end="")
    if r.returncode != 0:
        sys.exit(f"FAIL: exit code {r.returncode}")


def prepare(mnist_bin, logits_bin, layers_bin, data_dir, work):
    work.mkdir(parents=True, exist_ok=True)
    run(mnist_bin, "--data-dir", data_dir, "--epochs", "1", "--limit-train-batches", "100", "--threads", "2",
        "--log-interval", "50", "--save-model", "--model-path", work / "net.tnet", "--export-onnx", work / "net.onnx")
    run(logits_bin, work / "net.tnet", data_dir, work / "net_tinynet.bin")
    run(layers_bin, work)
    with gzip.open(pathlib.Path(data_dir) / "mnist" / "t10k-images-idx3-ubyte.gz") as f:
        x = np.frombuffer(f.read(), dtype=np.uint8, offset=16).astype(np.float32) / 255.0
    # The same float32 arithmetic as tinynet's normalize transform.
    ((x - np.float32(MEAN)) / np.float32(STD)).astype("<f4").tofile(work / "test_images.bin")
    with gzip.open(pathlib.Path(data_dir) / "mnist" / "t10k-labels-idx1-ubyte.gz") as f:
        np.frombuffer(f.read(), dtype=np.uint8, offset=8).tofile(work / "test_labels.bin")


def check(work):
    try:
        import onnx
    except ImportError as e:
        print(f"SKIP: the onnx package is not importable by {sys.executable} ({e}); install python3-onnx")
        return 0
    failures = 0
    for name, initializers in (("net.onnx", ["conv1.weight", "conv1.bias", "conv2.weight", "conv2.bias",
                                             "fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias"]),
                               ("layers.onnx", None), ("blocks.onnx", None)):
        model = onnx.load(str(work / name))
        onnx.checker.check_model(model, full_check=True)
        opset = [o.version for o in model.opset_import if o.domain in ("", "ai.onnx")]
        batch = model.graph.input[0].type.tensor_type.shape.dim[0].dim_param
        names = [t.name for t in model.graph.initializer]
        ops = [n.op_type for n in model.graph.node]
        print(f"onnx {onnx.__version__}: {name} passes check_model(full_check=True); ir_version {model.ir_version}, "
              f"opset {opset}, batch dimension '{batch}', nodes {ops}, initializers {names}")
        if opset != [17] or batch != "batch":
            failures += 1
            print(f"FAIL: {name}: expected opset 17 and a dynamic batch dimension")
        if initializers is not None and names != initializers:
            failures += 1
            print(f"FAIL: {name}: initializers are not named as in the PyTorch example's state_dict")
        if "Dropout" in ops:
            failures += 1
            print(f"FAIL: {name}: Dropout should be left out of an eval-mode export")
    return 1 if failures else 0


CASES = (("net.onnx", "test_images.bin", "net_tinynet.bin", 10000, (1, 28, 28), 10),
         ("layers.onnx", "layers_input.bin", "layers_tinynet.bin", 7, (3, 12, 12), 5),
         ("blocks.onnx", "blocks_input.bin", "blocks_tinynet.bin", 7, (3, 12, 12), 5))


def compare(work, outputs_of):
    """Both models' outputs, from outputs_of(model, inputs, n, sample), against tinynet's."""
    failures = 0
    for model, inputs, expected, n, sample, classes in CASES:
        theirs = outputs_of(model, inputs, n, sample).reshape(n, classes)
        ours = np.fromfile(work / expected, dtype="<f4").reshape(n, classes)
        diff = float(np.abs(theirs - ours).max())
        same = int((theirs.argmax(1) == ours.argmax(1)).sum())
        print(f"{model}: max |ONNX Runtime - tinynet| {diff:.3g} (tolerance {TOLERANCE:g}); "
              f"same prediction on {same}/{n}")
        if model == "net.onnx":
            labels = np.fromfile(work / "test_labels.bin", dtype=np.uint8)
            print(f"net.onnx: ONNX Runtime's accuracy {int((theirs.argmax(1) == labels).sum())}/{n}")
        if not diff <= TOLERANCE or same != n:
            failures += 1
            print(f"FAIL: {model}: ONNX Runtime's outputs differ from tinynet's")
    return 1 if failures else 0


def runtime(work, ort_dir):
    node = shutil.which("node")
    if node is None:
        print("SKIP: node is not installed (apt install nodejs); ONNX Runtime runs as the npm package onnxruntime-node")
        return 0
    if not (pathlib.Path(ort_dir) / "package.json").exists():
        print(f"SKIP: onnxruntime-node is not installed in {ort_dir} (scripts/setup-debian.sh installs it)")
        return 0
    script = pathlib.Path(__file__).with_name("ort_run.js")

    def outputs_of(model, inputs, n, sample):
        run(node, script, ort_dir, work / model, work / inputs, work / (model + ".ort.bin"), n, *sample)
        return np.fromfile(work / (model + ".ort.bin"), dtype="<f4")

    return compare(work, outputs_of)


def without_schema_noise(make):
    """Returns make(), whose standard error is passed on but for Debian's onnxruntime 1.21
    "Schema error: Trying to register schema ... already registered" lines (one per ONNX op,
    printed each time an InferenceSession is made: its libonnx registers the schemas twice), which are
    counted instead."""
    sys.stderr.flush()
    saved = os.dup(2)
    with tempfile.TemporaryFile(mode="w+") as err:
        os.dup2(err.fileno(), 2)
        try:
            return make()
        finally:
            os.dup2(saved, 2)
            os.close(saved)
            err.seek(0)
            lines = [line for line in err.read().splitlines() if line.strip()]
            noise = [line for line in lines if line.startswith("Schema error: Trying to register schema")]
            for line in lines:
                if line not in noise:
                    print(line, file=sys.stderr)
            if noise:
                print(f"(onnxruntime printed {len(noise)} 'Schema error: ... already registered' lines)")


def runtime_python(work, version):
    """The Python package onnxruntime (Debian 13's python3-onnxruntime, in the trixie chroot:
    tests/dist/trixie_run.sh); without it, exit code 77 (skipped) and why; another version fails."""
    try:
        import onnxruntime
    except ImportError as e:
        print(f"SKIP: onnxruntime is not importable by {sys.executable} ({e}); "
              "scripts/make-trixie-chroot.sh installs python3-onnxruntime into the chroot")
        return 77
    if not onnxruntime.__version__.startswith(version):
        print(f"FAIL: expected onnxruntime {version}, {sys.executable} has {onnxruntime.__version__}")
        return 1
    print(f"onnxruntime {onnxruntime.__version__} (Python)")
    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads, options.inter_op_num_threads = 2, 1

    def outputs_of(model, inputs, n, sample):
        runner = without_schema_noise(lambda: onnxruntime.InferenceSession(str(work / model), options,
                                                                            providers=["CPUExecutionProvider"]))
        x = np.fromfile(work / inputs, dtype="<f4").reshape(n, *sample)
        name = runner.get_inputs()[0].name
        return np.concatenate([runner.run(None, {name: x[i:i + 1000]})[0] for i in range(0, n, 1000)])

    return compare(work, outputs_of)


if __name__ == "__main__":
    mode = sys.argv[1]
    if mode == "prepare":
        prepare(*sys.argv[2:6], pathlib.Path(sys.argv[6]))
        sys.exit(0)
    if mode == "check":
        sys.exit(check(pathlib.Path(sys.argv[2])))
    if mode == "runtime-python":
        sys.exit(runtime_python(pathlib.Path(sys.argv[2]), sys.argv[3]))
    sys.exit(runtime(pathlib.Path(sys.argv[2]), sys.argv[3]))
