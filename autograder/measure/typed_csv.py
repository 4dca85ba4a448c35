"""Rows of a dataclass read back from the CSV files that bench and tune write:
each cell parsed by its field's type, so that a number comes back a number."""

from __future__ import annotations

import csv
import types
import typing
from pathlib import Path
from typing import TypeVar

T = TypeVar("T")


def read(path: Path, row_type: type[T]) -> list[T]:
    hints = typing.get_type_hints(row_type)
    with Path(path).open(newline="") as f:
        return [
            row_type(**{name: _parse(hints[name], text) for name, text in cells.items()})
            for cells in csv.DictReader(f)
        ]


def _parse(hint, text: str):
    """An int, float or str; an optional one (float | None) is None where the cell is empty."""
    union = isinstance(hint, types.UnionType) or typing.get_origin(hint) is typing.Union
    kinds = typing.get_args(hint) if union else (hint,)
    if text == "" and type(None) in kinds:
        return None
    kind = next(k for k in kinds if k is not type(None))
    return kind(text)
