"""How far from the exact product each result is, as book/fp32_accuracy.py measures
it and the book's tables read it back (book/data/fp32_accuracy_<gpu>.csv)."""

from __future__ import annotations

import csv
import dataclasses
from dataclasses import dataclass
from pathlib import Path

from . import typed_csv


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
