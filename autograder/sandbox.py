"""Run a kernel's check on the GPU in a child process, with a time limit.

A kernel that reads out of bounds can kill the CUDA context, and one that
never finishes blocks the process that launched it. Both must cost only that
kernel's check, so the kernel runs in a spawned child (a fresh CUDA context)
that reports each case over a pipe; the parent kills it if a case overruns.
"""

from __future__ import annotations

import multiprocessing

import numpy as np

from . import compiler, gpu
from .checker import SUITE, Report, fresh_seed, iter_suite
from .compiler import CompileError
from .kernel import KernelSpec

CASE_TIMEOUT_S = 30.0
COMPILE_TIMEOUT_S = 180.0

# What a CUDA error means for an SGEMM kernel, by the error's name without
# prefix, case or underscores (CuPy reports runtime and driver spellings).
_CUDA_HINTS = {
    "illegaladdress": "the kernel accessed memory outside what it was given: check the "
    "bounds on M, N and K in its loads and stores",
    "misalignedaddress": "a float4 access at an address that is not a multiple of 16 bytes: "
    "use scalar accesses where K or N is not a multiple of 4",
    "launchoutofresources": "too many registers x threads per block for this GPU: use fewer "
    "threads per block, or fewer registers",
    "invalidvalue": "the launch was refused: too many threads per block, or too much shared memory",
    "invalidconfiguration": "the launch was refused: too many threads per block, or too "
    "much shared memory",
    "assert": "a device-side assert() failed",
    "launchfailure": "the kernel crashed",
}


def explain_cuda_error(error: Exception) -> str:
    text = str(error)
    name = text.split(":")[0].strip()
    key = name.lower().replace("_", "").replace("cudaerror", "")
    hint = _CUDA_HINTS.get(key)
    return f"crashed with {name}: {hint}" if hint else f"crashed: {text}"


def launcher(spec: KernelSpec):
    """Compile spec for the current GPU; return launch(M, N, K, alpha, A, B, beta, C)."""
    function = compiler.load(spec.source, spec.name_expression, spec.filename)
    block = (*spec.geometry.block, 1)

    def launch(M, N, K, alpha, A, B, beta, C):
        function(
            spec.geometry.grid(M, N),
            block,
            (np.int32(M), np.int32(N), np.int32(K), np.float32(alpha), A, B, np.float32(beta), C),
        )

    return launch


def _child(conn, spec: KernelSpec, shapes, seed: int) -> None:
    import cupy

    try:
        launch = launcher(spec)
    except CompileError as e:
        conn.send(("compile_error", (e.filename, e.log, e.compiler)))
        return
    info = gpu.device_info()
    conn.send(("device", f"{info.name} ({info.arch}, CUDA {info.cuda}, CuPy {info.cupy})"))
    sync = cupy.cuda.Device().synchronize
    try:
        for event in iter_suite(cupy, launch, shapes, seed, sync):
            conn.send(event)
    except (cupy.cuda.runtime.CUDARuntimeError, cupy.cuda.driver.CUDADriverError) as e:
        conn.send(("crash", explain_cuda_error(e)))
        return
    conn.send(("done", None))


def check(
    spec: KernelSpec, shapes=SUITE, seed: int | None = None, case_timeout_s: float = CASE_TIMEOUT_S
) -> Report:
    """Check spec on the GPU in a child process. Raises CompileError or gpu.NoGPU."""
    gpu.require("check")
    seed = fresh_seed() if seed is None else seed
    report = Report(kernel=spec.label, device="the GPU", seed=seed)
    context = multiprocessing.get_context("spawn")  # CUDA cannot survive a fork
    receive, send = context.Pipe(duplex=False)
    child = context.Process(target=_child, args=(send, spec, shapes, seed), daemon=True)
    child.start()
    send.close()
    running, timeout = "compiling", COMPILE_TIMEOUT_S
    try:
        while True:
            if not receive.poll(timeout):
                report.error = (
                    f"{running}: did not finish within {timeout:.0f} s (an endless "
                    "loop? check that every loop's counter reaches its bound)"
                )
                break
            try:
                kind, payload = receive.recv()
            except EOFError:
                child.join(5)
                report.error = (
                    f"{running}: the process running the kernel died (exit code {child.exitcode})"
                )
                break
            if kind == "compile_error":
                raise CompileError(*payload)
            if kind == "device":
                report.device, timeout = payload, case_timeout_s
            elif kind == "start":
                running = payload
            elif kind == "result":
                report.cases.append(payload)
            elif kind == "note":
                report.notes.append(payload)
            elif kind == "crash":
                report.error = f"{running}: {payload}"
                break
            elif kind == "done":
                break
    finally:
        if child.is_alive():
            child.kill()
        child.join()
        receive.close()
    return report
