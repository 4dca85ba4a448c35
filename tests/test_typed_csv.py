"""typed_csv reads back what bench and tune write, each cell as its field's type."""

from __future__ import annotations

import csv
from dataclasses import asdict, dataclass

import pytest

from autograder.measure import typed_csv


@dataclass(frozen=True)
class Measured:
    kernel: str
    M: int
    gflops: float | None
    wrong: str = ""


def test_a_row_comes_back_as_it_was_written_and_an_empty_optional_cell_as_none(tmp_path):
    rows = [
        Measured("08_pipelining", 4095, 41373.5),
        Measured("09_by_shape", 7, None, "NaN at (0, 0)"),
    ]
    path = tmp_path / "rows.csv"
    with path.open("w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(asdict(rows[0])))
        writer.writeheader()
        writer.writerows(asdict(r) for r in rows)
    assert typed_csv.read(path, Measured) == rows


def test_an_empty_cell_of_a_field_that_is_not_optional_is_an_error(tmp_path):
    path = tmp_path / "rows.csv"
    path.write_text("kernel,M,gflops,wrong\n08_pipelining,,1.0,\n")
    with pytest.raises(ValueError):
        typed_csv.read(path, Measured)
