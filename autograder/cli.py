"""python -m autograder compile | check | bench: the course's command line.

Exit codes: 0 success; 1 the kernel ran but is wrong (or crashed, or hung);
2 it could not compile, the command was used wrongly, or it needs a GPU that
this machine does not have.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from . import compiler, gpu, registry
from .kernel import SpecError, from_file, global_kernels, resolve
from .sandbox import BackendUnavailable

OK, WRONG, UNUSABLE = 0, 1, 2
ARCHS = ("sm_75", "sm_80", "sm_86", "sm_89", "sm_90")


def _pair(text: str) -> tuple[int, int]:
    """'256' -> (256, 1); '32x8' -> (32, 8)."""
    parts = text.lower().split("x")
    try:
        values = tuple(int(p) for p in parts)
    except ValueError:
        values = ()
    if len(values) == 1:
        values += (1,)
    if len(values) != 2 or min(values) < 1:
        raise argparse.ArgumentTypeError(f"expected N or AxB with positive integers, not {text!r}")
    return values


def _parser() -> argparse.ArgumentParser:
    steps = ", ".join(s.name for s in registry.STEPS)
    p = argparse.ArgumentParser(
        prog="python -m autograder",
        description="Compile, check and time SGEMM kernels written to the course's contract: "
        'extern "C" __global__ void NAME(int M, int N, int K, float alpha, '
        "const float* A, const float* B, float beta, float* C), row-major.",
    )
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")

    c = sub.add_parser(
        "compile",
        help="compile kernels (no GPU needed) and report their resources",
        description="Compile each FILE.cu with NVRTC for an architecture and print "
        "registers, spills and shared memory per kernel, with a warning "
        "for anything that would spill or not fit a T4. Needs no GPU.",
    )
    c.add_argument("files", type=Path, nargs="+", metavar="FILE.cu")
    c.add_argument(
        "--arch",
        default="sm_90",
        help=f"target GPU architecture, e.g. {', '.join(ARCHS)} (default: sm_90; "
        "the T4 on Colab is sm_75)",
    )
    c.add_argument(
        "--kernel", help="the kernel to instantiate, e.g. 'sgemm_vectorized<128, 128, 8, 8, 8>'"
    )
    c.add_argument(
        "--like", metavar="STEP", help="instantiate a template with this step's parameters"
    )

    k = sub.add_parser(
        "check",
        help="check a kernel's results on awkward shapes",
        description="Run FILE.cu on shapes that are not multiples of 32 (1x1x1 up "
        "to 4095x4097x4093) against a float64 reference and say where "
        "it is wrong. Exit 0 correct, 1 wrong/crashed/hung, "
        "2 did not compile or bad usage.",
    )
    k.add_argument("file", type=Path, metavar="FILE.cu")
    k.add_argument(
        "--kernel",
        help="which __global__ function (needed if the file has several); "
        "may name template arguments",
    )
    k.add_argument("--like", metavar="STEP", help=f"launch it as this step is launched: {steps}")
    k.add_argument("--block", type=_pair, metavar="BX[xBY]", help="threads per block")
    k.add_argument(
        "--tile", type=_pair, metavar="BMxBN", help="rows x columns of C that one block covers"
    )
    k.add_argument(
        "--rows-on",
        choices=("x", "y"),
        help="the grid axis that walks the rows of C (default y: grid.x walks columns)",
    )
    k.add_argument(
        "--backend",
        choices=("auto", "gpu", "cpu"),
        default="auto",
        help="where to run it: the GPU, or the CPU (correctness only, no GPU needed); "
        "default auto: the GPU if there is one, else the CPU",
    )
    k.add_argument("--seed", type=int, help="random seed, to repeat a run exactly")
    k.add_argument("--quick", action="store_true", help="small shapes only")

    b = sub.add_parser(
        "bench",
        help="time the ladder against cuBLAS",
        description="Time reference kernels and cuBLAS (strict FP32) with CUDA "
        "events; print GFLOP/s and %% of cuBLAS; write a CSV and a plot.",
    )
    b.add_argument(
        "steps", nargs="*", metavar="STEP", help=f"steps to time (default: all): {steps}"
    )
    b.add_argument(
        "--sizes",
        nargs="+",
        metavar="SIZE",
        help="N for NxNxN or MxNxK (default: 1024 2048 4096 1001x777x513 4095x4097x4093)",
    )
    b.add_argument(
        "--csv",
        type=Path,
        metavar="F",
        help="merge results into this CSV (default: book/data/bench_<gpu>.csv)",
    )
    b.add_argument(
        "--plot", type=Path, metavar="F", help="also draw GFLOP/s against size to this PNG"
    )
    n = sub.add_parser(
        "notebooks",
        help="rebuild the exercise notebooks (instructors)",
        description="Build solutions/ from kernels/ and autograder/assignments.py, then "
        "exercises/ with nbgrader generate_assignment. Needs nbgrader.",
    )
    n.add_argument(
        "--check",
        action="store_true",
        help="change nothing; exit 1 if solutions/ or exercises/ differ from a build",
    )
    return p


def _notebooks(args) -> int:
    from . import notebooks

    if args.check:
        stale = notebooks.differences()
        for path in stale:
            print(f"out of date: {path}")
        if stale:
            print("rebuild with: python -m autograder notebooks")
        return WRONG if stale else OK
    notebooks.build()
    print("solutions/ and exercises/ rebuilt")
    return OK


def _compile(args) -> int:
    for path in args.files:
        source = path.read_text()
        names = [args.kernel] if args.kernel else list(global_kernels(source)) or [None]
        resolved = [resolve(source, path.name, name, args.like) for name in names]
        result = compiler.compile_for_arch(
            source, [expr for expr, _ in resolved], args.arch, path.name
        )
        for expr, step in resolved:
            resources = result.resources[expr]
            print(resources)
            threads = step.geometry.threads if step else 1
            for problem in resources.problems(threads):
                print(f"  warning: {problem}")
    return OK


def _check(args) -> int:
    from . import checker, sandbox

    spec = from_file(args.file, args.kernel, args.like, args.block, args.tile, args.rows_on)
    backend = args.backend
    if backend == "gpu":
        gpu.require("check")
    elif backend == "auto":
        reason = gpu.unavailable_reason()
        backend = "cpu" if reason else "gpu"
        if reason:
            print(f"No GPU ({reason}): checking correctness on the CPU; timings need a GPU.")
    print(f"{spec.label}: {spec.geometry.describe()}")
    shapes = checker.SMALL if args.quick else checker.SUITE
    report = sandbox.check(spec, shapes=shapes, seed=args.seed, backend=backend)
    print(report)
    return OK if report.ok else WRONG


def _bench(args) -> int:
    from . import bench
    from .kernel import KernelSpec

    steps = [registry.step(s) for s in args.steps] or list(registry.STEPS)
    sizes = args.sizes or bench.DEFAULT_SIZES
    for s in sizes:
        bench.parse_size(s)  # a typo is reported before anything runs
    gpu.require("bench")
    rows = bench.bench({s.name: KernelSpec.from_step(s) for s in steps}, sizes)
    print(bench.table(rows))
    path = bench.write_csv(rows, args.csv or bench.default_csv_path(rows))
    print(f"results merged into {path}")
    if args.plot:
        print(f"plot written to {bench.plot(rows, args.plot)}")
    return OK


def main(argv=None) -> int:
    args = _parser().parse_args(argv)
    run = {"compile": _compile, "check": _check, "bench": _bench, "notebooks": _notebooks}[
        args.command
    ]
    try:
        return run(args)
    except compiler.CompileError as e:
        print(e, file=sys.stderr)
    except (gpu.NoGPU, compiler.NvrtcUnavailable, SpecError, BackendUnavailable) as e:
        print(f"{args.command}: {e}", file=sys.stderr)
    except OSError as e:
        print(f"{args.command}: cannot read {e.filename}: {e.strerror}", file=sys.stderr)
    except (KeyError, ValueError) as e:
        print(f"{args.command}: {e.args[0] if e.args else e}", file=sys.stderr)
    return UNUSABLE
