"""Where a kernel runs: the GPU through CuPy, or the CPU through autograder.run.cpu (the run layer).

A backend compiles a kernel and hands back what the judge needs, whatever the
machine: an array module (CuPy or NumPy), launch(M, N, K, alpha, A, B, beta, C),
a way to wait for the device, a clock for one launch, and what a crash looks like.
It is opened inside the child process that runs the kernel (autograder.judge.job).
"""

from __future__ import annotations

import contextlib
import functools
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from typing import Callable

import numpy as np

from ..isolate import isolation
from ..ladder import registry
from . import (
    autotune,
    by_shape,
    compiler,
    composed,
    contract,
    device_clock,
    device_only,
    gpu,
    gpu_lock,
    guarded,
    paths,
    shape_timer,
    split_k,
    tensor_maps,
)
from .kernel import KernelSpec

# Floats of padding each side of the CPU backend's split-K workspace.
WORKSPACE_PAD = 1024


class BackendUnavailable(RuntimeError):
    """The chosen backend cannot run this kernel here (no compiler, unsupported construct)."""


class LaunchRefused(Exception):
    """The launch asks for more than the device gives a block; str() says what."""


def _refuse_unlaunchable(spec: KernelSpec, max_threads: int, why_fewer: str = "") -> None:
    """Refuse, before running, a block the device cannot run: such a launch fails on a
    GPU (cudaErrorInvalidConfiguration), and would look like an endless loop on the CPU."""
    bx, by = spec.geometry.block
    threads = bx * by
    if threads > max_threads:
        raise LaunchRefused(
            f"the launch asks for {threads} threads per block (block {bx}x{by}); "
            f"this device runs at most {max_threads} per block{why_fewer}"
        )


def _check_contract(spec: KernelSpec) -> None:
    """A kernel that does not take the contract's parameters, told as a compile error."""
    try:
        contract.check(
            spec.source, spec.name_expression, spec.filename, contract.CONTRACTS[spec.contract]
        )
    except contract.Mismatch as e:
        raise compiler.CompileError(spec.filename, str(e), contract.CHECKER) from None


@dataclass
class Backend:
    name: str  # "gpu" or "cpu"
    device: str  # where kernels run, in words
    device_name: str  # the device's own name: "Tesla T4", or "CPU"
    xp: object  # cupy or numpy
    sync: Callable[[], None]
    # What a crashed kernel raises here (autograder.judge.advice says what it means).
    crashes: tuple[type[Exception], ...]
    # The most GFLOP/s the device can compute to FP32 accuracy: its FP32 peak, or
    # 3xTF32's on its tensor cores (gpu.DeviceInfo). None on the CPU.
    peak_gflops: float | None = None
    # The most GFLOP/s it can compute from TF32 inputs (gpu.DeviceInfo). None on the CPU.
    tf32_peak_gflops: float | None = None
    flush_caches: Callable[[], None] = lambda: None
    confinement: str = ""  # how the process running the kernels is confined, in full
    # What a checked case's seconds are read from: the clock, or on the CPU the
    # kernel's own time (cpu.own_clock), which other work on the machine cannot stretch.
    clock: Callable[[], float] = time.perf_counter

    def load(self, specs: list[KernelSpec]) -> list:
        """launch(M, N, K, alpha, A, B, beta, C) for each spec, compiled for this backend."""
        raise NotImplementedError

    def throttled(self) -> str:
        """Why the timings taken since the last call say nothing of the kernels (the
        device throttled), or '' when they do; then a new set starts."""
        return ""

    def shared(self):
        """A turn on the device beside other work whose result speed cannot change
        (autograder.run.gpu_lock); the CPU backend has no one to take turns with."""
        return contextlib.nullcontext()

    def alone(self):
        """A turn with the device to itself, for a timing."""
        return contextlib.nullcontext()

    def empty(self, shape: tuple[int, ...]):
        """An uninitialised float32 array for a timed launch's A, B or C."""
        return self.xp.empty(shape, dtype=self.xp.float32)

    def time_once(self, run: Callable[[], object]) -> float:
        """Seconds that run() keeps the device busy."""
        self.sync()
        start = time.perf_counter()
        run()
        self.sync()
        return time.perf_counter() - start


# Every GPU build carries line numbers. They leave the machine code as it is
# (tests/test_sass.py compares it), and they let compute-sanitizer's reports and
# Nsight Compute's name the learner's lines. So the sanitizer's run
# (autograder.judge.sanitizer) builds exactly what the checks built, and CuPy's
# cache of compiled modules hands it theirs instead of compiling it again.
GPU_OPTIONS = (*compiler.DEFAULT_OPTIONS, "-lineinfo")


def gpu_launcher(
    spec: KernelSpec, choose=None, tune: bool = True, table: bool = True, layered: bool = True
):
    """Compile spec for the current GPU (GPU_OPTIONS);
    return launch(M, N, K, alpha, A, B, beta, C). For a tensor-core step (12, 13), that
    is its kernel in layers of K where C has too few tiles (split_k), unless `layered` is
    False, and at small products the fastest of that and step 09's FP32 GEMM, timed on
    first use where `tune` and SGEMM_AUTOTUNE allow (paths). For a reduction (step 09),
    it is the GEMM autograder.run.by_shape builds around it, with the plans of `choose`
    (by default, the dispatcher's for this GPU: its committed table, else tuned on first
    use where `tune` and SGEMM_AUTOTUNE allow, autograder.run.autotune; `table` False
    sets the committed table aside, as on a GPU nobody tuned on); launch.function is
    the spec's own kernel either way, and launch.choose the dispatcher (its .first_use,
    where it tunes, says what tuning cost)."""
    if spec.contract == "tma" and layered:
        return _layered(spec, tune, table)
    if spec.contract != "reduce":
        return _gpu_kernel(spec)
    import cupy

    info = gpu.device_info()
    gemms = _gpu_kernels(composed.gemm_specs(arch=info.arch))
    reduce = _gpu_kernel(spec)
    if choose is None:
        choose = _dispatcher(info, gemms, tune, table)
    launch = composed.compose(
        choose,
        gemms,
        reduce,
        lambda n: cupy.empty(n, dtype=cupy.float32),
        spec.split_every_case,
    )
    launch.function = reduce.function
    launch.choose = choose
    return launch


def judged_launcher(spec: KernelSpec):
    """launch for the judge's checks, and for compute-sanitizer's run of the same: never
    tuned (a case's time limit is the kernel's; the learner's reduction is timed beside
    the reference's under the same plans anyway: those the cache kept, else the device's
    arithmetic). A tensor-core step unsplit: each block walks all of K and reuses its
    buffers as often as it can, so that a race in their reuse shows (in layers of five
    slices, a block reuses one buffer once), and every layer is the learner's own, where
    the judge's account of split-K (judge.reduction) takes them for the course's."""
    return gpu_launcher(spec, tune=False, layered=False)


def _layered(spec: KernelSpec, tune: bool, table: bool):
    """A tensor-core step's GEMM: its kernel in the layers of K split_k chooses, added up
    in clusters where the kernel can (step 13's LAYERS), else by the course's own
    reduction (kernels/09), on matrices TMA can describe; where tuning is on, at small
    products the fastest of that, the kernel with smaller blocks (registry.block_rows), in
    the reduction's layers or in one, on padded copies or not, and step 09's FP32 GEMM
    (paths)."""
    import cupy

    info = gpu.device_info()
    step09 = KernelSpec.from_step(registry.step("09"))
    # Built for the kernel's own target, as the kernel is, and so not by CuPy, which
    # builds with -ftz=true (cupy/cupy#9576): its sums would flush layers' partial
    # sums under 2^-126 to zero, where step 13 keeps FP32's subnormal numbers.
    reduce = _gpu_kernel(replace(step09, target=spec.target))
    step = registry.step_of_kernel(spec.filename, spec.name_expression)
    rows = registry.block_rows(step)

    def variant(height: int, cluster: int = 1) -> KernelSpec:
        """The spec's kernel, blocks `height` rows of C, clusters of `cluster` layers."""
        if (height, cluster) == (rows[0], 1):
            return spec
        shaped = step.with_params(BM=height, **({"LAYERS": cluster} if cluster > 1 else {}))
        return replace(spec, name_expression=shaped.name_expression, geometry=shaped.geometry)

    @functools.cache
    def kernel(height: int, cluster: int = 1):
        try:
            return _gpu_kernel(variant(height, cluster))
        except compiler.CompileError:  # a learner's kernel, written for its own blocks only
            if (height, cluster) == (rows[0], 1):
                raise
            return None

    # Step 13's layers of K can add their sums up in clusters (its LAYERS); step 12's
    # are added up by the reduction.
    clusters = "LAYERS" in step.params

    def together(height: int) -> split_k.Clusters:
        """The kernel at this height in clusters of layers (None where it does not compile)."""
        return split_k.Clusters(functools.partial(kernel, height), gpu.clusters_at_once)

    @functools.cache
    def tensor(height: int, layers: int | None, copy: bool | None, clustered: bool = clusters):
        launch = kernel(height)
        if launch is None:
            return None
        shaped = variant(height)
        return split_k.gemm(
            shaped.name_expression, launch, reduce, cupy, shaped.geometry.tile, info.sms,
            layers, copy, together(height) if clustered else None,
        )  # fmt: skip

    def plans(M: int, N: int, K: int, height: int) -> list[tuple[int, bool]]:
        """(layers, in clusters) worth timing at this height, the first tensor's default:
        the layers split_k models in clusters, where the kernel has them, then the
        reduction's. A kernel that does not compile in clusters of those layers (a
        learner's, written for one) adds them up by the reduction, and its plan says so."""
        tile = variant(height).geometry.tile
        reduced = (split_k.layers(M, N, K, tile, info.sms), False)
        if not clusters:
            return [reduced]
        return [split_k.plan(M, N, K, tile, info.sms, together(height)), reduced]

    own = tensor(rows[0], None, None)
    if not (tune and autotune.enabled()):
        return own
    fp32 = gpu_launcher(replace(step09, split_every_case=False), tune=tune, table=table)
    # The race's check of C allows the inputs' rounding (TF32's, in step 12).
    timer = functools.partial(shape_timer.gpu_timer, tolerance=1e-4 + 2 * spec.input_roundoff)
    launch = paths.gemm(
        spec.filename, tensor, fp32, timer, plans, rows, info.fp32_peak_gflops * 1e9
    )
    launch.function = own.function
    return launch


def _dispatcher(info, gemms, tune: bool, table: bool):
    """Step 09's choose(M, N, K) on this GPU (autotune.chooser). The device's limits,
    and the registers each tile shape's kernel was compiled to, feed the arithmetic;
    first-use tuning times the plans with the course's own reduction (kernels/09), so
    that what a learner's reduction does never decides a plan."""
    registers = {}
    for name, gemm in gemms.items():
        count = getattr(gemm.function, "num_regs", None)
        if name in by_shape.TILES and count:
            registers[name] = count

    def timer():
        reference = KernelSpec.from_step(registry.step("09"))
        return autotune.gpu_timer(gemms, _gpu_kernel(reference))

    return autotune.chooser(
        info.name, gpu.device_limits(), timer, gpu.software_versions, registers, tune, table
    )


# How a scalar of a contract is passed to CuPy.
_SCALARS = {"int": np.int32, "float": np.float32}


def _gpu_kernels(specs: dict[str, KernelSpec]) -> dict[str, Callable]:
    """_gpu_kernel of each spec, built side by side. Step 09 builds 33 of step 08's
    kernels, and ptxas takes about 2 s for each (sm_75, NVRTC 13.5, on this project's
    build machine); NVRTC's compile releases the GIL (CuPy's nvrtc.compileProgram), so
    threads build them at once where there are cores for them. CuPy's current GPU is
    per thread: each thread makes the caller's its own."""
    import cupy

    device = cupy.cuda.Device()

    def build(spec: KernelSpec):
        with device:
            return _gpu_kernel(spec)

    with ThreadPoolExecutor() as pool:  # Python's default: a thread a CPU, and a few more
        return dict(zip(specs, pool.map(build, specs.values())))


def _gpu_kernel(spec: KernelSpec):
    """launch(*arguments, layers=1): spec's kernel over a grid `layers` deep, with the
    arguments of its contract. A "tma" kernel is given the GEMM's arguments too; it
    gets its tensor maps of A and B here, made for each launch (tensor_maps)."""
    # An architecture-specific target is built for the GPU it names; on another,
    # CuPy builds for the GPU at hand, and the kernel's own #error says why not.
    target = spec.target if spec.target and spec.target[:-1] == gpu.device_info().arch else None
    function = compiler.load(spec.source, spec.name_expression, spec.filename, GPU_OPTIONS, target)
    block = (*spec.geometry.block, 1)
    shared = spec.geometry.shared_bytes
    if shared:  # a kernel gets more than 48 KB of dynamic shared memory only on request
        function.max_dynamic_shared_size_bytes = shared
    kinds = [_SCALARS.get(p.types[0]) for p in contract.CONTRACTS[spec.contract].parameters]
    boxes = spec.geometry.tma_boxes

    def launch(*arguments, layers: int = 1):
        M, N, K, _, A, B = arguments[:6]
        if boxes:
            arguments = (*arguments, *tensor_maps.maps(M, N, K, A, B, boxes))
        function(
            (*spec.geometry.grid(M, N), layers),
            block,
            tuple(kind(a) if kind else a for kind, a in zip(kinds, arguments)),
            shared_mem=shared,
        )

    launch.function = function
    return launch


class GpuBackend(Backend):
    def __init__(self):
        import cupy

        info = gpu.device_info()
        device = cupy.cuda.Device()
        # Writing twice the L2 cache evicts whatever a timed launch's inputs left there.
        l2 = device.attributes["L2CacheSize"]
        self._flush = cupy.empty(max(2 * l2 // 4, 1), dtype=cupy.float32)
        self._clock = device_clock.DeviceClock()
        self._boost_mhz = info.clock_mhz
        self._identity = gpu_lock.identity()
        super().__init__(
            name="gpu",
            device=f"{info.name} ({info.arch}, CUDA {info.cuda}, CuPy {info.cupy})",
            device_name=info.name,
            xp=cupy,
            sync=device.synchronize,
            crashes=(
                cupy.cuda.runtime.CUDARuntimeError,
                cupy.cuda.driver.CUDADriverError,
                cupy.cuda.memory.OutOfMemoryError,
            ),
            peak_gflops=info.fp32_accurate_peak_gflops,
            tf32_peak_gflops=info.tf32_peak_gflops,
            flush_caches=lambda: self._flush.fill(0),
        )

    def load(self, specs: list[KernelSpec]) -> list:
        return [self._load(spec) for spec in specs]

    def _load(self, spec: KernelSpec):
        import cupy

        # What NVRTC would read (#include): refused on every backend. Code hidden from
        # NVRTC is never built on a GPU, where a kernel may test __CUDA_ARCH__.
        device_only.refuse_directives(spec.source, spec.filename, hidden_code=False)
        _check_contract(spec)  # CuPy would pass the contract's arguments whatever it declares
        launch = judged_launcher(spec)
        device = cupy.cuda.Device().attributes
        limit = min(device["MaxThreadsPerBlock"], launch.function.max_threads_per_block)
        fewer = ""
        if limit < device["MaxThreadsPerBlock"]:
            fewer = f" with the {launch.function.num_regs} registers each of its threads uses"
        _refuse_unlaunchable(spec, limit, fewer)
        shared = spec.geometry.shared_bytes + launch.function.shared_size_bytes
        if shared > device["MaxSharedMemoryPerBlockOptin"]:
            raise LaunchRefused(
                f"a block needs {shared} bytes of shared memory; this device gives a block "
                f"at most {device['MaxSharedMemoryPerBlockOptin']}"
            )
        return launch

    def empty(self, shape: tuple[int, ...]):
        """With nothing mapped around it (autograder.run.guarded): a kernel that reads
        or writes past A, B or C when timed faults on every GPU."""
        return guarded.empty(shape)

    def time_once(self, run) -> float:
        """The device's time for run()'s work alone, the host's launch work held out
        (autograder.run.device_clock)."""
        return self._clock.time(run)

    def throttled(self) -> str:
        return self._clock.throttled(self._boost_mhz)

    def shared(self):
        return gpu_lock.shared(self._identity)

    def alone(self):
        return gpu_lock.alone(self._identity)


class CpuBackend(Backend):
    def __init__(self, scratch):
        from . import cpu

        try:
            cpu.compiler()
        except cpu.NoCompiler as e:
            raise BackendUnavailable(str(e)) from None
        super().__init__(
            name="cpu",
            device=cpu.device(),
            device_name="CPU",
            xp=np,
            sync=lambda: None,
            crashes=(),
            clock=cpu.own_clock,
        )
        self.scratch = scratch

    def load(self, specs: list[KernelSpec]) -> list:
        from . import cpu

        for spec in specs:
            # A kernel made of what the CPU cannot run (tensor cores, cp.async) is
            # refused by name, before NVRTC would stop at its sm_80-only instructions.
            try:
                cpu.refuse_unsupported(spec.source, spec.filename)
            except cpu.UnsupportedOnCpu as e:
                raise BackendUnavailable(str(e)) from None
            _refuse_unlaunchable(spec, compiler.MAX_THREADS_PER_BLOCK)
            _check_contract(spec)
            try:  # NVRTC first, so that a compile error reads exactly as it would on a GPU
                compiler.compile_for_arch(
                    spec.source, [spec.name_expression], "sm_75", spec.filename
                )
            except compiler.NvrtcUnavailable:
                pass
        # A reduction runs inside step 08's kernel at every tile shape the dispatcher
        # may choose (in_turn's), built here with the rest.
        reduces = any(s.contract == "reduce" for s in specs)
        gemms = composed.gemm_specs(by_shape.CHOICES) if reduces else {}
        try:  # all built before the process confines itself, once
            launches = cpu.launchers([*specs, *gemms.values()], self.scratch)
        except (cpu.UnsupportedOnCpu, cpu.NoCompiler, isolation.IsolationUnavailable) as e:
            raise BackendUnavailable(str(e)) from None
        self.device = cpu.device()  # now with the confinement it is under
        self.confinement = isolation.state()
        gemm_launches = dict(zip(gemms, launches[len(specs) :]))
        return [
            self._compose(launch, gemm_launches, spec.split_every_case)
            if spec.contract == "reduce"
            else launch
            for spec, launch in zip(specs, launches)
        ]

    @staticmethod
    def _compose(reduce, gemms, split_every_case: bool):
        """The GEMM around a reduction, with every tile shape in turn (by_shape.in_turn):
        on the CPU there is no speed to choose for, and each gets checked. A launch on
        the inputs of the one before it (the checker's second run of a failing case, to
        look for a race) runs that one's plan again, as a GPU runs a shape's plan every
        time: in other layers of K, a wrong reduction's C would change from run to run,
        and read as a race."""

        def workspace(n: int):
            # Surrounded by NaN, as the checker surrounds A and B: a read
            # outside it is caught as one outside A or B is.
            buffer = np.full(n + 2 * WORKSPACE_PAD, np.nan, dtype=np.float32)
            return buffer[WORKSPACE_PAD : WORKSPACE_PAD + n]

        turns, last = by_shape.in_turn(), {}
        gemm = composed.compose(lambda M, N, K: last["plan"], gemms, reduce, workspace,
                                split_every_case)  # fmt: skip

        def launch(M, N, K, alpha, A, B, beta, C):
            inputs = (M, N, K, alpha, beta, A.ctypes.data, B.ctypes.data)
            if last.get("inputs") != inputs:
                last["inputs"], last["plan"] = inputs, turns(M, N, K)
            gemm(M, N, K, alpha, A, B, beta, C)

        launch.splits, launch.workspace = gemm.splits, gemm.workspace
        return launch


def resolve(requested: str = "auto") -> str:
    """Where kernels run: `requested`, or for "auto" the GPU where CuPy sees one, else the CPU."""
    if requested != "auto":
        return requested
    return "cpu" if gpu.unavailable_reason() else "gpu"


def open_backend(name: str, scratch) -> Backend:
    """The backend called `name` ("gpu" or "cpu"), opened in this process; scratch
    is the one directory native code built by the CPU backend may write in."""
    return GpuBackend() if name == "gpu" else CpuBackend(scratch)
