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


# The largest TF32 value, (2 - 2^-10) 2^127: where kernels/13's split stops big.
LARGEST_TF32 = np.float32(3.4011621e38)


def split(x):
    """x = big + small, both TF32, as kernels/13_wgmma_3xtf32.cu splits its inputs:
    big is x rounded to TF32 but no larger than the largest TF32 value (x within
    2^-11 of 2^128 would round to infinity), small what is left, rounded."""
    x = x.astype(np.float32)
    rounded = tf32(x)
    big = np.copysign(np.fmin(np.abs(rounded), LARGEST_TF32), x).astype(np.float32)
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


def write(path: Path, rows: list) -> None:
    """Rows of one kind (Row, or the probe's Kept) into a CSV, a column per field."""
    with Path(path).open("w", newline="") as f:
        out = csv.DictWriter(f, [field.name for field in dataclasses.fields(rows[0])])
        out.writeheader()
        out.writerows(dataclasses.asdict(r) for r in rows)


def read(path: Path, kind: type = Row) -> list:
    return typed_csv.read(path, kind)


# ---- what the tensor cores keep when they add (book/tf32_accumulator.py) ----

# A probe's products are exact in TF32 and FP32 alike (powers of two and 1.75 times
# them, times B = 1), so every difference from the exact sum is made by the additions.
# K = 64 is two slices of 32 in steps 12 and 13: a term at k = 1 is added inside the
# first wgmma, one at k = 8 by the next wgmma into its accumulators, one at k = 32 in
# the next slice (where step 13 adds each slice's sums into FP32 registers).
PROBE_K = 64
PLACES = {"inside one wgmma": 1, "by the next wgmma": 8, "in the next slice": 32}
# 1 + 2^-e for these e: FP32 keeps e <= 23 (24 bits); 2^-24 is a tie, rounded to even, 1.
EXPONENTS = tuple(range(14, 27))
U = 2.0**-23  # FP32's unit in the last place of 1


@dataclass(frozen=True)
class Question:
    place: str  # where the small term is added (PLACES)
    small: float  # the term added to 1
    exponent: int | None = None  # small = 2^-exponent; None for the rounding questions

    @property
    def terms(self) -> dict[int, float]:
        return {0: 1.0, PLACES[self.place]: self.small}


def questions() -> list[Question]:
    """The probe's sums, one row of A each: 1 + 2^-e at each place for each e, and two
    whose FP32 sums round away from where truncation leaves them: 1 + 1.75 u (to nearest
    1 + 2u, toward zero 1 + u) and 1 - u / 4 (to nearest 1, toward zero 1 - u / 2)."""
    found = []
    for place in PLACES:
        found += [Question(place, 2.0**-e, e) for e in EXPONENTS]
        found += [Question(place, 1.75 * U), Question(place, -U / 4)]
    return found


def probe_inputs(asked: list[Question]):
    """A (one row per question, PROBE_K columns) and B (PROBE_K x 8 of ones), float32."""
    A = np.zeros((len(asked), PROBE_K), dtype=np.float32)
    for row, q in enumerate(asked):
        for k, value in q.terms.items():
            A[row, k] = value
    return A, np.ones((PROBE_K, 8), dtype=np.float32)


@dataclass(frozen=True)
class Kept:
    """What one kernel's additions kept of a term added at one place."""

    kernel: str
    place: str
    bits: int  # the most e with 1 + 2^-e' kept exactly for every e' <= e: 23 in FP32
    rounding: str  # "to nearest", "toward zero", or what the sums were
    gpu: str = ""
    date: str = ""
    cuda: str = ""


def kept(kernel: str, asked: list[Question], sums) -> list[Kept]:
    """Read a kernel's row sums (C's first column, as float64) back into bits and rounding."""
    found = []
    for place in PLACES:
        answers = {q: float(s) - 1.0 for q, s in zip(asked, sums) if q.place == place}
        bits = 0
        for q, got in sorted(answers.items(), key=lambda qa: qa[0].exponent or 99):
            if q.exponent is None or got != q.small:
                break
            bits = q.exponent
        up, down = (answers[q] for q in answers if q.exponent is None)
        if (up, down) == (2 * U, 0.0):
            rounding = "to nearest"
        elif (up, down) == (U, -U / 2):
            rounding = "toward zero"
        else:
            rounding = f"1 + 1.75u gave 1 + {up / U:g}u, 1 - u/4 gave 1 - {-down / U:g}u"
        found.append(Kept(kernel, place, bits, rounding))
    return found
