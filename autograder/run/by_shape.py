"""Step 09, choosing by shape: which of step 08's tile shapes to run for an M, N, K,
in how many layers of K (split-K). autograder.run.composed builds the GEMM that runs
such a plan.

One tile shape leaves most of a GPU idle on a small or skinny C: 128 x 128 tiles
give a 512^2 C 16 blocks, for an H100's 132 SMs. The dispatcher answers with
smaller tiles (more blocks, each reusing its loads less) and with split-K (S
layers of blocks, each multiplying 1/S of K into its own partial product, which
step 09's kernel then adds up: S times the blocks, for S matrices of M x N
written and read back). A large C whose biggest tiles fill the last wave of
blocks unevenly is cut across instead (Bands): the rows that make whole waves,
then the rows below them, each a product of its own.

What to choose is measured, not guessed: `python -m autograder tune 09` times
the candidates at four shapes per class of shapes on the GPU at hand, and writes
the best into book/data/dispatch_<gpu>.json. Where no table was measured (a
GPU nobody tuned on), the first product of each shape times every plan of
`plan_space` there (a larger one, its class the few plans the device's arithmetic
shortlists, `shortlist`) and keeps the fastest in a cache per GPU and software
version (autograder.run.autotune); with that turned off, the
device's arithmetic decides alone (`device_rule`), step 08's own plan unless the
arithmetic shows a clear win. The CPU backend, with no speed to choose for, runs
every tile shape in turn (`in_turn`).
"""

from __future__ import annotations

import bisect
import functools
import itertools
import json
import math
import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import partial
from pathlib import Path

from ..ladder import hardware, registry

# The tile shapes the dispatcher chooses from: step 08's kernel at these
# parameters, biggest tiles first. Each is within the T4's limits and compiles
# without spilling for sm_75 and sm_90 (tests/test_by_shape.py). 256x128 is
# step 08's own, 128x256 the same warps side by side; 128x128 has the same
# warps in blocks of half the size: twice as many blocks, two of them per SM.
# 64x128 and 64x64 have four warps of 32 x 64 or 32 x 32. The search's fastest
# at 4096^3 had one and two warps of 64 x 64, but on small shapes a block's
# warps are all that an SM may get: on the sweep's eight smallest, four warps
# with fewer accumulators each were as fast or faster at every shape, 1.5 times
# as fast at 128^3 (H100, 2026-11-23). The two smallest go further, with warps
# of 16 x 32 and 4 x 4 floats a thread (TM = TN = 4: 16 accumulators), eight
# warps in 64x64w8, four in 32x64w4: 128^3 ran 1.2 times as fast again as with
# 64x64, and 333x777x129 1.2 times (H100, 2026-11-24, GPU time).
# The tile shapes whose blocks are groups of warps, each multiplying its own run of K
# and adding their sums up in shared memory at the end (kernels/08's GROUPS): "g4" is 4
# groups of the warps "w2" names. A product too small to fill the GPU gets a block's
# time down to a fraction of its K, with no second launch and no layer of partial sums
# in global memory, which split-K costs. In % of cuBLAS (H200, 2026-11-30, GPU time,
# against the best tiles without groups): 32x32w2g4 at 128^3 118 (89), at 256^3 136
# (85), at 100x300x200 118 (79); 32x64w4g2 at 512x512x128 115 (99); 64x128w8g2 at
# 1001x777x513 88 (82). At 333x777x129 none gained (88 against 90).
GROUPS = {"32x32w2g4": 4, "32x64w4g2": 2, "64x128w8g2": 2}
# The tile shapes whose blocks slide back inside C at its edges (kernels/08's
# SLIDE = 1), where that was measured faster, in % of cuBLAS: 64x128w8 at 1001x777x513 80 instead of
# 75, 32x64w4 unsplit at 333x777x129 82 to 86 instead of 77, 128x256 at 2048^3
# and 4096^3 103 instead of 101, 128x128w16 in 4 layers at 4096x128x4096 89.5
# instead of 88 (and 87 at 128x4096x4096, as before). Elsewhere it changed what
# ptxas made of the kernel for the worse: 128x128 in the split-K plans of the
# large-K shapes lost 4 to 5 points, 64x64w8 at 128^3 and 333x777x129 1 to 2
# (H100, 2026-11-27). With SLIDE = 0 the kernel compiles for sm_90 to the same
# machine code as it did before SLIDE existed (nvdisasm, NVRTC 13.5).
SLID = frozenset({"128x256", "128x128w16", "64x128w8", "32x64w4", "32x96w6", *GROUPS})
# The tile shapes that, built for this architecture or a later one, slide and read
# B's unaligned rows spread out too (kernels/08's SPREAD = 1: step 08's own rule
# spreads only where that compiles without spilling on every architecture). Slid and
# spread, 256x128 ran 4095x4097x4093 at 100.4 to 100.5% of cuBLAS, where it ran at
# 99.2 to 99.3% with neither, 99.3% spread alone and 90.4% slid alone (H100,
# 2026-11-27). Built for sm_75 or sm_80, it spilled 8 bytes.
SPREAD = {"256x128": "sm_90"}
# The tile shapes with a twin whose last slice of K stops where K does (kernels/08's
# RAGGED = 1), run where K is not a multiple of BK (gemm_key), in % of cuBLAS:
# 64x128w8 at 2000x3000x100 102 instead of 96 and at 1001x777x513 81 instead of 80,
# 32x64w4 at 333x777x129 86 instead of 84.5. Where K is a multiple of BK the twin
# would only cost: its check changes what ptxas makes of the other loops (64x128w8
# at 1024^3 99 instead of 101) (H100, 2026-11-27). In the tiles of 64 x 32 and 32 x 64
# warps it spilled (sm_86, sm_75); the other small ones were not measured with it.
RAGGED = frozenset({"64x128w8", "32x64w4", "64x128w8g2", "32x32w2g4", "32x96w6"})
TILES: dict[str, dict[str, int]] = {
    "256x128": dict(registry.step("08").params),
    "128x256": dict(registry.step("08").params, BM=128, BN=256, WM=32, WN=64),
    "128x128": dict(registry.step("08").params, BM=128),
    "128x128w16": dict(BM=128, BN=128, BK=16, WM=32, WN=32, WNITER=1, TM=8, TN=4),
    "64x128": dict(BM=64, BN=128, BK=16, WM=32, WN=64, WNITER=2, TM=8, TN=4),
    "64x128w8": dict(BM=64, BN=128, BK=16, WM=32, WN=32, WNITER=1, TM=8, TN=4),
    "128x64w8": dict(BM=128, BN=64, BK=16, WM=32, WN=32, WNITER=1, TM=8, TN=4),
    "64x64": dict(BM=64, BN=64, BK=16, WM=32, WN=32, WNITER=1, TM=8, TN=4),
    "64x64w8": dict(BM=64, BN=64, BK=16, WM=16, WN=32, WNITER=1, TM=4, TN=4),
    "32x64w4": dict(BM=32, BN=64, BK=16, WM=16, WN=32, WNITER=1, TM=4, TN=4),
    "32x96w6": dict(BM=32, BN=96, BK=24, WM=16, WN=32, WNITER=1, TM=4, TN=4),
    "64x128w8g2": dict(BM=64, BN=128, BK=16, WM=32, WN=32, WNITER=1, TM=8, TN=4),
    "32x64w4g2": dict(BM=32, BN=64, BK=16, WM=16, WN=32, WNITER=1, TM=4, TN=4),
    "32x32w2g4": dict(BM=32, BN=32, BK=16, WM=16, WN=32, WNITER=1, TM=4, TN=4),
}
# The tile shapes whose launch bounds ask an SM for fewer blocks than kernels/08's
# blocks_per_sm (its BLOCKS), so that ptxas may give each thread more registers, in %
# of cuBLAS against the kernel's own bounds: 32x64w4 (2, not 8) at 128^3 99.0 (87.6),
# 256^3 96.8 (82.3), 512x512x128 105.5 (93.9), 301x703x97 96.5 (90.8); 32x32w2g4 (2,
# not 3) at 128^3 123.6 (118.6), 256^3 139.9 (135.5), 200x500x129 108.8 (101.9), though
# at 333x777x257 82.7 (87.9), where 32x96w6 runs instead. 32x96w6, 6 warps whose BK of
# 24 gives each thread whole float4s to copy, ran 333x777x129 at 99.0 with 3 (96
# registers) and 98.8 with 4 (80), 333x777x257 at 94.7 and 96.3, 333x777x65 at 98.6 and
# 96.0; with blocks_per_sm's 5 it spilled (H200, 2026-12-01, GPU time, unsplit).
BLOCKS = {"32x64w4": 2, "32x32w2g4": 2, "32x96w6": 3}
# Step 08's own kernel, exactly: its 256 x 128 tiles without SLIDE or SPREAD, which
# step 09's "256x128" has on an sm_90 GPU. It is what the untuned rule keeps (SAFE),
# so that where the rule keeps step 08's plan it runs step 08, and is never slower
# than it beyond noise: with the slid and spread twin, untuned 09 ran 6000x4000x32 at
# 96.8% of step 08 (noise 1.1%) and 4096x4096x128 at 98.5% (noise 0.3%) (H200,
# 2026-11-29, GPU time). Not one of the shapes the dispatcher chooses among (CHOICES).
OWN = "08"
TILES[OWN] = dict(registry.step("08").params)
CHOICES = tuple(name for name in TILES if name != OWN)
# The tile shapes with a twin whose epilogue writes C through shared memory, a warp's
# 32 threads storing neighbouring floats of a row (kernels/08's STAGE = 1), run where
# C's rows are not aligned for float4s (gemm_key), in % of cuBLAS: 2000x3001x100 91
# instead of 79, 1001x777x513 93 instead of 87, 3001x5003x64 90 instead of 84 (H200,
# 2026-11-30, GPU time, first-use tuning). Where C is aligned, the staged kernel lost
# up to 4 points all the same (512^3 106 to 107 instead of 110). Those whose threads
# hold 32 accumulators or fewer: with 64 (8 x 8 floats a thread, at the cap of 128
# registers) the kernel spilled on sm_75, sm_80 or sm_86. And not the 32 x 32 tiles,
# run at products too small to fill the GPU, where the time is the walk along K rather
# than C's writes: at 333x777x129 they ran at 87.5% staged and 88.7% not.
STAGED = frozenset(
    name
    for name, p in TILES.items()
    if name != OWN and p["WM"] * p["WN"] // 32 <= 32 and p["BM"] * p["BN"] > 32 * 32
)
# The tiles a shape class is measured in (waves of them per GPU).
MEASURE_TILES = "128x128"
# A shape's class: how many waves of 128 x 128 tiles its C makes on the GPU at
# hand (up to an eighth, a quarter, one, four, more). The smallest C's are two
# classes, not one: a class from one tile to a quarter wave chose 32x64w4
# tiles in 2 layers for all of it, which ran 333x777x129 at 67% of cuBLAS, where
# 64x64w8 tiles in one layer ran it at 85% (H100, 2026-11-24) ...
WAVE_BOUNDS = (1 / 8, 1 / 4, 1.0, 4.0)
# ... how long its K is (up to 256, 2048, 8192, longer), and whether the rows of
# A and B are aligned (see aligned).
K_BOUNDS = (256, 2048, 8192)
# A class's plan counts its layers at this shape (measured_shape): waves of
# 128 x 128 tiles, and K. At any other shape of the class they are scaled.
WAVES_MEASURED = (1 / 16, 3 / 16, 1 / 2, 2.0, 8.0)
K_MEASURED = (128, 1024, 4096, 16384)
# The tuner times each class at four odd shapes across it (sample_shapes), not at
# one: a plan fitted to one shape can be a third slower at its neighbours. The
# open ends of the first and last ranges run from one tile, and stop here.
WAVES_SAMPLED_TO = 16.0
K_SAMPLED_FROM, K_SAMPLED_TO = 64, 65536
# Each layer keeps at least this many BK-wide slices of K: one in flight while
# the other is multiplied. Four, as it was, capped 128^3 at 2 layers, which ran
# slower than 4 layers of 2 slices: 32x64w4 tiles at 79.2% of cuBLAS against
# 90.4%, 64x64w8 tiles at 74.4% against 85.5% (H100, 2026-11-27, GPU time).
MIN_SLICES_PER_LAYER = 2
# The tiles of one block per SM, the fastest first: at 4096^3 128x256 ran at
# 99.6% of cuBLAS and 256x128 at 98.6%, at 8192^3 100.1% and 97.8% (H100,
# 2026-11-24, GPU time). Where one of them fills the GPU's waves this evenly or
# better, little the table could choose is faster: a smaller tile reuses each
# load less, and a layer of K adds traffic without adding blocks that have an SM
# to run on. A class's plan is chosen across its whole range of shapes, where
# this luck does not hold; at 2048^3 on an H100 (128 tiles for 132 SMs) the
# class's 64 x 128 tiles ran at 74.8% of cuBLAS and step 08 at 97.4%, and at
# 8192x8192x256 the class's 64 x 64 tiles at 98.8% and step 08 at 110.2% (GPU
# time, 2026-11-24).
BIG_TILES = ("128x256", "256x128")
EVEN_WAVES = 0.9
MAX_SPLITS = 32
TABLE_VERSION = 5


@dataclass(frozen=True)
class Plan:
    tiles: str  # a key of TILES
    splits: int  # layers of K; 1: no split-K, step 08's kernel writes C itself

    def __str__(self) -> str:
        split = f", K in {self.splits} layers" if self.splits > 1 else ""
        tiles = "step 08's own kernel" if self.tiles == OWN else f"{self.tiles} tiles"
        return tiles + split


@dataclass(frozen=True)
class Bands:
    """C cut across into two products of their own: its first `rows` rows (and A's) in
    `top`'s plan, the rows below them in `rest`'s, one after the other. The top band
    is as many rows of one of BIG_TILES as make whole waves (whole_waves)."""

    rows: int
    top: Plan
    rest: Plan | Bands

    def __str__(self) -> str:
        return f"{self.top} for the first {self.rows} rows, then {self.rest}"


def tile_count(M: int, N: int, tiles: str) -> int:
    p = TILES[tiles]
    return math.ceil(M / p["BM"]) * math.ceil(N / p["BN"])


def max_splits(K: int, tiles: str) -> int:
    """The most layers K splits into with MIN_SLICES_PER_LAYER slices in each (in each
    group's run of it, where the tiles' blocks are groups)."""
    return max(1, min(MAX_SPLITS, _most_layers(K, tiles)))


def _most_layers(K: int, tiles: str) -> int:
    return math.ceil(K / TILES[tiles]["BK"]) // (MIN_SLICES_PER_LAYER * GROUPS.get(tiles, 1))


def aligned(N: int, K: int) -> bool:
    """Whether every row of A and of B starts on 16 bytes (K and N multiples of 4, the
    matrices themselves aligned, as CuPy's are), so that step 08 loads them in float4s;
    otherwise in single floats, and the fastest plan differs: at 3499x3499x91 64 x 64
    tiles ran fastest, at 8192x8192x256 they ran 12% slower than 256 x 128 (H100,
    2026-11-24)."""
    return K % 4 == 0 and N % 4 == 0


def shape_class(M: int, N: int, K: int, sms: int) -> tuple[int, int, int]:
    """(wave class, K class, aligned): indices into WAVES_MEASURED and K_MEASURED (0 to 4,
    0 to 3), and 1 where the rows of A and B are aligned (see aligned), else 0."""
    waves = tile_count(M, N, MEASURE_TILES) / sms
    return (
        bisect.bisect_left(WAVE_BOUNDS, waves),
        bisect.bisect_left(K_BOUNDS, K),
        int(aligned(N, K)),
    )


def measured_shape(shape_cls: tuple[int, int, int], sms: int) -> tuple[int, int, int]:
    """The square-C shape where a class's plan counts its layers, on a GPU with `sms`
    SMs (one more K where the class's rows are not aligned)."""
    w, k, a = shape_cls
    side = 128 * math.sqrt(WAVES_MEASURED[w] * sms)
    side = max(32, round(side / 32) * 32)
    if w < len(WAVE_BOUNDS):  # on a GPU with few SMs, no more tiles than the class allows
        side = min(side, 128 * max(1, math.isqrt(int(WAVE_BOUNDS[w] * sms))))
    return side, side, K_MEASURED[k] if a else K_MEASURED[k] + 1


def sample_shapes(shape_cls: tuple[int, int, int], sms: int) -> list[tuple[int, int, int]]:
    """Where the tuner times a class: a quarter and three quarters of the way across
    its range of waves and of K (on log scales), with sides and K that make partial
    tiles and a ragged last slice of K, so that a plan is chosen for the class and not
    for one shape of it: odd, or for an aligned class 4 more than a multiple of 8."""
    w, k, a = shape_cls
    waves = (1 / sms, *WAVE_BOUNDS, WAVES_SAMPLED_TO)[w : w + 2]
    ks = (K_SAMPLED_FROM, *K_BOUNDS, K_SAMPLED_TO)[k : k + 2]

    def across(lo, hi, t):
        return lo ** (1 - t) * hi**t

    def ragged(x: float) -> int:
        return round(x / 8) * 8 + 4 if a else round(x) | 1

    # A partial tile counts whole: near the top of a narrow class (an eighth of a wave
    # is five tiles on a T4) a side can make one tile too many, and two sides can
    # round to one. 8 less keeps a side ragged.
    sides: list[int] = []
    most = waves[1] * sms  # tiles
    for tw in (0.75, 0.25):
        side = ragged(128 * math.sqrt(across(*waves, tw) * sms))
        while side > 8 and (side in sides or tile_count(side, side, MEASURE_TILES) > most):
            side -= 8
        sides.insert(0, side)
    return [(side, side, ragged(across(*ks, tk))) for side in sides for tk in (0.25, 0.75)]


def scaled(plan: Plan, shape_cls: tuple[int, int, int], M: int, N: int, K: int, sms: int) -> Plan:
    """A class's plan at one of its shapes: a plan that splits keeps about the number
    of blocks it makes at the class's measured shape (within a layer, the count that
    fills the last wave best); one that does not split never does.
    A plan of one of BIG_TILES takes the other where that covers C in fewer tiles (the
    class's shapes are square, where they tie): at 128x4096x4096, 128 x 256 tiles in 8
    layers ran at 97.8% of cuBLAS and 256 x 128 tiles, half of each outside C, at 51.0%
    (H100, 2026-11-24, GPU time)."""
    if plan.tiles in BIG_TILES:
        tiles = min(BIG_TILES, key=lambda t: (tile_count(M, N, t), t != plan.tiles))
        plan = Plan(tiles, plan.splits)
    if plan.splits == 1:
        return plan
    M0, N0, _ = measured_shape(shape_cls, sms)
    tiles = tile_count(M, N, plan.tiles)
    most = max_splits(K, plan.tiles)
    near = round(plan.splits * tile_count(M0, N0, plan.tiles) / tiles)
    # Of the counts next to it, the one whose blocks leave the fewest SMs idle in the
    # last wave: at 1024^3, 128 x 128 tiles in 3 layers (192 blocks, two to an SM, 264
    # places) ran at 80% of cuBLAS, in 4 layers at 101% (H100, 2026-11-24). Counted
    # one block to an SM, 2 layers (128 blocks) fill as well as 4; where an SM holds
    # two, they fill half, so a tie goes to more layers.
    candidates = {max(1, min(s, most)) for s in (near - 1, near, near + 1)}
    splits = max(candidates, key=lambda s: (_fill(s * tiles, sms), s))
    return Plan(plan.tiles, splits)


def _fill(blocks: int, sms: int) -> float:
    """The share of the SMs' turns `blocks` use, one block per SM at a time."""
    return blocks / (math.ceil(blocks / sms) * sms)


def wave_fill(M: int, N: int, tiles: str, sms: int) -> float:
    """The share of the SMs' turns that the tiles use, one block per SM at a time: 1.0
    when they make whole waves, 128 / 132 for 2048^2 in 256 x 128 tiles on an H100,
    8 / 132 for 512^2 (a wave left mostly idle, where smaller tiles or split-K are
    the answer)."""
    return _fill(tile_count(M, N, tiles), sms)


def whole_waves(M: int, N: int, sms: int) -> tuple[int, str] | None:
    """(rows, tiles): the most rows of C whose tiles of one of BIG_TILES fill whole waves
    (at least EVEN_WAVES of the SMs' turns), where C makes a wave of them or more and
    none fills its waves so evenly whole. At 3001 x 2999 on an H100, 256 x 128 tiles
    make 288 blocks, 2.2 waves: a third wave with 24 blocks for 132 SMs, as long as
    the others. Its first 2816 rows make 264 of those blocks, two whole waves, and the
    185 rows below them are a small product of their own (Bands), with its own plan.
    None where no such band exists."""
    best = None
    for tiles in BIG_TILES:
        per_row = math.ceil(N / TILES[tiles]["BN"])
        waves = tile_count(M, N, tiles) // sms
        block_rows = waves * sms // per_row
        if block_rows < 1 or wave_fill(M, N, tiles, sms) >= EVEN_WAVES:
            continue
        blocks = block_rows * per_row
        rows = block_rows * TILES[tiles]["BM"]
        fill = blocks / (math.ceil(blocks / sms) * sms)
        if fill >= EVEN_WAVES and rows < M and (best is None or rows > best[0]):
            best = (rows, tiles)
    return best


def rule_of_thumb(M: int, N: int, K: int, sms: int) -> Plan:
    """Without a measured table: 128 x 128 tiles, split into as many layers as fill
    about one wave where the tiles alone do not; 64 x 64 tiles where even that
    leaves most SMs idle (a short K cannot be split much)."""
    tiles = MEASURE_TILES
    count = tile_count(M, N, tiles)
    splits = 1 if count >= sms else max(1, min(sms // count, max_splits(K, tiles)))
    if count * splits < sms // 2:
        tiles = "64x64"
        count = tile_count(M, N, tiles)
        splits = 1 if count >= sms else max(1, min(sms // count, max_splits(K, tiles)))
    return Plan(tiles, splits)


def choose_with(
    sms: int,
    class_plan: Callable[[tuple[int, int, int], int, int, int], Plan],
    M: int,
    N: int,
    K: int,
    big_tiles: tuple[str, ...] = BIG_TILES,
) -> Plan | Bands:
    """One of big_tiles, unsplit, where its tiles fill the waves evenly (wave_fill);
    else, where K is longer than the shortest class's and C makes whole waves of
    them and more, those waves and the rows left below them apart (Bands).
    Everywhere else class_plan(shape class, M, N, K): a measured table's plan scaled
    to this shape (Table), one timed here on first use (autotune), or the device's
    arithmetic (device_rule)."""
    for tiles in big_tiles:
        if wave_fill(M, N, tiles, sms) >= EVEN_WAVES:
            return Plan(tiles, 1)
    band = whole_waves(M, N, sms) if K > K_BOUNDS[0] else None
    if band:
        rows, tiles = band
        rest = choose_with(sms, class_plan, M - rows, N, K, big_tiles)
        return Bands(rows, Plan(tiles, 1), rest)
    return class_plan(shape_class(M, N, K, sms), M, N, K)


@dataclass(frozen=True)
class Table:
    """What the tuner measured on one GPU: the best plan for each shape class."""

    gpu: str
    sms: int
    plans: Mapping[tuple[int, int, int], Plan]
    measured: str = ""  # when, with which versions, in words

    def choose(self, M: int, N: int, K: int) -> Plan | Bands:
        """choose_with this table's plans (rule_of_thumb for a class it lacks)."""
        return choose_with(self.sms, self.class_plan, M, N, K)

    def class_plan(self, cls: tuple[int, int, int], M: int, N: int, K: int) -> Plan:
        plan = self.plans.get(cls)
        if plan is None:
            return rule_of_thumb(M, N, K, self.sms)
        return scaled(plan, cls, M, N, K, self.sms)

    def to_json(self) -> str:
        return json.dumps(
            {
                "version": TABLE_VERSION,
                "gpu": self.gpu,
                "sms": self.sms,
                "measured": self.measured,
                "wave_bounds": WAVE_BOUNDS,
                "k_bounds": K_BOUNDS,
                "plans": [
                    {"waves": w, "k": k, "aligned": a, "tiles": p.tiles, "splits": p.splits}
                    for (w, k, a), p in sorted(self.plans.items())
                ],
            },
            indent=1,
        )

    @classmethod
    def from_json(cls, text: str) -> Table:
        data = json.loads(text)
        if data.get("version") != TABLE_VERSION:
            raise ValueError(
                f"a dispatch table of version {data.get('version')}, not {TABLE_VERSION}"
            )
        if (tuple(data["wave_bounds"]), tuple(data["k_bounds"])) != (WAVE_BOUNDS, K_BOUNDS):
            raise ValueError(
                "a dispatch table measured for other shape classes than by_shape's: "
                "run `python -m autograder tune 09` again"
            )
        plans = {
            (e["waves"], e["k"], e["aligned"]): Plan(e["tiles"], int(e["splits"]))
            for e in data["plans"]
        }
        unknown = {p.tiles for p in plans.values()} - set(TILES)
        if unknown:
            raise ValueError(
                f"the table names tiles {', '.join(sorted(unknown))}, not in by_shape.TILES"
            )
        return cls(data["gpu"], int(data["sms"]), plans, data.get("measured", ""))


def table_path(gpu_name: str) -> Path:
    from .gpu import slug

    return registry.DATA_DIR / f"dispatch_{slug(gpu_name)}.json"


def in_turn() -> Callable[[int, int, int], Plan | Bands]:
    """choose(M, N, K) for a backend with no table and no speed to gain (the CPU): the
    tile shapes in turn, launch after launch, each over the top half of C's rows with
    the next one below (Bands), so that the checker runs each of them at C's first row
    and at its last, and the bands' views of A and C too (a C of one row: the tile
    shape alone): one pass of the checker's small shapes runs every one so."""
    names = list(CHOICES)
    turns = itertools.count()

    def choose(M: int, N: int, K: int) -> Plan | Bands:
        turn = next(turns) % len(names)
        plan = Plan(names[turn], 1)
        if M < 2:
            return plan
        return Bands((M + 1) // 2, plan, Plan(names[(turn + 1) % len(names)], 1))

    return choose


def chooser(
    gpu_name: str, device: hardware.Device, registers: Mapping[str, int] | None = None
) -> Callable[[int, int, int], Plan | Bands]:
    """choose(M, N, K) for this GPU: from its measured table, else by the device's own
    arithmetic (device_rule; autotune.chooser tunes on first use instead). A shape's
    plan is worked out once and kept: working it out takes tens of µs of Python,
    longer than a small product takes on the GPU."""
    path = table_path(gpu_name)
    choose = partial(device_rule, device=device, registers=registers)
    if path.exists():
        try:
            choose = Table.from_json(path.read_text()).choose
        except (ValueError, KeyError) as e:  # a table from an older version of by_shape
            warnings.warn(
                f"{path}: {e}; step 09 chooses by the device's arithmetic instead", stacklevel=2
            )
    return functools.lru_cache(maxsize=4096)(choose)


def committed_table(gpu_name: str) -> Table | None:
    """This GPU's measured table, where one is committed and readable."""
    path = table_path(gpu_name)
    if not path.exists():
        return None
    try:
        return Table.from_json(path.read_text())
    except (ValueError, KeyError):
        return None


def committed_tables() -> list[Table]:
    """Every readable table committed, for any GPU: their plans are candidates on others."""
    tables = []
    for path in sorted(registry.DATA_DIR.glob("dispatch_*.json")):
        try:
            tables.append(Table.from_json(path.read_text()))
        except (ValueError, KeyError):
            continue
    return tables


# ---- before anything is timed: the device's own arithmetic ---------------------------------

# Step 08 as it is: its own tiles, K unsplit. Always a candidate, and what the device's
# arithmetic keeps unless another plan is clearly faster by it.
SAFE = Plan(OWN, 1)
# Layers weighed for a tile shape: by the arithmetic (ranked), as many as max_splits
# allows; by timing (plan_space), all that leave each layer MIN_SLICES_PER_LAYER slices.
RULE_SPLITS = (1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128, 192, 256)
# What timing weighs stops at this many waves of blocks: past that, layers add
# traffic and no parallelism.
WAVES_AT_MOST = 4
# How many times faster than step 08's plan the arithmetic must find another before the
# untuned rule takes it: the model counts waves and bytes, not latency, and is crude.
CLEAR_WIN = 1.5
# Plans timed for a class on first use, step 08's among them.
SHORTLIST = 4
# A block's fixed work, in BK-wide slices of K: filling the pipeline and writing C.
BLOCK_OVERHEAD_SLICES = 2
# Launching the reduction, and reading and writing each layer: a launch's cost on the
# device, about (an empty kernel, H100: book/data/clocks_*.csv).
LAUNCH_S = 3e-6


@dataclass(frozen=True)
class TileResources:
    threads: int
    shared_bytes: int
    registers: int  # per thread: compiled where known, else the registry's floor


def tile_resources(tiles: str, registers: Mapping[str, int] | None = None) -> TileResources:
    """A tile shape's block: threads, shared memory, registers per thread (from
    `registers`, the compiled kernels' reports, where given)."""
    step = registry.step("08").with_params(**TILES[tiles])
    known = (registers or {}).get(tiles)
    groups = GROUPS.get(tiles, 1)
    return TileResources(
        groups * step.geometry.threads,
        groups * step.tuning.shared_bytes(step.params),
        known or step.tuning.registers(step.params),
    )


def resident_blocks(
    tiles: str, device: hardware.Device, registers: Mapping[str, int] | None = None
) -> int:
    """How many blocks of these tiles one of the device's SMs holds at once (0: none)."""
    r = tile_resources(tiles, registers)
    limits = device.limits()
    if hardware.launch_problems(limits, r.threads, r.registers, static_shared=r.shared_bytes):
        return 0
    return hardware.occupancy(limits, r.threads, r.registers, r.shared_bytes).blocks


def modelled_seconds(
    plan: Plan, M: int, N: int, K: int, device: hardware.Device,
    registers: Mapping[str, int] | None = None,
) -> float:  # fmt: skip
    """What the device's arithmetic says a plan takes, in seconds: the busiest SM's
    blocks (blocks spread evenly over the SMs, so a last wave that leaves SMs idle
    costs a whole block's time), each BM x BN x its layer of K FMAs plus its fixed
    work, at the SM's FP32 rate times a tile's reuse (a smaller tile loads more per
    FMA); for layers of K, their partial sums written and read back at the device's
    bandwidth, and the reduction's launch. Infinite where the block does not fit."""
    if not resident_blocks(plan.tiles, device, registers):
        return math.inf
    p = TILES[plan.tiles]
    blocks = tile_count(M, N, plan.tiles) * plan.splits
    slices = math.ceil(math.ceil(K / p["BK"]) / plan.splits) + BLOCK_OVERHEAD_SLICES
    fmas = math.ceil(blocks / device.sms) * p["BM"] * p["BN"] * slices * p["BK"]
    seconds = fmas / (device.fp32_lanes_per_sm * device.clock_mhz * 1e6 * _reuse(plan.tiles))
    if plan.splits > 1:
        seconds += 4 * M * N * (2 * plan.splits + 1) / (device.bandwidth_gbs * 1e9) + LAUNCH_S
    return seconds


def _reuse(tiles: str) -> float:
    """A tile's FMAs per float it loads, against step 08's own, to the fourth root: at
    8192x8192x256 64 x 64 tiles ran at 98.8% of cuBLAS where step 08's ran at 110.2%
    (H100, 2026-11-24): smaller tiles cost, but far less than their loads alone say."""
    def per_load(t):
        return TILES[t]["BM"] * TILES[t]["BN"] / (TILES[t]["BM"] + TILES[t]["BN"])

    return (per_load(tiles) / per_load(SAFE.tiles)) ** 0.25


def ranked(
    M: int, N: int, K: int, device: hardware.Device, registers: Mapping[str, int] | None = None
) -> list[Plan]:
    """Every plan that fits the device (each tile shape, K in RULE_SPLITS layers up to
    max_splits), fastest first by modelled_seconds (ties: bigger tiles, fewer layers)."""
    plans = [
        Plan(tiles, splits)
        for tiles in CHOICES
        for splits in RULE_SPLITS
        if splits <= max_splits(K, tiles) and resident_blocks(tiles, device, registers)
    ]
    return sorted(
        plans,
        key=lambda p: (
            modelled_seconds(p, M, N, K, device, registers),
            -TILES[p.tiles]["BM"] * TILES[p.tiles]["BN"],
            p.splits,
            p.tiles,
        ),
    )


def plan_space(M: int, N: int, K: int, sms: int) -> list[Plan]:
    """Every plan worth timing at a shape: each tile shape of CHOICES unsplit, and in as
    many layers as leave each MIN_SLICES_PER_LAYER slices of K and make WAVES_AT_MOST
    waves of blocks or fewer: each of RULE_SPLITS, and the counts whose blocks make 1 to
    WAVES_AT_MOST waves with the least left over (counted one block to an SM). What `tune
    09` times at a class's measured shape (scaled keeps a class's layers within
    MAX_SPLITS), and first-use tuning at a shape small enough to time them all
    (autotune). Not MAX_SPLITS here: where K is far longer than M and N, more layers
    won: at 256x256x65536 128 x 256 tiles in 66 layers ran at 96.5% of cuBLAS, the best
    plan of 32 layers or fewer at 85.2%; at 128x128x32768 128 layers 106.9% against
    88.2% (H200, 2026-11-29, GPU time)."""
    plans = []
    for tiles in CHOICES:
        count = tile_count(M, N, tiles)
        most = _most_layers(K, tiles)
        whole = {waves * sms // count for waves in range(1, WAVES_AT_MOST + 1)}
        for splits in sorted(set(RULE_SPLITS) | whole):
            if splits == 1 or (2 <= splits <= most and splits * count <= WAVES_AT_MOST * sms):
                plans.append(Plan(tiles, splits))
    return plans


def safe_plan(M: int, N: int) -> Plan:
    """Step 08's plan for this C: its own kernel (SAFE), or the same warps side by side
    (128 x 256) where those cover C in fewer tiles (a C of 128 rows: half of each 256 x
    128 tile would lie outside it)."""
    if tile_count(M, N, "128x256") < tile_count(M, N, SAFE.tiles):
        return Plan("128x256", 1)
    return SAFE


def device_class_plan(
    M: int, N: int, K: int, device: hardware.Device, registers: Mapping[str, int] | None = None
) -> Plan:
    """Step 08's plan (safe_plan), unless the arithmetic finds one CLEAR_WIN times faster:
    where 08's tiles leave most SMs idle for the whole product, which a T4's 40 SMs
    see at 333x777x129 (14 tiles) as an H100's 132 do."""
    safe = safe_plan(M, N)
    best = ranked(M, N, K, device, registers)[0]
    safe_s = modelled_seconds(safe, M, N, K, device, registers)
    if modelled_seconds(best, M, N, K, device, registers) * CLEAR_WIN <= safe_s:
        return best
    return safe


def device_rule(
    M: int, N: int, K: int, device: hardware.Device, registers: Mapping[str, int] | None = None
) -> Plan | Bands:
    """Without a measured table and without timing: choose_with step 08's own tiles first
    among the big ones (no measurement here says 128 x 256 is faster), and, for the
    class's part, device_class_plan at this very shape."""
    big = (SAFE.tiles, *(t for t in BIG_TILES if t != SAFE.tiles))
    return choose_with(
        device.sms,
        lambda cls, m, n, k: device_class_plan(m, n, k, device, registers),
        M,
        N,
        K,
        big,
    )


def shortlist(
    cls: tuple[int, int, int],
    device: hardware.Device,
    registers: Mapping[str, int] | None = None,
    priors: list[Table] = (),
) -> list[Plan]:
    """The plans first-use tuning times for a class, in the class's terms (layers at its
    measured shape, as a table's are; scaled to each shape timed): step 08's own, the
    device's arithmetic's pick, the plan a table measured on another GPU chose for this
    class (a candidate, not a choice: it is timed here too), then the arithmetic's next
    of other tile shapes, SHORTLIST at most. Every one fits the device."""
    M, N, K = measured_shape(cls, device.sms)
    order = ranked(M, N, K, device, registers)
    found = [safe_plan(M, N), order[0]]
    for table in priors:
        plan = table.plans.get(cls)
        if plan and resident_blocks(plan.tiles, device, registers):
            found.append(Plan(plan.tiles, min(plan.splits, max_splits(K, plan.tiles))))
    for plan in order:  # one more of each tile shape not yet in, then the rest in order
        if plan.tiles not in {p.tiles for p in found}:
            found.append(plan)
    found += order
    return list(dict.fromkeys(found))[:SHORTLIST]
