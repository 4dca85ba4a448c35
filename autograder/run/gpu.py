"""Is there a GPU, and which one: the one place that asks CuPy."""

from __future__ import annotations

import functools
import os
from dataclasses import dataclass

# cuBLAS is the baseline for strict FP32; CuPy would use TF32 tensor cores if
# this were set to 1, and the comparison would be meaningless.
os.environ["CUPY_TF32"] = "0"
# CuPy reduces through CUB unless told otherwise, and builds a CUB kernel for each size
# of array it reduces, about 2 s each, two a size. The checker reduces C at every case's
# shape, so a learner's first check of step 08 on a machine with an empty cache (a fresh
# Colab runtime) took 33 s, and 16 s with CuPy's own reductions, built once for every
# size (H200 host, CuPy 14.2.0, 2026-12-01). Read when CuPy is imported; the children
# that run kernels inherit it. A user's own choice of accelerators stands.
os.environ.setdefault("CUPY_ACCELERATORS", "")


class NoGPU(RuntimeError):
    """Raised by commands that need a GPU on a machine that has none."""


def unavailable_reason() -> str | None:
    """None when a CUDA GPU can be used through CuPy, else why not, in a few words."""
    try:
        import cupy
    except ImportError:
        return "CuPy is not installed (pip install cupy-cuda12x, or cupy-cuda13x for CUDA 13)"
    try:
        count = cupy.cuda.runtime.getDeviceCount()
    except Exception as e:  # no driver, no device, or a driver too old for this CuPy
        return f"no usable CUDA GPU ({type(e).__name__}: {e})"
    return None if count else "no CUDA GPU found"


def require(what: str) -> None:
    reason = unavailable_reason()
    if reason:
        raise NoGPU(f"{what} needs an NVIDIA GPU: {reason}")


# FP32 lanes per SM by compute capability (CUDA C Programming Guide, throughput table).
_FP32_LANES = {(6, 0): 64, (7, 0): 64, (7, 2): 64, (7, 5): 64, (8, 0): 64}
# Dense TF32 tensor-core FLOP per SM per clock, where one figure holds for every GPU
# of a compute capability: NVIDIA's datasheet peaks over SMs and the clock they are
# quoted at (A100: 156 TFLOP/s = 108 SMs x 1024 x 1.41 GHz; H100 SXM: 495 = 132 x 2048
# x 1.83 GHz). Consumer parts of 8.6 and 8.9 run at half the data-center rate of their
# own compute capability, so those have none here.
_TF32_FLOPS_PER_SM_CLOCK = {(8, 0): 1024, (9, 0): 2048}


@dataclass(frozen=True)
class DeviceInfo:
    name: str
    compute_capability: tuple[int, int]
    sms: int
    clock_mhz: float
    cuda: str
    cupy: str

    @property
    def arch(self) -> str:
        return "sm_%d%d" % self.compute_capability

    @property
    def fp32_peak_gflops(self) -> float:
        lanes = _FP32_LANES.get(self.compute_capability, 128)
        return self.sms * lanes * 2 * self.clock_mhz / 1e3

    @property
    def fp32_accurate_peak_gflops(self) -> float:
        """The fastest this GPU can compute a product to FP32 accuracy by any means
        the course knows: its FP32 lanes, or its TF32 tensor cores at three products
        per term (3xTF32, kernels/13_wgmma_3xtf32.cu: 8/3 of the FP32 peak on an
        H100). What a timed FP32 kernel may not pass (autograder.judge.verdicts)."""
        tf32 = tf32_per_fp32(self.compute_capability) or 0.0
        return self.fp32_peak_gflops * max(1.0, tf32 / 3)

    @property
    def tf32_peak_gflops(self) -> float:
        """The fastest this GPU can compute a product from TF32 inputs: its dense TF32
        tensor-core peak where the course knows it, else its FP32 peak (a GeForce of
        8.6 or 8.9 has about as much TF32 as FP32). What a timed kernel of a step judged
        with TF32 inputs (steps 11 and 12) may not pass."""
        return self.fp32_peak_gflops * max(1.0, tf32_per_fp32(self.compute_capability) or 0.0)


def tf32_per_fp32(compute_capability: tuple[int, int]) -> float | None:
    """How many times its FP32 peak a GPU's dense TF32 tensor-core peak is (8 on an A100
    and an H100: an H100 SXM's 67 TFLOP/s at its 1980 MHz boost clock make 535 of TF32,
    where NVIDIA quotes 495, at 1830 MHz); None where the course does not know it."""
    rate = _TF32_FLOPS_PER_SM_CLOCK.get(compute_capability)
    return rate / (2 * _FP32_LANES.get(compute_capability, 128)) if rate else None


def matmul_tf32(A, B, out):
    """out = A @ B by cuBLAS with TF32 tensor cores (CUBLAS_COMPUTE_32F_FAST_TF32): the
    library a reader would use instead of a TF32 kernel. CuPy keeps one compute type per
    dtype, strict FP32 for float32 here (CUPY_TF32 above); it is set to TF32 for this
    call only."""
    import cupy
    from cupy._core import _routines_linalg as linalg

    before = linalg.get_compute_type(cupy.float32)
    linalg.set_compute_type(cupy.float32, linalg.COMPUTE_TYPE_TF32)
    try:
        return cupy.matmul(A, B, out=out)
    finally:
        linalg.set_compute_type(cupy.float32, before)


def slug(name: str) -> str:
    """'NVIDIA H100 80GB HBM3' -> 'h100_80gb_hbm3', for file names."""
    words = name.lower().replace("nvidia", "").replace("-", " ").split()
    return "_".join(words) or "gpu"


def device_info() -> DeviceInfo:
    import cupy

    dev = cupy.cuda.Device()
    props = cupy.cuda.runtime.getDeviceProperties(dev.id)
    version = cupy.cuda.runtime.runtimeGetVersion()
    return DeviceInfo(
        name=props["name"].decode(),
        compute_capability=(props["major"], props["minor"]),
        sms=props["multiProcessorCount"],
        clock_mhz=dev.attributes["ClockRate"] / 1e3,  # reported in kHz: the boost clock
        cuda=f"{version // 1000}.{version % 1000 // 10}",
        cupy=cupy.__version__,
    )


def device_limits():
    """This GPU as step 09's dispatcher sees it (ladder.hardware.Device): its SMs, and
    what each holds, from the device's own attributes; its architecture's figures
    (hardware.ARCHS) where CuPy names none."""
    import cupy

    from ..ladder import hardware

    info = device_info()
    known = hardware.device(info.arch, info.sms, info.clock_mhz, 0.0, info.name)
    attributes = cupy.cuda.Device().attributes
    # Memory clock in kHz, bus width in bits, double data rate.
    memory_khz, bus_bits = attributes.get("MemoryClockRate"), attributes.get("GlobalMemoryBusWidth")
    bandwidth = 2 * memory_khz * 1e3 * bus_bits / 8 / 1e9 if memory_khz and bus_bits else 1000.0
    return hardware.Device(
        info.name,
        known.arch,
        info.sms,
        attributes.get("MaxSharedMemoryPerMultiprocessor", known.shared_per_sm),
        attributes.get("MaxSharedMemoryPerBlockOptin", known.shared_per_block_optin),
        attributes.get("MaxRegistersPerMultiprocessor", known.registers_per_sm),
        attributes.get("MaxThreadsPerMultiProcessor", known.max_threads_per_sm),
        attributes.get("MaxBlocksPerMultiprocessor", known.max_blocks_per_sm),
        _FP32_LANES.get(info.compute_capability, 128),
        info.clock_mhz,
        bandwidth,
    )


@functools.cache
def clusters_at_once(size: int) -> int:
    """How many clusters of `size` blocks, each block taking a whole SM (as step 13's
    do), this GPU runs at once: active_clusters of a kernel that takes all of an SM's
    shared memory. A cluster's blocks share one GPC, so where a GPC's SMs do not split
    into whole clusters some idle: an H200 runs 66 clusters of 2 (132 SMs), but 30 of 4
    and 15 of 8 (120)."""
    import cupy

    probe = cupy.RawKernel('extern "C" __global__ void probe() {}', "probe")
    shared = cupy.cuda.Device().attributes["MaxSharedMemoryPerBlockOptin"]
    probe.max_dynamic_shared_size_bytes = shared
    return active_clusters(probe.kernel.ptr, size, 128, shared)


def active_clusters(function: int, size: int, threads: int, shared_bytes: int) -> int:
    """How many clusters of `size` blocks (threads each, shared_bytes of dynamic shared
    memory) of the kernel at driver handle `function` fit on this GPU at once (the
    driver's cuOccupancyMaxActiveClusters, the cluster's shape given at launch where the
    kernel names none)."""
    from cuda.bindings import driver

    config = driver.CUlaunchConfig()
    config.gridDimX, config.gridDimY, config.gridDimZ = 1, 1, size
    config.blockDimX, config.blockDimY, config.blockDimZ = threads, 1, 1
    config.sharedMemBytes = shared_bytes
    cluster = driver.CUlaunchAttribute()
    cluster.id = driver.CUlaunchAttributeID.CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION
    cluster.value.clusterDim.x, cluster.value.clusterDim.y, cluster.value.clusterDim.z = 1, 1, size
    config.attrs, config.numAttrs = [cluster], 1
    err, count = driver.cuOccupancyMaxActiveClusters(driver.CUfunction(function), config)
    if err != driver.CUresult.CUDA_SUCCESS:
        raise RuntimeError(f"cuOccupancyMaxActiveClusters for clusters of {size}: {err}")
    return count


def software_versions() -> dict[str, str]:
    """What a timing on this GPU depends on besides the GPU and the kernel's source: the
    driver, the CUDA runtime, NVRTC and CuPy, by version."""
    import cupy

    from . import compiler

    driver = cupy.cuda.runtime.driverGetVersion()
    info = device_info()
    try:
        nvrtc = compiler.nvrtc_version()
    except Exception:  # no cuda-bindings: the NVRTC CuPy compiles with
        nvrtc = "%d.%d" % cupy.cuda.nvrtc.getVersion()
    return {
        "driver": f"{driver // 1000}.{driver % 1000 // 10}",
        "cuda": info.cuda,
        "nvrtc": nvrtc,
        "cupy": info.cupy,
    }
