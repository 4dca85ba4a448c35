"""How many CUDA processes a host starts a second: the limit a class graded on one host meets.

Each submission `grade` runs starts three processes with a CUDA context of their own (its
run, compute-sanitizer's memcheck run and its racecheck run). This starts N loops side by
side, spread over the first G GPUs, each starting one such process after another for a
while: it imports CuPy, starts its context, runs one small kernel and exits, plain or under
a compute-sanitizer tool; or, to tell the driver's part from the rest, it only starts a
context through the driver and allocates once (`context`). It prints how many finished a
second on the whole host. The processes inherit the environment, so
CUDA_DEVICE_MAX_CONNECTIONS set before it reaches each (autograder.isolate.isolation).

    python tests/host_contexts.py plain|context|memcheck|racecheck GPUS SECONDS N [N ...]

(README, "A second GPU in the same host".)
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import statistics
import subprocess
import sys
import time

SMALL_KERNEL = "import cupy; x = cupy.ones(1 << 20, cupy.float32); (x * 2).sum().item()"
CONTEXT_ONLY = """import ctypes
cuda = ctypes.CDLL("libcuda.so.1")
context, memory = ctypes.c_void_p(), ctypes.c_uint64()
assert cuda.cuInit(0) == 0
assert cuda.cuDevicePrimaryCtxRetain(ctypes.byref(context), 0) == 0
assert cuda.cuCtxSetCurrent(context) == 0
assert cuda.cuMemAlloc_v2(ctypes.byref(memory), 1 << 20) == 0
"""


def _loop(command: list[str], gpu: int, until: float, results) -> None:
    environment = {**os.environ, "CUDA_VISIBLE_DEVICES": str(gpu)}
    seconds = []
    while time.monotonic() < until:
        started = time.monotonic()
        subprocess.run(command, env=environment, capture_output=True, check=True)
        seconds.append(time.monotonic() - started)
    results.put(seconds)


def rate(command: list[str], gpus: int, seconds: float, loops: int) -> tuple[float, float]:
    """(processes finished a second, median seconds each) with `loops` side by side."""
    context = multiprocessing.get_context("spawn")
    results = context.Queue()
    started = time.monotonic()
    workers = [
        context.Process(target=_loop, args=(command, i % gpus, started + seconds, results))
        for i in range(loops)
    ]
    for w in workers:
        w.start()
    each = [s for _ in workers for s in results.get()]
    for w in workers:
        w.join()
    return len(each) / (time.monotonic() - started), statistics.median(each)


def main() -> None:
    from autograder.isolate.isolation import CONNECTIONS
    from autograder.judge import sanitizer

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("tool", choices=["plain", "context", "memcheck", "racecheck"])
    parser.add_argument("gpus", type=int)
    parser.add_argument("seconds", type=float)
    parser.add_argument("loops", type=int, nargs="+")
    args = parser.parse_args()
    command = [sys.executable, "-c", CONTEXT_ONLY if args.tool == "context" else SMALL_KERNEL]
    if args.tool not in ("plain", "context"):
        command = [sanitizer.find(), f"--tool={args.tool}", *command]
    for loops in args.loops:
        per_second, each = rate(command, args.gpus, args.seconds, loops)
        print(
            f"{args.tool}, {os.environ.get(CONNECTIONS, 'default')} "
            f"connections, {loops} side by side on {args.gpus} GPU(s): "
            f"{per_second:.2f} a second, {each:.2f} s each (median)",
            flush=True,
        )


if __name__ == "__main__":
    main()
