"""How far from the exact product each result is, as book/fp32_accuracy.py measures
it and the book's tables read it back (book/data/fp32_accuracy_<gpu>.csv); and what
the tensor cores make of an FP32 input, for NumPy or CuPy arrays alike."""

from __future__ import annotations

import csv
import dataclasses
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from . import typed_csv

# TF32's 10 of FP32's 23 mantissa bits, and half a unit of the last of them: NumPy
# scalars, which keep CuPy's arrays uint32 too.
_KEPT, _HALF = np.uint32(0xFFFFE000), np.uint32(0x1000)


def tf32(x):
    """x rounded to TF32 as cvt.rna.tf32.f32 rounds it: to nearest, ties away from
    zero, 10 mantissa bits."""
    bits = x.astype(np.float32).view(np.uint32)
    return ((bits + _HALF) & _KEPT).view(np.float32)


def truncated(x):
    """x with its low 13 mantissa bits dropped, as wgmma reads an FP32 word as TF32."""
    return (x.astype(np.float32).view(np.uint32) & _KEPT).view(np.float32)


def split(x):
    """x = big + small, both TF32, as kernels/13_wgmma_3xtf32.cu splits its inputs
    (split_fast)."""
    big = tf32(x)
    return big, tf32(x - big)


@dataclass(frozen=True)
class Row:
    """One result on one kind of input: e = |C - exact| / (|A||B|), element by
    element, against a float64 product."""

    inputs: str
    result: str
    max_e: float
    median_e: float
    relative_norm: float  # ||C - exact|| / ||exact||
    K: int
    gpu: str
    date: str
    cuda: str
    cupy: str


def write(path: Path, rows: list[Row]) -> None:
    with Path(path).open("w", newline="") as f:
        out = csv.DictWriter(f, [field.name for field in dataclasses.fields(Row)])
        out.writeheader()
        out.writerows(dataclasses.asdict(r) for r in rows)


def read(path: Path) -> list[Row]:
    return typed_csv.read(path, Row)
