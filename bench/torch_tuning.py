"""Shared by the PyTorch sides of bench/: --tuned keeps OpenBLAS from starting threads of its
own next to PyTorch's (OPENBLAS_NUM_THREADS=1), which is how PyTorch 1.13 from Debian is
fastest on few cores. The variable must be set before torch loads, hence a re-exec."""
import os
import sys


def reexec_if_tuned(tuned):
    """Restarts this script with OPENBLAS_NUM_THREADS=1 when `tuned` and it is not set yet."""
    if tuned and os.environ.get("OPENBLAS_NUM_THREADS") != "1":
        os.environ["OPENBLAS_NUM_THREADS"] = "1"
        os.execv(sys.executable, [sys.executable, *sys.argv])


def impl_name(tuned, autocast=None):
    """pytorch, pytorch-tuned, and with --autocast bf16: pytorch-bf16, pytorch-tuned-bf16."""
    return ("pytorch-tuned" if tuned else "pytorch") + (f"-{autocast}" if autocast else "")
