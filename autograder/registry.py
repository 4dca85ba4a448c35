"""The reference ladder: every step's kernel file, name, template parameters and
launch geometry, declared once. The CLI, checker, benchmark, tests, book and
exercises all read it from here."""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Callable, Mapping

KERNEL_DIR = Path(__file__).resolve().parent.parent / "kernels"


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

    def __post_init__(self):
        if self.rows_on not in ("x", "y"):
            raise ValueError(f"rows_on must be 'x' or 'y', not {self.rows_on!r}")
        if min(self.block) < 1 or min(self.tile) < 1:
            raise ValueError(f"block {self.block} and tile {self.tile} must be positive")

    @property
    def threads(self) -> int:
        return self.block[0] * self.block[1]

    def grid(self, M: int, N: int) -> tuple[int, int]:
        row_blocks = math.ceil(M / self.tile[0])
        col_blocks = math.ceil(N / self.tile[1])
        return (col_blocks, row_blocks) if self.rows_on == "y" else (row_blocks, col_blocks)

    def describe(self) -> str:
        bx, by = self.block
        return (
            f"block {bx}x{by} threads, each block covers {self.tile[0]}x{self.tile[1]} "
            f"of C, grid.{self.rows_on} walks the rows"
        )


@dataclass(frozen=True)
class Step:
    """One rung of the ladder: kernels/<id>_<slug>.cu and how to launch it."""

    id: str
    slug: str
    title: str
    kernel: str
    # Template parameters in declaration order; empty for extern "C" kernels.
    params: Mapping[str, int] = field(default_factory=dict)
    # Launch geometry as a function of the template parameters, so that a
    # tuned parameter set carries its own geometry.
    layout: Callable[[Mapping[str, int]], Geometry] = None

    @property
    def path(self) -> Path:
        return KERNEL_DIR / f"{self.id}_{self.slug}.cu"

    @property
    def name(self) -> str:
        return f"{self.id}_{self.slug}"

    @property
    def geometry(self) -> Geometry:
        return self.layout(self.params)

    @property
    def name_expression(self) -> str:
        """What NVRTC instantiates: 'sgemm_vectorized<128, 128, 8, 8, 8>'."""
        if not self.params:
            return self.kernel
        return f"{self.kernel}<{', '.join(str(v) for v in self.params.values())}>"

    def source(self) -> str:
        return self.path.read_text()

    def with_params(self, **params: int) -> "Step":
        """The same step with some template parameters changed (for tuning)."""
        unknown = set(params) - set(self.params)
        if unknown:
            raise KeyError(
                f"step {self.id} has no parameter {', '.join(sorted(unknown))}; "
                f"its parameters are {', '.join(self.params)}"
            )
        return replace(self, params={**self.params, **params})


def _thread_tiles(p: Mapping[str, int]) -> Geometry:
    """One thread per TM x TN piece of the block's BM x BN tile (TN = 1 in 1D)."""
    TN = p.get("TN", 1)
    return Geometry((p["BM"] // p["TM"] * (p["BN"] // TN), 1), (p["BM"], p["BN"]))


def _fixed(block, tile, rows_on="y"):
    return lambda p: Geometry(block=block, tile=tile, rows_on=rows_on)


STEPS: tuple[Step, ...] = (
    Step("01", "naive", "Naive", "sgemm_naive", layout=_fixed((32, 32), (32, 32), rows_on="x")),
    Step(
        "02",
        "coalescing",
        "Global memory coalescing",
        "sgemm_coalescing",
        layout=_fixed((32, 32), (32, 32)),
    ),
    Step(
        "03",
        "smem_tiling",
        "Shared-memory tiling",
        "sgemm_smem_tiling",
        params=dict(BS=32),
        layout=lambda p: Geometry((p["BS"], p["BS"]), (p["BS"], p["BS"])),
    ),
    Step(
        "04",
        "blocktiling_1d",
        "1D register blocking",
        "sgemm_blocktiling_1d",
        params=dict(BM=128, BN=32, BK=16, TM=16),
        layout=_thread_tiles,
    ),
    Step(
        "05",
        "blocktiling_2d",
        "2D register blocking",
        "sgemm_blocktiling_2d",
        params=dict(BM=128, BN=128, BK=8, TM=8, TN=8),
        layout=_thread_tiles,
    ),
    Step(
        "06",
        "vectorized",
        "Vectorized loads",
        "sgemm_vectorized",
        params=dict(BM=128, BN=128, BK=16, TM=8, TN=8),
        layout=_thread_tiles,
    ),
    Step(
        "07",
        "warptiling",
        "Warptiling",
        "sgemm_warptiling",
        params=dict(BM=128, BN=128, BK=8, WM=32, WN=64, WNITER=2, TM=8, TN=4),
        layout=lambda p: Geometry(
            (p["BM"] // p["WM"] * (p["BN"] // p["WN"]) * 32, 1), (p["BM"], p["BN"])
        ),
    ),
)


def step(key: str) -> Step:
    """A step by id ('05', '5') or name ('05_blocktiling_2d', 'blocktiling_2d')."""
    key = str(key).strip()
    for s in STEPS:
        if key in (s.id, s.slug, s.name) or (key.isdigit() and int(key) == int(s.id)):
            return s
    known = ", ".join(s.name for s in STEPS)
    raise KeyError(f"no step {key!r}; the steps are {known}")
