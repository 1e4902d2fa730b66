#!/usr/bin/env python3
"""tinynet's ops against PyTorch's, in float64, on the same inputs.

Runs the cases' runner (torch_reference_cases), which computes every case with tinynet and
writes one JSON line per case: its PyTorch expression, inputs, output, upstream gradient and
input gradients. Here each expression is evaluated by PyTorch on the same inputs, backward
with the same upstream gradient, and compared: floating values and gradients element by
element within 1e-9 relative (|x - y| <= 1e-9 * max(|y|, 1e-3 * max|y|), so that an element
near zero is held to the tensor's scale), integer and bool values exactly, shapes and dtypes
equal.

Usage: compare.py RUNNER WORK_DIR
Prints "SKIP: ..." and exits 0 when torch is not importable (the test's skip pattern)."""
import json
import pathlib
import subprocess
import sys

try:
    import torch
    import torch.nn.functional as F
except ImportError as e:
    print(f"SKIP: PyTorch is not importable by {sys.executable} ({e}); install python3-torch")
    sys.exit(0)

RTOL = 1e-9
DTYPES = {"float64": torch.float64, "float32": torch.float32, "int64": torch.int64,
          "int32": torch.int32, "bool": torch.bool}


def tensor(record, requires_grad=False):
    t = torch.tensor(record["values"], dtype=torch.float64 if record["dtype"] != "bool" else torch.bool)
    t = t.to(DTYPES[record["dtype"]]).reshape(record["shape"])
    return t.requires_grad_(requires_grad and t.is_floating_point())


def mismatch(what, ours, theirs):
    """None when `ours` (a JSON record) equals `theirs` (a torch tensor), else why not."""
    if ours is None or theirs is None:
        if ours is None and theirs is None:
            return None
        return f"{what}: tinynet has {'none' if ours is None else 'one'}, PyTorch {'none' if theirs is None else 'one'}"
    theirs = theirs.detach()
    if list(theirs.shape) != ours["shape"]:
        return f"{what}: shape {ours['shape']}, PyTorch {list(theirs.shape)}"
    if DTYPES[ours["dtype"]] != theirs.dtype:
        return f"{what}: dtype {ours['dtype']}, PyTorch {theirs.dtype}"
    x = tensor(ours)
    if not theirs.is_floating_point():
        bad = (x != theirs).nonzero()
        return None if len(bad) == 0 else f"{what}: differs at {bad[0].tolist()}: {x[tuple(bad[0])]} vs {theirs[tuple(bad[0])]}"
    x, y = x.double(), theirs.double()
    scale = 1e-3 * y.abs().max() if y.numel() else 0.0
    bound = RTOL * torch.maximum(y.abs(), torch.as_tensor(scale, dtype=torch.float64))
    err = (x - y).abs()
    same_special = (x.isnan() & y.isnan()) | (x.isinf() & (x == y))
    bad = ((err > bound) & ~same_special).nonzero()
    if len(bad) == 0:
        return None
    i = tuple(bad[0].tolist())
    return f"{what}: {len(bad)} of {y.numel()} elements differ, first at {list(i)}: {x[i].item()!r} vs PyTorch {y[i].item()!r}"


def compare(case):
    if "error" in case:
        return [f"tinynet raised: {case['error']}"]
    names = "abcdefghijklmnopqrstuvwxyz"
    inputs = [tensor(r, requires_grad=True) for r in case["inputs"]]
    scope = {"torch": torch, "F": F, **{names[i]: t for i, t in enumerate(inputs)}}
    out = eval(case["torch"], scope)
    problems = [p for p in [mismatch("output", case["output"], out)] if p]
    if "grads" in case:
        if not out.requires_grad:
            return problems + ["tinynet has gradients, PyTorch's output requires none"]
        out.backward(tensor(case["grad_output"]))
        for i, (ours, t) in enumerate(zip(case["grads"], inputs)):
            theirs = t.grad if t.requires_grad else None
            if ours is not None and theirs is None:
                theirs = torch.zeros_like(t)  # PyTorch leaves an unused input's grad unset
            p = mismatch(f"grad of {names[i]}", ours, theirs)
            if p:
                problems.append(p)
    elif out.requires_grad:
        problems.append("PyTorch's output has a gradient, tinynet's none")
    return problems


def main():
    runner, work = sys.argv[1], pathlib.Path(sys.argv[2])
    work.mkdir(parents=True, exist_ok=True)
    cases_file = work / "cases.jsonl"
    subprocess.run([runner, str(cases_file)], check=True)
    cases = [json.loads(line) for line in cases_file.read_text().splitlines()]
    failed = 0
    for case in cases:
        problems = compare(case)
        status = "ok" if not problems else "FAIL"
        print(f"{status:4} {case['name']:40} {case['torch']}")
        for p in problems:
            print(f"       {p}")
        failed += bool(problems)
    print(f"{len(cases) - failed} of {len(cases)} cases equal PyTorch {torch.__version__} within {RTOL:g} (float64)")
    return 1 if failed or not cases else 0


if __name__ == "__main__":
    sys.exit(main())
