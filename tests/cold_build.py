"""How long step 09's launcher takes to build on a machine whose compile cache is empty: what
a learner's first step-09 run on a fresh Colab runtime waits for before any kernel runs.

Step 09 builds step 08's kernel at every tile shape it chooses among, and their ragged
and staged twins (autograder.run.composed.gemm_specs). Each run here is a process of its
own with an empty CuPy cache (CUPY_CACHE_DIR) and first-use tuning off, which builds the
launcher, checks one product with it, and prints the seconds the build took: with the
kernels built side by side (autograder.run.backends._gpu_kernels), or one at a time.
Run it under `taskset -c 0,1` for a machine of two CPUs.

    python tests/cold_build.py threads|serial

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
    how = parser.parse_args().how
    os.environ["CUPY_CACHE_DIR"] = tempfile.mkdtemp()  # before CuPy reads it
    os.environ["SGEMM_AUTOTUNE"] = "0"
    from concurrent.futures import ThreadPoolExecutor

    import cupy

    from autograder.ladder import registry
    from autograder.run import backends, composed
    from autograder.run.kernel import KernelSpec

    cupy.cuda.Device().synchronize()  # the context, outside the time
    if how == "serial":
        backends.ThreadPoolExecutor = lambda: ThreadPoolExecutor(1)
    started = time.perf_counter()
    launch = backends.gpu_launcher(KernelSpec.from_step(registry.step("09")), tune=False)
    seconds = time.perf_counter() - started
    M, N, K = 333, 777, 129
    A, B = cupy.ones((M, K), cupy.float32), cupy.ones((K, N), cupy.float32)
    C = cupy.empty((M, N), cupy.float32)
    launch(M, N, K, 1.0, A, B, 0.0, C)
    right = bool((C == K).all())
    kernels = len(composed.gemm_specs()) + 1
    cpus = len(os.sched_getaffinity(0))
    print(f"{how}, {cpus} CPUs: {kernels} kernels built in {seconds:.1f} s; right: {right}")


if __name__ == "__main__":
    main()
