#!/usr/bin/env python3
"""One command for the side-by-side CPU benchmark: tinynet and PyTorch (as installed, and
tuned) train the MNIST example's networks on the same batches, alternating, several
repetitions, for 1 and 2 threads; time single ops (forward and backward of conv2d, linear,
max_pool2d, relu, dropout, log_softmax+nll at the example's shapes) the same way; measure
the SGEMM ceiling through Eigen and through PyTorch's OpenBLAS, and the example's build
time from clean. Prints tables of medians with ratios and writes every figure and the
machine description to a JSON file.

  python3 bench/run.py --build-dir build/release --data-dir ../shared/data [--reps 3] [--out bench.json]

--baseline-build-dir DIR adds another tinynet build (e.g. the previous commit's) to the
alternation, so a change is measured against what it replaces in the same run.
--native-build-dir DIR adds a -march=native build (preset release-native), and --levels
avx2,baseline runs the main build again capped at those CPU vector levels (TINYNET_CPU_ISA),
so that every build and level is compared in the same alternation.
--autocast adds bfloat16 mixed precision to the alternation: tinynet-bf16 (the main build's
train_bench --autocast bf16; without AVX512-BF16 tinynet falls back itself), pytorch-bf16
(pytorch_bench.py --tuned --autocast bf16: forward and loss under torch.autocast) and
pytorch-bf16-untuned (the same without --tuned, which can be as fast or faster for NET),
and a table of both against float32 with two ratios, tinynet bf16 / PyTorch bf16 and
tinynet bf16 / tinynet f32 (PyTorch's bf16 figure: the faster of its two settings, as for
float32). With --levels it runs tinynet-bf16 capped at each level as well.
--cuda-build adds the main build's nvcc twin, train_bench_cuda, training on the CPU
(--device cpu): a program nvcc compiles runs the same CPU kernels as a g++ one.
--python names the Python whose PyTorch is the reference (default /usr/bin/python3, Debian's).
A PyTorch from PyPI carries its own BLAS (MKL); --tuned then changes nothing, and only the
plain settings are timed.
"""
import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

parser = argparse.ArgumentParser()
parser.add_argument("--build-dir", default="build/release")
parser.add_argument("--data-dir", default="data")
parser.add_argument("--reps", type=int, default=3)
parser.add_argument("--batches", type=int, default=100, help="timed batches per run (after warm-up)")
parser.add_argument("--warmup", type=int, default=10)
parser.add_argument("--threads", default="1,2")
parser.add_argument("--models", default="net,lenet")
parser.add_argument("--out", default="bench-results.json")
parser.add_argument("--no-ops", action="store_true", help="skip the per-op timings")
parser.add_argument("--no-build-time", action="store_true", help="skip timing the example's build from clean")
parser.add_argument("--baseline-build-dir", help="another tinynet build whose train_bench runs in the same alternation")
parser.add_argument("--native-build-dir", help="a -march=native build whose train_bench runs in the same alternation")
parser.add_argument("--cuda-build", action="store_true",
                    help="also run the main build's train_bench_cuda (nvcc) on the CPU in the same alternation")
parser.add_argument("--levels", default="", help="CPU vector levels to cap the main build at too, e.g. avx2,baseline")
parser.add_argument("--python", default="/usr/bin/python3",
                    help="the Python whose PyTorch is the reference (Debian's: /usr/bin/python3)")
parser.add_argument("--autocast", action="store_true",
                    help="also run tinynet and PyTorch with bfloat16 autocast (tinynet-bf16, pytorch-bf16)")
args = parser.parse_args()

here = os.path.dirname(os.path.abspath(__file__))
tinynet_bin = os.path.join(args.build_dir, "bench", "train_bench")
op_bin = os.path.join(args.build_dir, "bench", "op_bench")
torch_py = [args.python, os.path.join(here, "pytorch_bench.py")]
torch_ops_py = [args.python, os.path.join(here, "pytorch_op_bench.py")]
baseline_bin = os.path.join(args.baseline_build_dir, "bench", "train_bench") if args.baseline_build_dir else None
native_bin = os.path.join(args.native_build_dir, "bench", "train_bench") if args.native_build_dir else None
cuda_bin = os.path.join(args.build_dir, "bench", "train_bench_cuda") if args.cuda_build else None
levels = [lv for lv in args.levels.split(",") if lv]
for b in (tinynet_bin, op_bin) + tuple(x for x in (baseline_bin, native_bin, cuda_bin) if x):
    if not os.path.exists(b):
        sys.exit(f"{b} not found: configure with -DTINYNET_BUILD_BENCH=ON (and nvcc found, for train_bench_cuda) "
                 f"and build it")


def run_lines(cmd, env=None):
    out = subprocess.run(cmd, check=True, capture_output=True, text=True,
                         env=None if env is None else {**os.environ, **env}).stdout.strip().splitlines()
    return [json.loads(line) for line in out if line.startswith("{")]


def run(cmd, env=None):
    return run_lines(cmd, env)[-1]


# PyTorch's float32 reference runs on the BLAS that torch loads. Debian's python3-torch is
# satisfied by the reference BLAS (libblas3, about 5 GFLOP/s for SGEMM 2048 here against
# OpenBLAS's 190), which would make its float32 figures nothing like PyTorch's.
blas = run(torch_py + ["--sgemm", "64", "--threads", "1"]).get("blas")
# PyPI's wheels carry their BLAS (MKL) inside libtorch_cpu, which then holds sgemm_ itself.
bundled_blas = blas is not None and os.path.basename(blas).startswith("libtorch_cpu")
if blas is None or not ("openblas" in blas or bundled_blas):
    sys.exit(f"PyTorch here multiplies through {blas or 'an unknown BLAS'}, not OpenBLAS: its float32 figures "
             "would not be PyTorch's. Install OpenBLAS (scripts/setup-debian.sh --bench installs "
             "libopenblas0-pthread; scripts/bench.sh runs it), then run this again.")
# --tuned only keeps OpenBLAS's own threads from starting; with a bundled BLAS it changes
# nothing, so the plain runs alone are timed and stand for the tuned ones.
same_as_plain = {"pytorch-tuned": "pytorch", "pytorch-bf16-untuned": "pytorch-bf16"} if bundled_blas else {}


def cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            return next(line.split(":", 1)[1].strip() for line in f if line.startswith("model name"))
    except (OSError, StopIteration):
        return platform.processor()


results = {"machine": {"cpu": cpu_model(), "cores": os.cpu_count(), "platform": platform.platform(), "torch_blas": blas},
           "settings": vars(args), "runs": [], "timed_as": same_as_plain}  # settings not run: whose runs stand for them
threads = [int(t) for t in args.threads.split(",")]
models = args.models.split(",")


def training(program, *extra):
    """The command line of one training run of `program` (a list) for model m, t threads."""
    return lambda m, t: program + ["--model", m, "--threads", str(t), "--batches", str(args.batches),
                                   "--warmup", str(args.warmup), "--data-dir", args.data_dir, *extra]


impls = {"tinynet": training([tinynet_bin]), "pytorch": training(torch_py),
         "pytorch-tuned": training(torch_py, "--tuned")}
impl_env = {}
if baseline_bin:
    impls["baseline"] = training([baseline_bin])
if native_bin:
    impls["native"] = training([native_bin])
if cuda_bin:
    impls["nvcc"] = training([cuda_bin], "--device", "cpu")
for lv in levels:
    impls["tinynet@" + lv] = impls["tinynet"]
    impl_env["tinynet@" + lv] = {"TINYNET_CPU_ISA": lv}
if args.autocast:
    impls["tinynet-bf16"] = training([tinynet_bin], "--autocast", "bf16")
    impls["pytorch-bf16"] = training(torch_py, "--tuned", "--autocast", "bf16")
    impls["pytorch-bf16-untuned"] = training(torch_py, "--autocast", "bf16")
    for lv in levels:
        impls["tinynet-bf16@" + lv] = impls["tinynet-bf16"]
        impl_env["tinynet-bf16@" + lv] = {"TINYNET_CPU_ISA": lv}
# Per-op forward and backward times, alternating tinynet and both PyTorch configurations.
op_impls = {
    "tinynet": lambda t: [op_bin, "--threads", str(t)],
    "pytorch": lambda t: torch_ops_py + ["--threads", str(t)],
    "pytorch-tuned": lambda t: torch_ops_py + ["--threads", str(t), "--tuned"],
}
for name in same_as_plain:  # not run: the settings they equal stand for them
    impls.pop(name, None)
    op_impls.pop(name, None)
for t in threads:
    for rep in range(args.reps):
        for m in models:
            for name, cmd in impls.items():  # alternate implementations within each repetition
                r = run(cmd(m, t), impl_env.get(name))
                if "-bf16" in name and r.get("autocast") != "bf16":
                    print(f"  warning: {name} reported autocast {r.get('autocast')!r}, not 'bf16'", file=sys.stderr)
                r["impl"], r["rep"] = name, rep
                results["runs"].append(r)
                print(f"  {name:14s} {m:6s} {t} threads rep {rep}: {r['images_per_s']:8.0f} images/s", file=sys.stderr)
    # The ceiling: one big SGEMM through Eigen (tinynet's GEMM) and through PyTorch's BLAS
    # (OpenBLAS), each with t threads of its own.
    for name, cmd, env in (("eigen", [tinynet_bin, "--sgemm", "2048", "--threads", str(t)], None),
                           ("torch-blas" if bundled_blas else "openblas", torch_py + ["--sgemm", "2048", "--threads", str(t)],
                            {"OPENBLAS_NUM_THREADS": str(t)})):
        r = run(cmd, env)
        r["impl"] = name
        results.setdefault("sgemm", []).append(r)


if not args.no_ops:
    for t in threads:
        for rep in range(args.reps):
            for name, cmd in op_impls.items():
                for r in run_lines(cmd(t)):
                    r["impl"], r["rep"] = name, rep
                    results.setdefault("ops", []).append(r)
                print(f"  ops {name:14s} {t} threads rep {rep}", file=sys.stderr)


def build_time():
    """Seconds to configure and build the MNIST example from an empty build directory,
    with this machine's cores, no compiler cache."""
    src = os.path.dirname(here)
    tmp = tempfile.mkdtemp(prefix="tinynet-build-time-")
    try:
        env = {k: v for k, v in os.environ.items() if k not in ("CMAKE_CXX_COMPILER_LAUNCHER", "CCACHE_DIR")}
        env["CCACHE_DISABLE"] = "1"
        t0 = time.perf_counter()
        subprocess.run(["cmake", "-S", src, "-B", tmp, "-G", "Ninja", "-DCMAKE_BUILD_TYPE=Release",
                        "-DTINYNET_BUILD_TESTS=OFF", "-DTINYNET_WITH_CUDA=OFF"], check=True, capture_output=True, env=env)
        configured = time.perf_counter() - t0
        subprocess.run(["cmake", "--build", tmp, "--target", "mnist", "-j", str(os.cpu_count())], check=True,
                       capture_output=True, env=env)
        return {"configure_s": round(configured, 1), "build_s": round(time.perf_counter() - t0 - configured, 1),
                "jobs": os.cpu_count()}
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if not args.no_build_time:
    print("  building the example from clean", file=sys.stderr)
    results["build_time"] = build_time()


def median_of(rows, key, **match):
    """Median of `key` over the rows whose fields equal `match`; NaN when there are none."""
    if "impl" in match:
        match["impl"] = same_as_plain.get(match["impl"], match["impl"])
    vals = [r[key] for r in rows if all(r[k] == v for k, v in match.items())]
    return statistics.median(vals) if vals else float("nan")


def median(impl, model, t, key="images_per_s"):
    return median_of(results["runs"], key, impl=impl, model=model, threads=t)


print(f"\nMedians of {args.reps} runs, {args.batches} timed batches each, real MNIST in memory")
print(f"{'model':6s} {'threads':>7s} {'tinynet img/s':>14s} {'PyTorch':>9s} {'tuned':>9s} {'time ratio':>10s} "
      f"{'epoch s':>8s} {'GFLOP/s':>8s} {'of SGEMM':>8s} {'RSS MB':>7s} {'torch RSS':>9s}")
table = []
for t in threads:
    ceiling = max(s["gflops"] for s in results["sgemm"] if s["threads"] == t)
    for m in models:
        ours = median("tinynet", m, t)
        best_torch = max(median("pytorch", m, t), median("pytorch-tuned", m, t))
        row = {"model": m, "threads": t, "tinynet_images_per_s": ours,
               "pytorch_images_per_s": median("pytorch", m, t),
               "pytorch_tuned_images_per_s": median("pytorch-tuned", m, t),
               "time_ratio_vs_best_pytorch": best_torch / ours,
               "tinynet_epoch_s": median("tinynet", m, t, "epoch_s"),
               "tinynet_gflops": median("tinynet", m, t, "gflops"),
               "fraction_of_sgemm_ceiling": median("tinynet", m, t, "gflops") / ceiling,
               "tinynet_max_rss_mb": median("tinynet", m, t, "max_rss_mb"),
               "pytorch_max_rss_mb": median("pytorch-tuned", m, t, "max_rss_mb")}
        if baseline_bin:
            row["baseline_images_per_s"] = median("baseline", m, t)
        table.append(row)
        print(f"{m:6s} {t:7d} {ours:14.0f} {row['pytorch_images_per_s']:9.0f} {row['pytorch_tuned_images_per_s']:9.0f} "
              f"{row['time_ratio_vs_best_pytorch']:10.2f} {row['tinynet_epoch_s']:8.1f} {row['tinynet_gflops']:8.1f} "
              f"{row['fraction_of_sgemm_ceiling']:8.0%} {row['tinynet_max_rss_mb']:7.0f} {row['pytorch_max_rss_mb']:9.0f}")
if baseline_bin:
    print(f"\nAgainst the baseline build ({args.baseline_build_dir}), same alternation:")
    for row in table:
        print(f"{row['model']:6s} {row['threads']:7d} this {row['tinynet_images_per_s']:8.0f} img/s, baseline "
              f"{row['baseline_images_per_s']:8.0f} img/s, ratio {row['tinynet_images_per_s'] / row['baseline_images_per_s']:.3f}")
if native_bin or cuda_bin or levels:
    # Every tinynet build and level side by side with PyTorch (the faster of its two settings).
    cols = (["tinynet"] + ["tinynet@" + lv for lv in levels] + (["native"] if native_bin else [])
            + (["nvcc"] if cuda_bin else []))
    if args.autocast:
        cols += ["tinynet-bf16"] + ["tinynet-bf16@" + lv for lv in levels]
    names = {"tinynet": "default flags", "native": "-march=native", "nvcc": "nvcc build",
             "tinynet-bf16": "bf16"}
    print(f"\nBy build and CPU vector level, images/s (medians; the default build's own level: "
          f"{results['runs'][0].get('cpu_isa', '?')})")
    print(f"{'model':6s} {'threads':>7s} " + " ".join(
        f"{names.get(c, c.replace('tinynet@', 'capped ').replace('tinynet-bf16@', 'bf16 ')):>18s}" for c in cols)
        + f" {'PyTorch f32':>11s}")
    for row in table:
        m, t = row["model"], row["threads"]
        row["by_build"] = {c: median(c, m, t) for c in cols}
        best = max(row["pytorch_images_per_s"], row["pytorch_tuned_images_per_s"])
        print(f"{m:6s} {t:7d} " + " ".join(f"{row['by_build'][c]:18.0f}" for c in cols) + f" {best:11.0f}")
if args.autocast:
    # The targets: tinynet bf16 at least 2x PyTorch's autocast bf16, and at least
    # 1.5x tinynet's own float32 (ratios of images/s: > 1 means the first is faster).
    print("\nbfloat16 autocast, images/s (medians; ratios of images/s, > 1: the first is faster)")
    print(f"{'model':6s} {'threads':>7s} {'tinynet f32':>11s} {'tinynet bf16':>12s} {'PyTorch f32':>11s} "
          f"{'PyTorch bf16':>12s} {'bf16 vs PyTorch bf16':>20s} {'bf16 vs f32':>11s}")
    bf16_table = []
    for row in table:
        m, t = row["model"], row["threads"]
        b = {"model": m, "threads": t, "tinynet_images_per_s": row["tinynet_images_per_s"],
             "tinynet_bf16_images_per_s": median("tinynet-bf16", m, t),
             "pytorch_best_images_per_s": max(row["pytorch_images_per_s"], row["pytorch_tuned_images_per_s"]),
             "pytorch_bf16_tuned_images_per_s": median("pytorch-bf16", m, t),
             "pytorch_bf16_untuned_images_per_s": median("pytorch-bf16-untuned", m, t),
             "tinynet_bf16_autocast": sorted({str(r.get("autocast")) for r in results["runs"]
                                              if r["impl"] == "tinynet-bf16" and r["model"] == m and r["threads"] == t})}
        b["pytorch_bf16_images_per_s"] = max(b["pytorch_bf16_tuned_images_per_s"], b["pytorch_bf16_untuned_images_per_s"])
        b["tinynet_bf16_over_pytorch_bf16"] = b["tinynet_bf16_images_per_s"] / b["pytorch_bf16_images_per_s"]
        b["tinynet_bf16_over_tinynet_f32"] = b["tinynet_bf16_images_per_s"] / b["tinynet_images_per_s"]
        bf16_table.append(b)
        print(f"{m:6s} {t:7d} {b['tinynet_images_per_s']:11.0f} {b['tinynet_bf16_images_per_s']:12.0f} "
              f"{b['pytorch_best_images_per_s']:11.0f} {b['pytorch_bf16_images_per_s']:12.0f} "
              f"{b['tinynet_bf16_over_pytorch_bf16']:20.2f} {b['tinynet_bf16_over_tinynet_f32']:11.2f}")
    print("targets: tinynet bf16 / PyTorch bf16 >= 2, tinynet bf16 / tinynet f32 >= 1.5")
    results["bf16_table"] = bf16_table
for s in results["sgemm"]:
    print(f"SGEMM 2048 through {s['impl']:8s} {s['threads']} threads: {s['gflops']:.1f} GFLOP/s")
print("time ratio = tinynet time / the faster PyTorch's time (< 1: tinynet is faster)")
results["table"] = table
if results.get("ops"):
    def op_median(impl, op, t, key):
        return median_of(results["ops"], key, impl=impl, op=op, threads=t)

    print(f"\nPer op, milliseconds (medians of {args.reps} runs, each the median of 30 timed calls)")
    print(f"{'op':22s} {'threads':>7s} {'tinynet fwd':>11s} {'bwd':>7s} {'PyTorch fwd':>11s} {'bwd':>7s} "
          f"{'time ratio':>10s}")
    op_table = []
    for t in threads:
        for op in dict.fromkeys(r["op"] for r in results["ops"]):
            ours = [op_median("tinynet", op, t, k) for k in ("forward_ms", "backward_ms")]
            # The faster PyTorch configuration for this op (forward + backward).
            theirs = min(([op_median(i, op, t, k) for k in ("forward_ms", "backward_ms")]
                          for i in ("pytorch", "pytorch-tuned")), key=sum)
            row = {"op": op, "threads": t, "tinynet_forward_ms": ours[0], "tinynet_backward_ms": ours[1],
                   "pytorch_forward_ms": theirs[0], "pytorch_backward_ms": theirs[1],
                   "time_ratio": sum(ours) / sum(theirs)}
            op_table.append(row)
            print(f"{op:22s} {t:7d} {ours[0]:11.3f} {ours[1]:7.3f} {theirs[0]:11.3f} {theirs[1]:7.3f} "
                  f"{row['time_ratio']:10.2f}")
    results["op_table"] = op_table
allocs = sorted({r["system_allocs_in_timed_steps"] for r in results["runs"] if r["impl"] == "tinynet"})
print(f"\ntinynet allocations from the system during timed steps: {allocs}")
if "build_time" in results:
    b = results["build_time"]
    print(f"MNIST example from clean: configure {b['configure_s']} s, build {b['build_s']} s ({b['jobs']} jobs, no cache)")
with open(args.out, "w") as f:
    json.dump(results, f, indent=1)
print(f"wrote {args.out}")
