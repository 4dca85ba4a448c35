"""How long step 09 takes to build on a machine whose caches are empty: what a learner's
first step-09 check waits for before any kernel runs (on a fresh Colab runtime, or on the
CPU backend on a laptop).

Step 09 builds step 08's kernel at every tile shape it chooses among, and their ragged
and staged twins (autograder.run.composed.gemm_specs), and its reduction. Each run here is
a process of its own with empty caches (CuPy's, CUPY_CACHE_DIR; the CPU backend's, under
XDG_CACHE_HOME) and first-use tuning off, which builds them, for the GPU (the launcher,
with one product checked) or for the CPU (the backend's load, as a check does), and prints
the seconds the build took: side by side (autograder.run.backends._gpu_kernels,
autograder.run.cpu.launchers), or one at a time. Run it under `taskset -c 0,1` for a
machine of two CPUs.

    python tests/cold_build.py threads|serial [--backend gpu|cpu]

(README, "Measured".)
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("how", choices=["threads", "serial"])
    parser.add_argument("--backend", choices=["gpu", "cpu"], default="gpu")
    args = parser.parse_args()
    os.environ["CUPY_CACHE_DIR"] = tempfile.mkdtemp()  # before either cache is read
    os.environ["XDG_CACHE_HOME"] = tempfile.mkdtemp()
    os.environ["SGEMM_AUTOTUNE"] = "0"
    from autograder.ladder import registry
    from autograder.run.kernel import KernelSpec

    spec = KernelSpec.from_step(registry.step("09"))
    seconds, kernels, right = (_gpu if args.backend == "gpu" else _cpu)(spec, args.how)
    cpus = len(os.sched_getaffinity(0))
    print(
        f"{args.backend}, {args.how}, {cpus} CPUs: {kernels} kernels built in {seconds:.1f} s"
        + ("" if right is None else f"; right: {right}")
    )


def _one_at_a_time(module) -> None:
    from concurrent.futures import ThreadPoolExecutor

    module.ThreadPoolExecutor = lambda *_: ThreadPoolExecutor(1)


def _gpu(spec, how: str):
    import cupy

    from autograder.run import backends, composed

    cupy.cuda.Device().synchronize()  # the context, outside the time
    if how == "serial":
        _one_at_a_time(backends)
    started = time.perf_counter()
    launch = backends.gpu_launcher(spec, tune=False)
    seconds = time.perf_counter() - started
    M, N, K = 333, 777, 129
    A, B = cupy.ones((M, K), cupy.float32), cupy.ones((K, N), cupy.float32)
    C = cupy.empty((M, N), cupy.float32)
    launch(M, N, K, 1.0, A, B, 0.0, C)
    return seconds, len(composed.gemm_specs()) + 1, bool((C == K).all())


def _cpu(spec, how: str):
    from autograder.run import backends, by_shape, composed, cpu

    if how == "serial":
        _one_at_a_time(cpu)
    kernels = len(composed.gemm_specs(by_shape.CHOICES)) + 1
    backend = backends.CpuBackend(tempfile.mkdtemp())
    started = time.perf_counter()
    backend.load([spec])  # and the process is confined: nothing read after this
    return time.perf_counter() - started, kernels, None


if __name__ == "__main__":
    main()
