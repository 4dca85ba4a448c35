"""Step 09's GEMM: step 08's kernel built at the tile shapes autograder.run.by_shape
chooses among (gemm_specs), and put together with a reduction kernel into one launch
that runs a shape's plan, its layers of K added up by the reduction (compose)."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace

from ..ladder import registry
from .by_shape import BLOCKS, GROUPS, RAGGED, SLID, SPREAD, STAGED, TILES, Bands, Plan
from .kernel import KernelSpec


def gemm_key(tiles: str, N: int, K: int) -> str:
    """The key of gemm_specs that runs a plan's tiles for this N and K: the tiles' own
    name, with " ragged" where K ends inside a slice and they have a RAGGED twin, and
    " staged" where N is not a multiple of 4 (C's rows are not aligned for float4s) and
    they have a STAGE twin."""
    ragged = tiles in RAGGED and K % TILES[tiles]["BK"]
    return _twin(tiles, ragged, tiles in STAGED and N % 4)


def _twin(tiles: str, ragged: int, staged: int) -> str:
    return tiles + " ragged" * bool(ragged) + " staged" * bool(staged)


def gemm_specs(
    tiles: tuple[str, ...] = tuple(TILES), arch: str | None = None
) -> dict[str, KernelSpec]:
    """Step 08's course kernel at each of these tile shapes, built for `arch` (None: for
    any), with its defaulted template arguments: SLIDE = 1 for those of SLID, SLIDE and
    SPREAD = 1 for those of SPREAD where arch is the one named there or later, GROUPS for
    those of GROUPS (blocks of that many times the threads), BLOCKS for those of BLOCKS;
    and twins, keyed as gemm_key names them: for those of RAGGED, with RAGGED = 1, and
    for those of STAGED, with STAGE = 1 (of each, and of the RAGGED twin). Where it is
    not needed, a twin's check changes what ptxas makes of the other loops, for the
    worse: each runs only where its shapes need it."""
    step = registry.step("08")
    specs = {}
    for name in tiles:
        tiled = step.with_params(**TILES[name])
        spec = KernelSpec.from_step(tiled)
        groups = GROUPS.get(name, 1)
        block = replace(spec.geometry, block=(groups * spec.geometry.threads, 1))
        spread = (
            name in SPREAD
            and arch is not None
            and registry.arch_number(arch) >= registry.arch_number(SPREAD[name])
        )
        for ragged, staged in itertools.product(
            (0, 1) if name in RAGGED else (0,), (0, 1) if name in STAGED else (0,)
        ):
            blocks = BLOCKS.get(name, 0)
            flags = [int(name in SLID or spread), ragged, int(spread), groups, staged, blocks]
            while flags and flags[-1] == (0, 0, 0, 1, 0, 0)[len(flags) - 1]:  # defaults left out
                flags.pop()
            expression = tiled.instantiation(*flags)
            specs[_twin(name, ragged, staged)] = replace(
                spec, name_expression=expression, geometry=block
            )
    return specs


def fingerprint() -> str:
    """Step 09's code as it runs, in registry.fingerprint's 12 hex digits: step 08's
    kernel and step 09's reduction, and every GEMM gemm_specs builds (its key, template
    arguments and block; SPREAD's architectures). Step 09's own file is its reduction
    alone: a change to step 08's kernel or to by_shape's tile shapes or their flags
    changes what step 09 runs, and this with it."""
    gemms = [(key, s.name_expression, s.geometry.block) for key, s in gemm_specs().items()]
    code = [registry.step(step).source() for step in ("08", "09")]
    return registry.fingerprint("\n".join([*code, repr(gemms), repr(sorted(SPREAD.items()))]))


def graded_splits(M: int, N: int, K: int) -> int:
    """2, 3 or 4 layers, varying from shape to shape: a graded reduction runs on every
    shape, and one that assumes a number of layers is wrong somewhere."""
    return 2 + (M + N + K) % 3


@dataclass(frozen=True)
class Split:
    """One product run with K split in layers, as a launch left it: its workspace of
    partial sums (`splits` layers of rows x N floats), and the rows of C it made,
    row0 ... row0 + rows - 1."""

    partial: object
    splits: int
    row0: int
    rows: int


def compose(
    choose: Callable[[int, int, int], Plan | Bands],
    gemms: Mapping[str, Callable],
    reduce: Callable,
    workspace: Callable[[int], object],
    split_every_case: bool = False,
):
    """launch(M, N, K, alpha, A, B, beta, C): `choose`'s plan, with K split in
    graded_splits layers at least if split_every_case. gemms: step 08's
    launch(..., layers=S) per tile shape; reduce: launch(M, N, splits, alpha,
    partial, beta, C); workspace(n): n floats.

    launch.splits(): the last launch's Splits, for the judge to say what the
    reduction made of its layers (autograder.judge.reduction); launch.workspace():
    the last one's partial sums, for compute-sanitizer to name (sanitizer._target)."""
    split: list[Split] = []  # the last launch's split products
    partials = _kept(workspace)

    def product(plan, row0, M, N, K, alpha, A, B, beta, C):
        """C's rows row0 ... row0 + M - 1 (A's too: A and C are those rows' views)."""
        if isinstance(plan, Bands):
            for band, first, end in ((plan.top, 0, plan.rows), (plan.rest, plan.rows, M)):
                A_rows, C_rows = rows_of(A, first, end, K), rows_of(C, first, end, N)
                product(band, row0 + first, end - first, N, K, alpha, A_rows, B, beta, C_rows)
            return
        splits = max(plan.splits, graded_splits(M, N, K) if split_every_case else 1)
        gemm = gemms[gemm_key(plan.tiles, N, K)]
        if splits == 1:
            gemm(M, N, K, alpha, A, B, beta, C)
            return
        # A workspace of its own for each split product of the launch: the judge reads
        # each one's layers after the launch (bands of one size shared one, and the
        # second band's layers were taken for the first's).
        partial = partials(splits * M * N, len(split))
        split.append(Split(partial, splits, row0, M))
        gemm(M, N, K, 1.0, A, B, 0.0, partial, layers=splits)
        reduce(M, N, splits, alpha, partial, beta, C)

    def launch(M, N, K, alpha, A, B, beta, C):
        split.clear()
        product(choose(M, N, K), 0, M, N, K, alpha, A, B, beta, C)

    launch.splits = lambda: tuple(split)
    launch.workspace = lambda: split[-1].partial if split else None
    return launch


def _kept(workspace: Callable[[int], object]) -> Callable[[int, int], object]:
    """partials(n, nth): workspace(n) for a launch's nth split product, kept from launch
    to launch by size and place (four at most): allocated outside the timed launches'
    steady state. Every layer is written in full before the reduction reads it, so a
    kept one is as good as a new one."""
    held = {}

    def partials(floats: int, nth: int):
        if (floats, nth) not in held:
            if len(held) >= 4:
                held.clear()
            held[floats, nth] = workspace(floats)
        return held[floats, nth]

    return partials


def rows_of(X, first: int, end: int, width: int):
    """Rows first ... end - 1 of a row-major matrix `width` floats wide, as a view (X
    is the matrix, two-dimensional or flat)."""
    return X.reshape(-1)[first * width : end * width]
