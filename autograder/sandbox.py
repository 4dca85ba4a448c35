"""Run a kernel's check in a child process, with a time limit, on the GPU or the CPU.

A kernel that reads out of bounds can kill the CUDA context, and one that
never finishes blocks the process that launched it. Both must cost only that
kernel's check, so the kernel runs in a spawned child (a fresh CUDA context)
that reports each case over a pipe; the parent kills it if a case overruns.
"""

from __future__ import annotations

import multiprocessing

import numpy as np

from . import compiler, gpu
from .checker import CPU_BUDGET, GPU_BUDGET, SUITE, Report, fresh_seed, iter_suite
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


class BackendUnavailable(RuntimeError):
    """The chosen backend cannot run this kernel here (no compiler, unsupported construct)."""


def _gpu_backend(spec: KernelSpec):
    import cupy

    launch = launcher(spec)
    info = gpu.device_info()
    device = f"{info.name} ({info.arch}, CUDA {info.cuda}, CuPy {info.cupy})"
    return cupy, launch, cupy.cuda.Device().synchronize, GPU_BUDGET, device


def _cpu_backend(spec: KernelSpec):
    from . import cpu

    try:  # NVRTC first, so that a compile error reads exactly as it would on a GPU
        compiler.compile_for_arch(spec.source, [spec.name_expression], "sm_75", spec.filename)
    except compiler.NvrtcUnavailable:
        pass
    launch = cpu.launcher(spec)
    return np, launch, lambda: None, CPU_BUDGET, f"the CPU ({cpu.compiler()}, no timings)"


def _child(conn, spec: KernelSpec, shapes, seed: int, backend: str) -> None:
    from . import cpu

    try:
        xp, launch, sync, budget, device = (_cpu_backend if backend == "cpu" else _gpu_backend)(
            spec
        )
    except CompileError as e:
        conn.send(("compile_error", (e.filename, e.log, e.compiler)))
        return
    except (cpu.UnsupportedOnCpu, cpu.NoCompiler) as e:
        conn.send(("unavailable", str(e)))
        return
    conn.send(("device", device))
    crashes = ()
    if backend == "gpu":
        import cupy

        crashes = (cupy.cuda.runtime.CUDARuntimeError, cupy.cuda.driver.CUDADriverError)
    try:
        for event in iter_suite(xp, launch, shapes, seed, sync, budget):
            conn.send(event)
    except crashes as e:
        conn.send(("crash", explain_cuda_error(e)))
        return
    conn.send(("done", None))


def check(
    spec: KernelSpec,
    shapes=SUITE,
    seed: int | None = None,
    case_timeout_s: float = CASE_TIMEOUT_S,
    backend: str = "gpu",
) -> Report:
    """Check spec in a child process on the "gpu" or the "cpu".

    Raises CompileError, gpu.NoGPU (backend "gpu" on a machine without one) or
    BackendUnavailable (backend "cpu" with no C++ compiler, or a construct it
    cannot run).
    """
    if backend == "gpu":
        gpu.require("check")
    seed = fresh_seed() if seed is None else seed
    report = Report(kernel=spec.label, device=f"the {backend.upper()}", seed=seed)
    context = multiprocessing.get_context("spawn")  # CUDA cannot survive a fork
    receive, send = context.Pipe(duplex=False)
    child = context.Process(target=_child, args=(send, spec, shapes, seed, backend), daemon=True)
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
            if kind == "unavailable":
                raise BackendUnavailable(payload)
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


def _time_child(conn, specs: dict, size: tuple[int, int, int]) -> None:
    import cupy

    from . import bench

    try:
        launches = {name: launcher(spec) for name, spec in specs.items()}
    except CompileError as e:
        conn.send(("compile_error", (e.filename, e.log, e.compiler)))
        return
    M, N, K = size
    rng = cupy.random.default_rng()
    A = rng.standard_normal((M, K), dtype=cupy.float32)
    B = rng.standard_normal((K, N), dtype=cupy.float32)
    C = cupy.zeros((M, N), dtype=cupy.float32)
    info = gpu.device_info()
    gflops = {}
    try:
        for name, launch in launches.items():
            ms = bench.median_ms(lambda launch=launch: launch(M, N, K, 1.0, A, B, 0.0, C))
            gflops[name] = 2 * M * N * K / ms / 1e6
    except (cupy.cuda.runtime.CUDARuntimeError, cupy.cuda.driver.CUDADriverError) as e:
        conn.send(("crash", explain_cuda_error(e)))
        return
    conn.send(("done", (info.name, gflops)))


def measure(specs: dict, size=(2048, 2048, 2048), timeout_s: float = 120.0):
    """GFLOP/s of each kernel, timed one after another in one child process on
    the GPU, so that kernels measured against each other share the conditions.
    Returns (gpu name, {name: GFLOP/s}). Raises gpu.NoGPU, CompileError, or
    RuntimeError for a crash or a hang."""
    gpu.require("timing")
    context = multiprocessing.get_context("spawn")
    receive, send = context.Pipe(duplex=False)
    child = context.Process(target=_time_child, args=(send, specs, size), daemon=True)
    child.start()
    send.close()
    try:
        if not receive.poll(timeout_s):
            raise RuntimeError(f"timing did not finish within {timeout_s:.0f} s")
        try:
            kind, payload = receive.recv()
        except EOFError:
            child.join(5)
            raise RuntimeError(
                f"the process timing the kernels died (exit code {child.exitcode})"
            ) from None
        if kind == "compile_error":
            raise CompileError(*payload)
        if kind == "crash":
            raise RuntimeError(payload)
        return payload
    finally:
        if child.is_alive():
            child.kill()
        child.join()
        receive.close()
