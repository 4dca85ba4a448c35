"""Run a kernel's check in a child process, with a time limit, on the GPU or the CPU.

A kernel that reads out of bounds can kill the CUDA context, and one that
never finishes blocks the process that launched it. Both must cost only that
kernel's check, so the kernel runs in a spawned child (a fresh CUDA context)
that reports each case over a pipe; the parent kills it if a case overruns.
"""

from __future__ import annotations

import multiprocessing

import numpy as np

from . import compiler, gpu, isolation
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
    if type(error).__name__ == "OutOfMemoryError":
        return f"ran out of GPU memory ({text}): is another program using this GPU?"
    name = text.split(":")[0].strip()
    key = name.lower().replace("_", "").replace("cudaerror", "")
    hint = _CUDA_HINTS.get(key)
    return f"crashed with {name}: {hint}" if hint else f"crashed: {text}"


def launcher(spec: KernelSpec):
    """Compile spec for the current GPU; return launch(M, N, K, alpha, A, B, beta, C)."""
    function = compiler.load(spec.source, spec.name_expression, spec.filename)
    block = (*spec.geometry.block, 1)
    shared = spec.geometry.shared_bytes
    if shared:  # a kernel gets more than 48 KB of dynamic shared memory only on request
        function.max_dynamic_shared_size_bytes = shared

    def launch(M, N, K, alpha, A, B, beta, C):
        function(
            spec.geometry.grid(M, N),
            block,
            (np.int32(M), np.int32(N), np.int32(K), np.float32(alpha), A, B, np.float32(beta), C),
            shared_mem=shared,
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


def _cpu_backend(spec: KernelSpec, scratch):
    from . import cpu

    # A kernel made of what the CPU cannot run (tensor cores, cp.async) is
    # refused by name, before NVRTC would stop at its sm_80-only instructions.
    cpu.refuse_unsupported(spec.source, spec.filename)
    try:  # NVRTC first, so that a compile error reads exactly as it would on a GPU
        compiler.compile_for_arch(spec.source, [spec.name_expression], "sm_75", spec.filename)
    except compiler.NvrtcUnavailable:
        pass
    launch = cpu.launcher(spec, scratch)
    return np, launch, lambda: None, CPU_BUDGET, cpu.device()


def _crashes() -> tuple[type[Exception], ...]:
    """What CuPy raises when a kernel crashes, or when the GPU runs out of memory."""
    import cupy

    return (
        cupy.cuda.runtime.CUDARuntimeError,
        cupy.cuda.driver.CUDADriverError,
        cupy.cuda.memory.OutOfMemoryError,
    )


def _child(conn, spec: KernelSpec, shapes, seed: int, backend: str, scratch) -> None:
    from . import cpu

    try:
        if backend == "cpu":
            xp, launch, sync, budget, device = _cpu_backend(spec, scratch)
        else:
            xp, launch, sync, budget, device = _gpu_backend(spec)
    except CompileError as e:
        conn.send(("compile_error", (e.filename, e.log, e.compiler)))
        return
    except (cpu.UnsupportedOnCpu, cpu.NoCompiler, isolation.IsolationUnavailable) as e:
        conn.send(("unavailable", str(e)))
        return
    conn.send(("device", device))
    crashes = _crashes() if backend == "gpu" else ()
    try:
        for event in iter_suite(xp, launch, shapes, seed, sync, budget, spec.input_roundoff):
            conn.send(event)
    except crashes as e:
        conn.send(("crash", explain_cuda_error(e)))
        return
    conn.send(("done", None))


class Child:
    """A spawned child process that reports over a pipe, killed on leaving the
    `with` block whatever happened (a spawned child gets a fresh CUDA context:
    CUDA cannot survive a fork)."""

    def __init__(self, target, *args):
        context = multiprocessing.get_context("spawn")
        self._receive, send = context.Pipe(duplex=False)
        self._process = context.Process(target=target, args=(send, *args), daemon=True)
        with isolation.child_environment():
            self._process.start()
        send.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        if self._process.is_alive():
            self._process.kill()
        self._process.join()
        self._receive.close()

    def next(self, timeout_s: float, doing: str):
        """The child's next (kind, payload), or ("hung", why) or ("died", why)."""
        if not self._receive.poll(timeout_s):
            return "hung", f"{doing}: did not finish within {timeout_s:.0f} s"
        try:
            return isolation.receive(self._receive)
        except EOFError:
            self._process.join(5)
            why = isolation.why_died(self._process.exitcode)
            return "died", f"{doing}: the process running the kernel died ({why})"


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
    running, timeout = "compiling", COMPILE_TIMEOUT_S
    with (
        isolation.scratch() as scratch,
        Child(_child, spec, shapes, seed, backend, scratch) as child,
    ):
        while True:
            kind, payload = child.next(timeout, running)
            if kind == "hung":
                hint = "an endless loop? check that every loop's counter reaches its bound"
                report.error = f"{payload} ({hint})"
                break
            if kind == "died":
                report.error = payload
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
    info = gpu.device_info()
    gflops = {}
    try:
        rng = cupy.random.default_rng()
        A = rng.standard_normal((M, K), dtype=cupy.float32)
        B = rng.standard_normal((K, N), dtype=cupy.float32)
        C = cupy.zeros((M, N), dtype=cupy.float32)
        for name, launch in launches.items():
            ms = bench.median_ms(lambda launch=launch: launch(M, N, K, 1.0, A, B, 0.0, C))
            gflops[name] = 2 * M * N * K / ms / 1e6
    except _crashes() as e:
        conn.send(("crash", explain_cuda_error(e)))
        return
    conn.send(("done", (info.name, gflops)))


def measure(specs: dict, size=(2048, 2048, 2048), timeout_s: float = 120.0):
    """GFLOP/s of each kernel, timed one after another in one child process on
    the GPU, so that kernels measured against each other share the conditions.
    Returns (gpu name, {name: GFLOP/s}). Raises gpu.NoGPU, CompileError, or
    RuntimeError for a crash or a hang."""
    gpu.require("timing")
    with Child(_time_child, specs, size) as child:
        kind, payload = child.next(timeout_s, "timing")
    if kind == "compile_error":
        raise CompileError(*payload)
    if kind in ("crash", "hung", "died"):
        raise RuntimeError(payload)
    return payload
