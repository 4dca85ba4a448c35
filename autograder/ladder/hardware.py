"""What the GPUs the course talks about can hold: one table, read by the compiler's
report, the tuner, the explorers, the SASS report and the book.

Per architecture, the limits of the CUDA C++ Programming Guide's table
"Technical Specifications per Compute Capability" (compute capabilities 7.5,
8.0, 8.6, 8.9 and 9.0): threads per block, resident blocks, warps and threads
per SM, registers, shared memory per SM and per block. Two allocation rules
come from NVIDIA's occupancy calculator (cuda_occupancy.h, which ships with the
toolkit) rather than from that table: registers are handed to warps in units of
256 and split evenly over an SM's 4 sub-partitions, and shared memory is handed
to blocks in units of 256 bytes (7.x) or 128 bytes (8.x and later), with 1 KB
more per block that the driver reserves for itself on 8.0 and later (the
Programming Guide's compute capability 8.x section).

Per GPU, NVIDIA's datasheet figures (SMs, FP32 peak, memory bandwidth), for
orientation: measured numbers always come from book/data/.

`occupancy` is the calculator's arithmetic: how many blocks of a kernel fit on
one SM at once, and which resource runs out first.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

KB = 1024
WARP = 32


@dataclass(frozen=True)
class Arch:
    """The limits of one compute capability."""

    name: str  # 'sm_75'
    family: str
    max_threads_per_block: int
    max_blocks_per_sm: int
    max_warps_per_sm: int
    registers_per_sm: int
    registers_per_block: int
    max_registers_per_thread: int
    # The largest shared-memory carveout of an SM, in bytes.
    shared_per_sm: int
    # Static __shared__ arrays may hold at most this much; more needs dynamic
    # shared memory and an opt-in (cudaFuncAttributeMaxDynamicSharedMemorySize),
    # up to shared_per_block_optin.
    shared_per_block_static: int
    shared_per_block_optin: int
    # cuda_occupancy.h: what a block's shared memory is rounded up to, and what
    # the driver reserves per block beside it.
    shared_granularity: int
    shared_reserved_per_block: int
    register_granularity: int = 256  # registers per warp come in units of this
    sub_partitions: int = 4  # each holds 1/4 of the registers and of the warps

    @property
    def max_threads_per_sm(self) -> int:
        return self.max_warps_per_sm * WARP


def _arch(name, family, blocks, warps, shared_sm_kb, shared_block_kb, granularity, reserved):
    return Arch(
        name=name,
        family=family,
        max_threads_per_block=1024,
        max_blocks_per_sm=blocks,
        max_warps_per_sm=warps,
        registers_per_sm=64 * KB,
        registers_per_block=64 * KB,
        max_registers_per_thread=255,
        shared_per_sm=shared_sm_kb * KB,
        shared_per_block_static=48 * KB,
        shared_per_block_optin=shared_block_kb * KB,
        shared_granularity=granularity,
        shared_reserved_per_block=reserved,
    )


# CUDA C++ Programming Guide, "Technical Specifications per Compute Capability".
ARCHS: dict[str, Arch] = {
    a.name: a
    for a in (
        _arch("sm_75", "Turing", 16, 32, 64, 64, 256, 0),
        _arch("sm_80", "Ampere GA100", 32, 64, 164, 163, 128, 1 * KB),
        _arch("sm_86", "Ampere GA10x", 16, 48, 100, 99, 128, 1 * KB),
        _arch("sm_89", "Ada", 24, 48, 100, 99, 128, 1 * KB),
        _arch("sm_90", "Hopper", 32, 64, 228, 227, 128, 1 * KB),
    )
}

# The smallest GPU the course targets (Colab's T4): the tuner rejects what does not
# fit it, and every reference kernel must.
SMALLEST = "sm_75"

# NVIDIA's datasheet figures, for orientation (the book's GPU appendix shows them).
GPUS = {
    "Tesla T4": {"sms": 40, "arch": "sm_75", "fp32_tflops": 8.1, "bandwidth_gbs": 320},
    "A100 (40 GB)": {"sms": 108, "arch": "sm_80", "fp32_tflops": 19.5, "bandwidth_gbs": 1555},
    "L4": {"sms": 58, "arch": "sm_89", "fp32_tflops": 30.3, "bandwidth_gbs": 300},
    "H100 SXM": {"sms": 132, "arch": "sm_90", "fp32_tflops": 67.0, "bandwidth_gbs": 3350},
}


def arch(name: str) -> Arch:
    """The limits of an architecture by name: 'sm_90', 'sm_90a', '9.0' or 90."""
    text = str(name).strip().lower().removeprefix("sm_").removeprefix("compute_")
    digits = "".join(c for c in text if c.isdigit())
    key = f"sm_{digits}"
    if key not in ARCHS:
        known = ", ".join(ARCHS)
        raise KeyError(f"no limits known for {name!r}; the course knows {known}")
    return ARCHS[key]


@dataclass(frozen=True)
class Device:
    """One GPU as the dispatcher of step 09 sees it before timing anything: its SMs, and
    what each holds (run.gpu.device_limits reads them from the device; `device` makes
    one from the table above, for a GPU that is not here)."""

    name: str
    arch: str  # 'sm_75'
    sms: int
    shared_per_sm: int  # bytes
    shared_per_block_optin: int
    registers_per_sm: int
    max_threads_per_sm: int
    max_blocks_per_sm: int
    fp32_lanes_per_sm: int  # FMAs an SM issues per clock
    clock_mhz: float
    bandwidth_gbs: float  # device memory

    @property
    def fp32_peak_flops(self) -> float:
        """FP32 operations a second at this clock: an FMA a lane a clock, two operations."""
        return self.sms * self.fp32_lanes_per_sm * 2 * self.clock_mhz * 1e6

    def limits(self) -> Arch:
        """The architecture's limits, with this device's own figures where it has them."""
        return replace(
            arch(self.arch),
            registers_per_sm=self.registers_per_sm,
            max_warps_per_sm=self.max_threads_per_sm // WARP,
            max_blocks_per_sm=self.max_blocks_per_sm,
            shared_per_sm=self.shared_per_sm,
            shared_per_block_optin=self.shared_per_block_optin,
        )


# FP32 lanes per SM (CUDA C++ Programming Guide, arithmetic instructions' throughput):
# 64 on 7.5 and 8.0, 128 on 8.6, 8.9 and 9.0.
FP32_LANES = {"sm_75": 64, "sm_80": 64, "sm_86": 128, "sm_89": 128, "sm_90": 128}


def device(
    arch_name: str, sms: int, clock_mhz: float, bandwidth_gbs: float, name: str = ""
) -> Device:
    """A GPU of this architecture with this many SMs, with the architecture's limits
    (the Programming Guide's table above): for GPUs the course talks about but does
    not have (a T4, an A100, an L4), in tests and the book."""
    a = arch(arch_name)
    return Device(
        name or a.name,
        a.name,
        sms,
        a.shared_per_sm,
        a.shared_per_block_optin,
        a.registers_per_sm,
        a.max_threads_per_sm,
        a.max_blocks_per_sm,
        FP32_LANES[a.name],
        clock_mhz,
        bandwidth_gbs,
    )


def datasheet_device(gpu_name: str) -> Device:
    """A GPU of GPUS as `device` makes it, its clock the one its FP32 peak is quoted at."""
    g = GPUS[gpu_name]
    lanes = FP32_LANES[g["arch"]]
    clock_mhz = g["fp32_tflops"] * 1e6 / (g["sms"] * lanes * 2)
    return device(g["arch"], g["sms"], clock_mhz, g["bandwidth_gbs"], gpu_name)


def _round_up(x: int, unit: int) -> int:
    return -(-x // unit) * unit


@dataclass(frozen=True)
class Occupancy:
    """How many blocks of a kernel one SM holds at once, and why no more."""

    arch: str
    threads: int
    registers: int
    shared_bytes: int
    # Blocks per SM that each resource alone would allow.
    by_registers: int
    by_shared: int
    by_warps: int
    by_blocks: int
    max_warps: int

    @property
    def blocks(self) -> int:
        return min(self.by_registers, self.by_shared, self.by_warps, self.by_blocks)

    @property
    def warps(self) -> int:
        return self.blocks * -(-self.threads // WARP)

    @property
    def fraction(self) -> float:
        """Theoretical occupancy: active warps / the most an SM can hold."""
        return self.warps / self.max_warps

    @property
    def limited_by(self) -> list[str]:
        """The resources that run out first (a resource the block does not use never does)."""
        a = arch(self.arch)
        limits = {
            "registers": self.by_registers if self.registers else None,
            "shared memory": self.by_shared
            if self.shared_bytes + a.shared_reserved_per_block
            else None,
            "warps": self.by_warps,
            "blocks per SM": self.by_blocks,
        }
        return [name for name, n in limits.items() if n == self.blocks]

    def __str__(self) -> str:
        if not self.blocks:
            return f"{self.arch}: does not fit on an SM"
        return (
            f"{self.arch}: {self.blocks} block{'s' * (self.blocks != 1)} per SM, "
            f"{self.warps}/{self.max_warps} warps ({self.fraction:.0%}), "
            f"limited by {' and '.join(self.limited_by)}"
        )


def occupancy(arch_name: str | Arch, threads: int, registers: int, shared_bytes: int = 0) -> Occupancy:
    """Theoretical occupancy of blocks of `threads` threads using `registers` per
    thread and `shared_bytes` of shared memory (static and dynamic together), with
    the largest shared-memory carveout, as the occupancy calculator counts it.
    arch_name may be an Arch itself (Device.limits: one GPU's own figures)."""
    a = arch_name if isinstance(arch_name, Arch) else arch(arch_name)
    warps = -(-threads // WARP)
    # Warps: the SM's warp slots; none if the block is larger than a block may be.
    by_warps = a.max_warps_per_sm // warps if threads <= a.max_threads_per_block else 0
    # Registers: per warp, rounded up to the allocation unit; each sub-partition
    # holds a quarter of the register file and whole warps only.
    per_warp = _round_up(registers * WARP, a.register_granularity)
    if registers > a.max_registers_per_thread or per_warp * warps > a.registers_per_block:
        by_registers = 0
    elif per_warp == 0:
        by_registers = a.max_blocks_per_sm
    else:
        per_partition = (a.registers_per_sm // a.sub_partitions) // per_warp
        by_registers = per_partition * a.sub_partitions // warps
    # Shared memory: the block's share, with what the driver reserves, rounded up.
    allocated = _round_up(shared_bytes + a.shared_reserved_per_block, a.shared_granularity)
    if shared_bytes > a.shared_per_block_optin:
        by_shared = 0
    elif allocated == 0:
        by_shared = a.max_blocks_per_sm
    else:
        by_shared = a.shared_per_sm // allocated
    return Occupancy(
        a.name,
        threads,
        registers,
        shared_bytes,
        by_registers,
        by_shared,
        by_warps,
        a.max_blocks_per_sm,
        a.max_warps_per_sm,
    )


def launch_problems(
    arch_name: str | Arch,
    threads: int,
    registers: int | None = None,
    static_shared: int = 0,
    dynamic_shared: int = 0,
    registers_floor: bool = False,
) -> list[str]:
    """Why a block of this kind cannot be launched on `arch_name`, in words; empty
    when it can. `registers_floor`: the count is a lower bound (the tuner's estimate
    before compiling), and the messages say 'at least'. arch_name may be an Arch itself
    (Device.limits)."""
    a = arch_name if isinstance(arch_name, Arch) else arch(arch_name)
    found = []
    if threads > a.max_threads_per_block:
        found.append(f"{threads} threads per block; at most {a.max_threads_per_block}")
    least = "at least " if registers_floor else ""
    if registers is not None:
        if registers > a.max_registers_per_thread:
            found.append(
                f"{least}{registers} registers per thread; at most {a.max_registers_per_thread}"
            )
        elif registers * threads > a.registers_per_block:
            found.append(
                f"{least}{registers} registers x {threads} threads"
                + ("" if registers_floor else f" = {registers * threads} per block")
                + f"; an SM has {a.registers_per_sm}"
            )
    if static_shared > a.shared_per_block_static:
        found.append(
            f"{static_shared} bytes of shared memory; at most {a.shared_per_block_static} "
            f"({a.shared_per_block_static // KB} KB) of static shared memory"
        )
    total = static_shared + dynamic_shared
    if total > a.shared_per_block_optin:
        found.append(
            f"{total} bytes of shared memory per block; a {a.name} block may have at most "
            f"{a.shared_per_block_optin} ({a.shared_per_block_optin // KB} KB)"
        )
    return found
