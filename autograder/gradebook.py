"""Where grades are kept: one JSON file per student (the record, and the student's
feedback) and a CSV with a row per student, rebuilt from the JSON files.

Every write goes to a temporary file that then replaces the real one
(os.replace is atomic), so an interrupted run leaves each file either as it
was or complete, never half-written. The JSON files are the truth; the CSV
can always be rebuilt from them (`grade --merge`), which is also how the
shards of a Slurm job array come together.
"""

from __future__ import annotations

import csv
import io
import json
import os
import tempfile
from pathlib import Path

from . import rubric
from .grading import GRADER_ERROR, Grade

COLUMNS = (
    "student",
    "assignment",
    "total",
    "max_points",
    *(t.id for t in rubric.CUDA_TESTS),
    "status",
    "gflops",
    "minimum_gflops",
    "backend",
    "device",
    "submission",
    "fingerprint",
    "graded_at",
)


def write_atomically(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", newline="") as f:
            f.write(text)
        os.replace(temporary, path)
    except BaseException:
        os.unlink(temporary)
        raise


class Gradebook:
    """The grades of one assignment: feedback_dir/<student>.json and the CSV."""

    def __init__(self, csv_path: Path, feedback_dir: Path):
        self.csv_path = Path(csv_path)
        self.feedback_dir = Path(feedback_dir)

    def _path(self, student: str) -> Path:
        return self.feedback_dir / f"{student}.json"

    def get(self, student: str) -> Grade | None:
        try:
            return Grade.from_json(json.loads(self._path(student).read_text()))
        except FileNotFoundError:
            return None
        except (ValueError, TypeError, KeyError):  # not one of ours, or damaged: grade again
            return None

    def is_current(self, student: str, fingerprint: str, backend: str) -> bool:
        """Graded already, on this backend, from the same kernel, without a grader error."""
        old = self.get(student)
        return bool(
            old
            and old.fingerprint == fingerprint
            and old.backend == backend
            and old.status != GRADER_ERROR
        )

    def put(self, grade: Grade) -> None:
        write_atomically(self._path(grade.student), json.dumps(grade.to_json(), indent=1) + "\n")

    def write_csv(self, students: list[str]) -> int:
        """Rebuild the CSV from the JSON of each of `students` (the class: a feedback
        folder may hold others) graded so far; returns the number of rows."""
        found = (self.get(student) for student in sorted(students))
        rows = [_row(g) for g in found if g is not None]
        out = io.StringIO()
        writer = csv.DictWriter(out, COLUMNS, lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)
        write_atomically(self.csv_path, out.getvalue())
        return len(rows)


def _row(grade: Grade) -> dict:
    data = grade.to_json()
    row = {c: data.get(c, "") for c in COLUMNS}
    row.update({t.id: t.earned for t in grade.tests})
    gflops = sorted(grade.gflops)
    row["gflops"] = gflops[len(gflops) // 2] if gflops else ""
    row["minimum_gflops"] = grade.minimum_gflops if grade.minimum_gflops is not None else ""
    return row


def read_csv(path: Path) -> list[dict]:
    with open(path, newline="") as f:
        return list(csv.DictReader(f))
