"""The reference ladder: every step's kernel file, name, template parameters and
launch geometry, declared once. The CLI, checker, benchmark, tests, book and
exercises all read it from here."""

from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from functools import partial
from pathlib import Path

KERNEL_DIR = Path(__file__).resolve().parents[2] / "kernels"
# What was measured on which GPU: the benchmark's, profiler's and tuner's files,
# which the book's figures and step 09's dispatcher read.
DATA_DIR = KERNEL_DIR.parent / "book" / "data"


@dataclass(frozen=True)
class Geometry:
    """How a kernel is launched over C.

    block: threads per block (x, y).
    tile: (rows, columns) of C that one block covers.
    rows_on: the grid axis that walks the rows of C; the other walks the columns.
    """

    block: tuple[int, int]
    tile: tuple[int, int]
    rows_on: str = "y"
    # Dynamic shared memory per block, in bytes (0 for kernels whose shared
    # arrays are static; a static array may hold at most 48 KB).
    shared_bytes: int = 0
    # For a kernel fed by TMA (the "tma" contract): the box of A and the box of
    # B that one copy brings, each as (columns, rows) of the matrix.
    tma_boxes: tuple[tuple[int, int], tuple[int, int]] | None = None

    def __post_init__(self):
        if self.rows_on not in ("x", "y"):
            raise ValueError(f"rows_on must be 'x' or 'y', not {self.rows_on!r}")
        if min(self.block) < 1 or min(self.tile) < 1:
            raise ValueError(f"block {self.block} and tile {self.tile} must be positive")

    @property
    def threads(self) -> int:
        return self.block[0] * self.block[1]

    @property
    def x_walks(self) -> str:
        """What consecutive threadIdx.x (a warp's lanes) walk in C: 'rows' or 'columns'."""
        return "rows" if self.rows_on == "x" else "columns"

    def grid(self, M: int, N: int) -> tuple[int, int]:
        row_blocks = math.ceil(M / self.tile[0])
        col_blocks = math.ceil(N / self.tile[1])
        return (col_blocks, row_blocks) if self.rows_on == "y" else (row_blocks, col_blocks)

    def describe(self) -> str:
        bx, by = self.block
        shared = (
            f", {self.shared_bytes} bytes of dynamic shared memory" if self.shared_bytes else ""
        )
        return (
            f"block {bx}x{by} threads, each block covers {self.tile[0]}x{self.tile[1]} "
            f"of C, grid.{self.rows_on} walks the rows{shared}"
        )


@dataclass(frozen=True)
class Tuning:
    """What `python -m autograder tune` searches for a step, and what it can
    tell about a parameter set before compiling it."""

    # Candidate values of each template parameter: the search tries every
    # combination.
    space: Mapping[str, tuple[int, ...]]
    # Why a parameter set cannot work, in words: the kernel's static_asserts
    # and what its index arithmetic assumes. Empty when it can.
    rules: Callable[[Mapping[str, int]], list[str]]
    # Bytes of static shared memory the kernel declares.
    shared_bytes: Callable[[Mapping[str, int]], int]
    # A floor on registers per thread: the accumulators and the values that
    # must be held beside them (the compiler's real count comes later).
    registers: Callable[[Mapping[str, int]], int]


# What a step's file is written in, and the suffix of its file in kernels/.
LANGUAGES = {"cuda": ".cu", "python": ".py"}


@dataclass(frozen=True)
class Step:
    """One rung of the ladder: kernels/<id>_<slug>.cu (or .py) and how to run it."""

    id: str
    slug: str
    title: str
    # The __global__ function NVRTC compiles; for a Python step, the function
    # its exercise is about.
    kernel: str
    # Template parameters in declaration order; empty for extern "C" kernels.
    params: Mapping[str, int] = field(default_factory=dict)
    # Launch geometry as a function of the template parameters, so that a
    # tuned parameter set carries its own geometry. A module-level function or
    # a functools.partial of one, never a lambda: the batch grader pickles
    # steps to send them to its worker processes.
    layout: Callable[[Mapping[str, int]], Geometry] = None
    # The oldest GPU architecture the kernel compiles for.
    min_arch: str = "sm_75"
    # How far the kernel rounds A and B before multiplying them, relative to
    # each value: 0 for FP32 kernels, which use their inputs as they are; see
    # TF32_INPUT_ROUNDOFF for the tensor-core step. The checker widens its
    # tolerance by the error this can cause (checker.run_case).
    input_roundoff: float = 0.0
    # The tile-parameter search, for steps that have tile parameters to tune.
    tuning: Tuning | None = None
    # "cuda": a kernel that the compiler, checker, grader and benchmark take.
    # "python": a program that only its notebook runs (step 00, on the CPU).
    language: str = "cuda"
    # The parameters the kernel takes (contract.CONTRACTS): "gemm"; "reduce"
    # for step 09's split-K reduction, which is run inside a GEMM (by_shape);
    # "tma" for step 12, which also takes tensor maps of A and B.
    contract: str = "gemm"
    # Parameters (over `params`) at which every term of the kernel's row and column
    # indices counts, where `params` make one vanish (WMITER = 1 makes wm * WSUBM
    # always 0): the checker also runs the kernel there, so that an index missing
    # that term cannot pass (judge.job.checks).
    every_term: Mapping[str, int] = field(default_factory=dict)
    # Whether the kernel leaves C unread where beta = 0, as BLAS lets it (C may hold
    # anything then: NaN, infinity). Steps 01 to 07 compute alpha * acc + beta * C
    # always, as they teach; steps 08, 09, 12 and 13 do not read C then, and the checker
    # gives them a C of infinity there (checker.UNREAD_C), so that a kernel of theirs
    # that reads it (0 * inf is NaN) fails. tests/test_cpu_backend.py runs the own
    # kernels of 01 to 09 with that C, to keep this true of them, and tests/test_beyond.py
    # those of 10 to 13 on a GPU (10 and 11 read C always, as steps 01 to 07 do).
    leaves_c_unread: bool = False

    def __post_init__(self):
        if self.language not in LANGUAGES:
            raise ValueError(f"language must be one of {', '.join(LANGUAGES)}")

    @property
    def is_cuda(self) -> bool:
        return self.language == "cuda"

    @property
    def path(self) -> Path:
        return KERNEL_DIR / f"{self.id}_{self.slug}{LANGUAGES[self.language]}"

    @property
    def name(self) -> str:
        return f"{self.id}_{self.slug}"

    @property
    def geometry(self) -> Geometry:
        return self.layout(self.params)

    @property
    def name_expression(self) -> str:
        """What NVRTC instantiates: 'sgemm_vectorized<128, 128, 8, 8, 8>'."""
        return self.instantiation()

    def instantiation(self, *trailing: int) -> str:
        """The name expression with `trailing` template arguments after the registered
        parameters, for parameters the kernel declares with a default (step 08's SLIDE,
        RAGGED and SPREAD, which step 09 sets for some of its tile shapes)."""
        args = [*self.params.values(), *trailing]
        if not args:
            return self.kernel
        return f"{self.kernel}<{', '.join(str(v) for v in args)}>"

    def source(self) -> str:
        return self.path.read_text()

    @property
    def fingerprint(self) -> str:
        return fingerprint(self.source())

    def runs_on(self, arch: str) -> bool:
        """Whether the kernel compiles for arch ('sm_75', 'sm_90', 'sm_90a', ...). A
        kernel for an architecture-specific target ('sm_90a': wgmma, setmaxnreg)
        compiles for that one alone."""
        if self.min_arch.endswith("a"):
            return arch == self.min_arch
        return arch_number(arch) >= arch_number(self.min_arch)

    def runs_on_gpu(self, arch: str) -> bool:
        """Whether a GPU of this architecture ('sm_90', as the device reports it)
        runs the kernel: an sm_90a kernel runs on sm_90 GPUs alone."""
        if self.target:
            return arch == self.target[:-1]
        return self.runs_on(arch)

    @property
    def needs(self) -> str:
        """What the kernel needs, in words: 'sm_80 or later', or 'sm_90a'."""
        return self.min_arch if self.target else f"{self.min_arch} or later"

    @property
    def target(self) -> str | None:
        """The architecture-specific target the kernel must be built for ('sm_90a'),
        where it has one; None where any architecture from min_arch on will do."""
        return self.min_arch if self.min_arch.endswith("a") else None

    def with_params(self, **params: int) -> Step:
        """The same step with some template parameters changed (for tuning)."""
        unknown = set(params) - set(self.params)
        if unknown:
            raise KeyError(
                f"step {self.id} has no parameter {', '.join(sorted(unknown))}; "
                f"its parameters are {', '.join(self.params)}"
            )
        return replace(self, params={**self.params, **params})

    def at_every_term(self) -> Step | None:
        """The step at its every_term parameters; None where `params` are those."""
        if not self.every_term:
            return None
        return replace(self.with_params(**self.every_term), every_term={})


# A comment (the kernels hold no string literal with // or /* in it).
_COMMENT = re.compile(r"//[^\n]*|/\*.*?\*/", re.DOTALL)


def fingerprint(source: str) -> str:
    """12 hex digits that name a version of a kernel's code: a hash of its source with
    comments left out and whitespace as one space. The profiler's rows record it, so that
    the book can tell a profile of the kernel as it is from one of an earlier version; an
    edit to comments or layout keeps it."""
    code = " ".join(_COMMENT.sub(" ", source).split())
    return hashlib.sha256(code.encode()).hexdigest()[:12]


def arch_number(arch: str) -> int:
    """'sm_90' -> 90, 'sm_90a' -> 90."""
    return int("".join(c for c in arch if c.isdigit()))


def _thread_tiles(p: Mapping[str, int]) -> Geometry:
    """One thread per TM x TN piece of the block's BM x BN tile (TN = 1 in 1D)."""
    TN = p.get("TN", 1)
    return Geometry((p["BM"] // p["TM"] * (p["BN"] // TN), 1), (p["BM"], p["BN"]))


def _warp_tiles(p: Mapping[str, int]) -> Geometry:
    """One warp per WM x WN piece of the block's BM x BN tile."""
    warps = (p["BM"] // p["WM"]) * (p["BN"] // p["WN"])
    return Geometry((warps * 32, 1), (p["BM"], p["BN"]))


def _fixed(p: Mapping[str, int], block, tile, rows_on="y") -> Geometry:
    """Steps 01 and 02: one thread per element of C, whatever the parameters."""
    return Geometry(block=block, tile=tile, rows_on=rows_on)


def _square_tiles(p: Mapping[str, int]) -> Geometry:
    """Step 03: one thread per element of the block's BS x BS tile."""
    return Geometry((p["BS"], p["BS"]), (p["BS"], p["BS"]))


def _must_divide(p: Mapping[str, int], *pairs: tuple[str, str]) -> list[str]:
    """'TM = 16 does not divide BM = 8' for each (a, b) where p[a] does not divide p[b]."""
    return [f"{a} = {p[a]} does not divide {b} = {p[b]}" for a, b in pairs if p[b] % p[a]]


def _same_share(p: Mapping[str, int], threads: int, width: int = 1) -> list[str]:
    """The kernels copy each tile in rounds of `width` floats per thread."""
    unit = f"{width} floats" if width > 1 else "1 float"
    return [
        f"the {name} tile ({floats} floats) is not whole rounds of {threads} threads x {unit}"
        for name, floats in (("A", p["BM"] * p["BK"]), ("B", p["BK"] * p["BN"]))
        if floats % (width * threads)
    ]


def _tiles_1d_rules(p: Mapping[str, int]) -> list[str]:
    bad = _must_divide(p, ("TM", "BM"))
    return bad or _same_share(p, _thread_tiles(p).threads)


def _tiles_2d_rules(p: Mapping[str, int], width: int = 1) -> list[str]:
    bad = _must_divide(p, ("TM", "BM"), ("TN", "BN"))
    if width > 1:
        bad += [
            f"{k} = {p[k]} is not a multiple of {width}"
            for k in ("BK", "BN", "TM", "TN")
            if p[k] % width
        ]
    return bad or _same_share(p, _thread_tiles(p).threads, width)


def warp_m_iterations(p: Mapping[str, int]) -> int:
    """WMITER, as kernels/07 and 08 derive it: how many TM-row sub-tiles each thread
    covers down its warp tile, given WNITER across (0 for a warp tile too small)."""
    return p["WM"] * p["WN"] // (32 * p["TM"] * p["TN"] * p["WNITER"])


def _warp_tile_rules(p: Mapping[str, int]) -> list[str]:
    """The static_asserts of kernels/07_warptiling.cu and 08_pipelining.cu (the
    same in both), and their WMITER, WSUBM, WSUBN."""
    bad = _must_divide(p, ("WM", "BM"), ("WN", "BN"), ("WNITER", "WN"))
    bad += [f"{k} = {p[k]} is not a multiple of 4" for k in ("BK", "BN", "TM", "TN") if p[k] % 4]
    if bad:
        return bad
    per_warp = 32 * p["TM"] * p["TN"] * p["WNITER"]
    wmiter = warp_m_iterations(p)
    tiles = f"{p['TM']}x{p['TN']}"
    if p["WM"] * p["WN"] % per_warp or wmiter < 1 or p["WM"] % wmiter:
        per_thread = f"{p['WNITER']} (WNITER) x a whole number (WMITER) of {tiles} tiles"
        return [f"a {p['WM']}x{p['WN']} warp tile is not 32 threads x {per_thread}"]
    rows, cols = p["WM"] // wmiter, p["WN"] // p["WNITER"]
    if rows % p["TM"] or cols % p["TN"] or (rows // p["TM"]) * (cols // p["TN"]) != 32:
        return [f"a {rows}x{cols} warp sub-tile is not 32 {tiles} thread tiles"]
    return _same_share(p, _warp_tiles(p).threads, 4)


def _tiles_1d_registers(p: Mapping[str, int]) -> int:
    """kernels/04: TM accumulators and the TM values of A they are multiplied by."""
    return 2 * p["TM"]


def _tiles_2d_registers(p: Mapping[str, int]) -> int:
    """kernels/05 and 06: the TM x TN accumulators, regM and regN."""
    return p["TM"] * p["TN"] + p["TM"] + p["TN"]


def _warp_fragments(p: Mapping[str, int]) -> int:
    """regM and regN of a warp-tiled kernel: WMITER x TM values of A, WNITER x TN of B."""
    return p["WM"] * p["WN"] // 32 // p["TN"] // p["WNITER"] + p["WNITER"] * p["TN"]


def _warp_tile_registers(p: Mapping[str, int]) -> int:
    """kernels/07: the accumulators and one set of fragments."""
    return p["WM"] * p["WN"] // 32 + _warp_fragments(p)


def _pipelined_registers(p: Mapping[str, int]) -> int:
    """kernels/08: the accumulators, two sets of fragments, the prefetched slice."""
    prefetched = p["BK"] * (p["BM"] + p["BN"]) // _warp_tiles(p).threads
    return p["WM"] * p["WN"] // 32 + 2 * _warp_fragments(p) + prefetched


def _tile_bytes(p: Mapping[str, int], buffers: int = 1) -> int:
    """As and Bs: buffers x (BM x BK + BK x BN) floats."""
    return 4 * buffers * p["BK"] * (p["BM"] + p["BN"])


# Steps 07 and 08 at 128x128 blocks of 2x2 warps, each warp 2x2 sub-tiles of 32x32,
# 4x8 threads of 8x4: each block, warp, sub-tile, thread and element offset counts.
EVERY_WARP_TERM = dict(BM=128, BN=128, WM=64, WN=64, WNITER=2, TM=8, TN=4)

# The search for steps 07 and 08. TM = 8, TN = 4: measured best for step 08 on
# the H100 (TN = 8 puts two lanes of a quarter-warp on one bank; TM = 4 was no
# faster).
_WARP_TILE_SPACE = dict(
    BM=(64, 128, 256),
    BN=(64, 128, 256),
    BK=(8, 16, 32),
    WM=(32, 64),
    WN=(32, 64),
    WNITER=(2, 4),
    TM=(8,),
    TN=(4,),
)


# The ladder: every step the course teaches and grades, in order. Each has its
# file in kernels/, its chapter (book/<name>.md) and its exercise
# (exercises/<name>/), all named <id>_<slug>.
LADDER: tuple[Step, ...] = (
    Step(
        "00",
        "cpu_triple_loop",
        "The CPU triple loop",
        "matmul",
        language="python",
    ),
    Step(
        "01",
        "naive",
        "Naive",
        "sgemm_naive",
        layout=partial(_fixed, block=(32, 32), tile=(32, 32), rows_on="x"),
    ),
    Step(
        "02",
        "coalescing",
        "Global memory coalescing",
        "sgemm_coalescing",
        layout=partial(_fixed, block=(32, 32), tile=(32, 32)),
    ),
    Step(
        "03",
        "smem_tiling",
        "Shared-memory tiling",
        "sgemm_smem_tiling",
        params=dict(BS=32),
        layout=_square_tiles,
    ),
    Step(
        "04",
        "blocktiling_1d",
        "1D register blocking",
        "sgemm_blocktiling_1d",
        params=dict(BM=128, BN=32, BK=16, TM=16),
        layout=_thread_tiles,
        tuning=Tuning(
            space=dict(BM=(64, 128, 256), BN=(32, 64, 128), BK=(8, 16, 32), TM=(8, 16)),
            rules=_tiles_1d_rules,
            shared_bytes=_tile_bytes,
            registers=_tiles_1d_registers,
        ),
    ),
    Step(
        "05",
        "blocktiling_2d",
        "2D register blocking",
        "sgemm_blocktiling_2d",
        params=dict(BM=128, BN=128, BK=8, TM=8, TN=8),
        layout=_thread_tiles,
        tuning=Tuning(
            space=dict(BM=(64, 128, 256), BN=(64, 128, 256), BK=(8, 16), TM=(4, 8), TN=(4, 8)),
            rules=_tiles_2d_rules,
            shared_bytes=_tile_bytes,
            registers=_tiles_2d_registers,
        ),
    ),
    Step(
        "06",
        "vectorized",
        "Vectorized loads",
        "sgemm_vectorized",
        params=dict(BM=128, BN=128, BK=16, TM=8, TN=8),
        layout=_thread_tiles,
        tuning=Tuning(
            space=dict(BM=(64, 128, 256), BN=(64, 128, 256), BK=(8, 16, 32), TM=(4, 8), TN=(4, 8)),
            rules=partial(_tiles_2d_rules, width=4),
            shared_bytes=_tile_bytes,
            registers=_tiles_2d_registers,
        ),
    ),
    Step(
        "07",
        "warptiling",
        "Warptiling",
        "sgemm_warptiling",
        # Step 08's 8x8 thread tiles, in the 128x128 blocks of 8 warps of 32x64
        # that step 08 had before its blocks grew to 256x128 (whose worth its
        # ablation measures at 128x128 with its own 64x32 warps). Not searched.
        params=dict(BM=128, BN=128, BK=16, WM=32, WN=64, WNITER=2, TM=8, TN=4),
        layout=_warp_tiles,
        tuning=Tuning(
            space=_WARP_TILE_SPACE,
            rules=_warp_tile_rules,
            shared_bytes=_tile_bytes,
            registers=_warp_tile_registers,
        ),
        every_term=EVERY_WARP_TERM,
    ),
    Step(
        "08",
        "pipelining",
        "Software pipelining",
        "sgemm_pipelining",
        params=dict(BM=256, BN=128, BK=16, WM=64, WN=32, WNITER=2, TM=8, TN=4),
        layout=_warp_tiles,
        tuning=Tuning(
            space=_WARP_TILE_SPACE,
            rules=_warp_tile_rules,
            shared_bytes=partial(_tile_bytes, buffers=2),
            registers=_pipelined_registers,
        ),
        every_term=EVERY_WARP_TERM,
        leaves_c_unread=True,
    ),
    Step(
        "09",
        "by_shape",
        "Choosing by shape",
        "splitk_reduce",
        # One thread per element of C, as in step 02.
        layout=partial(_fixed, block=(32, 8), tile=(8, 32)),
        contract="reduce",
        leaves_c_unread=True,
    ),
)

# The ladder's CUDA kernels, 01 on: what `grade`, `bench` and `tune` take.
STEPS: tuple[Step, ...] = tuple(s for s in LADDER if s.is_cuda)


def _tensor_core_tiles(p: Mapping[str, int]) -> Geometry:
    """_warp_tiles, with STAGES slices of A and B in dynamic shared memory:
    rows of BK + 4 floats for A and BN + 8 for B, padded as
    kernels/11_tensor_core_tf32.cu explains."""
    floats = p["STAGES"] * (p["BM"] * (p["BK"] + 4) + p["BK"] * (p["BN"] + 8))
    return replace(_warp_tiles(p), shared_bytes=4 * floats)


# kernels/12_wgmma_tf32.cu and 13 walk K in slices of WGMMA_BK floats (one 128-byte
# swizzled row); their blocks cover BM rows of C (wgmma's N: 256 at most, 128 in step 13,
# whose consumers keep two sets of accumulators, a slice's sums and the running ones).
WGMMA_BK = 32


def block_rows(step: Step) -> tuple[int, ...]:
    """The heights of block a tensor-core step's GEMM may race at a small product: its own
    BM, then halved down to 64. A block of fewer rows leaves fewer idle where C has few
    (64x8192x4096: 64 of a 256-row block's rows hold C, and its 64 blocks fill half of an
    H200's 132 SMs), at the cost of more copies of B per row of C."""
    own = step.params["BM"]
    return tuple(own >> i for i in range(own.bit_length()) if own >> i >= 64)


def _warpgroup_tiles(p: Mapping[str, int], a_buffers: int = 1) -> Geometry:
    """One producer warpgroup and BN / 64 consumer warpgroups per block of
    BM x BN of C; STAGES slices of A and B in dynamic shared memory, and
    1024 bytes to align them to the swizzle's period. TMA brings a slice of A
    in one box and one of B in boxes 32 columns wide (128 bytes, the swizzle's
    row). a_buffers: 2 where a slice of A is kept twice (step 13: its big and
    its small parts)."""
    floats = p["STAGES"] * WGMMA_BK * (a_buffers * p["BM"] + p["BN"])
    return Geometry(
        (128 * (1 + p["BN"] // 64), 1),
        (p["BM"], p["BN"]),
        shared_bytes=4 * floats + 1024,
        tma_boxes=((WGMMA_BK, p["BM"]), (32, WGMMA_BK)),
    )


# TF32 keeps 10 of FP32's 23 mantissa bits: rounding an input to the nearest
# TF32 value (cvt.rna, as kernels/11 does) moves it by at most u = 2^-11 of
# itself. A product of two rounded inputs is then off by at most
# (1 + u)^2 - 1 = 2u + u^2 of |a b|, term by term, so the whole sum is off by
# at most (2u + u^2) |A||B| from the inputs alone: a bound, not an estimate,
# which the checker adds to its FP32 tolerance for the accumulation (tensor
# cores add in FP32). Measured at 4096^3, TF32 results reach about 1/26 of it.
# (Using u = 2^-11 in place of 2^-24 in the FP32 formula (8 + 2 sqrt(K)) u
# would be about 1700 times the measured error there, and would let a kernel
# that drops one term of K pass at K = 513.)
TF32_INPUT_ROUNDOFF = 2.0**-11
# wgmma reads its shared-memory operand's FP32 words as TF32 by dropping the
# low 13 bits (truncation, not rounding: up to 2^-10 of each value), so step 12
# is judged with that bound for both inputs.
TF32_TRUNCATED_ROUNDOFF = 2.0**-10

# Past the ladder, for GPUs of compute capability 8.0 (A100) and later; `step()`
# finds them, so the CLI checks and times them by name. 12 and 13 are exercises
# too (autograder/course/assignments.py), graded on the one GPU they run on.
BEYOND: tuple[Step, ...] = (
    Step(
        "10",
        "cp_async",
        "Asynchronous copies",
        "sgemm_cp_async",
        params=dict(BM=128, BN=128, BK=16, WM=32, WN=64, WNITER=2, TM=8, TN=4, STAGES=2),
        layout=_warp_tiles,
        min_arch="sm_80",
        every_term=EVERY_WARP_TERM,
    ),
    Step(
        "11",
        "tensor_core_tf32",
        "Tensor cores (TF32)",
        "sgemm_tf32",
        # BK = 32 ran 5% faster on an H100 but needs 105 KB of shared memory,
        # more than the 99 KB a block may have on sm_86 and sm_89 (an L4).
        params=dict(BM=128, BN=128, BK=16, WM=64, WN=64, STAGES=3),
        layout=_tensor_core_tiles,
        min_arch="sm_80",
        input_roundoff=TF32_INPUT_ROUNDOFF,
    ),
    Step(
        "12",
        "wgmma_tf32",
        "Tensor cores, Hopper's way (wgmma, TMA)",
        "sgemm_wgmma",
        # Two consumer warpgroups, 4 slices deep (192 KB of shared memory).
        # Measured on an H100: 3 stages ran as fast at 4096^3 and 8192^3,
        # one consumer warpgroup (BN = 64) at two thirds of the speed.
        params=dict(BM=256, BN=128, STAGES=4),
        layout=_warpgroup_tiles,
        min_arch="sm_90a",
        input_roundoff=TF32_TRUNCATED_ROUNDOFF,
        contract="tma",
        leaves_c_unread=True,
    ),
    Step(
        "13",
        "wgmma_3xtf32",
        "FP32 on tensor cores (3xTF32)",
        "sgemm_wgmma_3xtf32",
        # Two consumer warpgroups, as step 12; a slice takes 48 KB with A's small
        # parts, so four fit. LAYERS: the layers of K a cluster adds up (split_k).
        params=dict(BM=128, BN=128, STAGES=4, LAYERS=1),
        layout=partial(_warpgroup_tiles, a_buffers=2),
        min_arch="sm_90a",
        contract="tma",
        leaves_c_unread=True,
    ),
)
# Every numbered step, and every CUDA kernel (what NVRTC compiles).
ALL_STEPS = LADDER + BEYOND
KERNELS = STEPS + BEYOND


def step(key: str) -> Step:
    """A step of the ladder or beyond it, by id ('05', '5') or name
    ('05_blocktiling_2d', 'blocktiling_2d')."""
    key = str(key).strip()
    for s in ALL_STEPS:
        if key in (s.id, s.slug, s.name) or (key.isdigit() and int(key) == int(s.id)):
            return s
    known = ", ".join(s.name for s in ALL_STEPS)
    raise KeyError(f"no step {key!r}; the steps are {known}")


def step_of_kernel(filename: str, name_expression: str) -> Step | None:
    """The step a kernel is, by its file's name (03_smem_tiling.cu) or its function's
    (sgemm_smem_tiling); None for a kernel of no step."""
    for s in KERNELS:
        if filename.startswith(s.id + "_") or name_expression.split("<")[0] == s.kernel:
            return s
    return None
