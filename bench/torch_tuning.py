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


def blas_library():
    """The file that holds the sgemm_ torch's CPU library calls (look it up after importing
    torch): OpenBLAS's, or the reference BLAS's (libblas.so.3 from libblas3, which Debian's
    python3-torch also accepts). dlsym on torch's library searches it and its dependencies
    in the order its own calls are bound; /proc/self/maps names the file at that address.
    None when either is not found."""
    import ctypes

    try:
        with open("/proc/self/maps") as f:
            maps = [line.split() for line in f]
        torch_lib = next(m[-1] for m in maps if len(m) == 6 and os.path.basename(m[-1]).startswith("libtorch_cpu"))
        address = ctypes.cast(ctypes.CDLL(torch_lib).sgemm_, ctypes.c_void_p).value
    except (OSError, StopIteration, AttributeError):
        return None
    for m in maps:
        lo, hi = (int(x, 16) for x in m[0].split("-"))
        if lo <= address < hi and len(m) == 6:
            return os.path.realpath(m[-1])
    return None
