"""Where grades are kept: one JSON file per student (the record, and the student's
feedback) and a CSV with a row per student, rebuilt from the JSON files.

A class's grades live beside its folder of submissions, named after it
(`<folder>.grades/<step>/feedback/<student>.json` and `.../grades.csv`), so two
classes never share a gradebook, and find() never takes one for a student.

Every write goes to a temporary file that then replaces the real one
(os.replace is atomic), so an interrupted run leaves each file either as it
was or complete, never half-written. The JSON files are the truth; the CSV
can always be rebuilt from them (`grade --merge`), which is also how the
shards of a Slurm job array come together. No grade is ever dropped from the
CSV: its rows are the class's students and every student with a feedback file.

A grade is current while nothing it depends on has changed: the kernel, and the
grader (`grader_version`: its code, the rubric, grading.json's thresholds).
`Gradebook.is_current` alone decides what is graded again.
"""

from __future__ import annotations

import contextlib
import csv
import fcntl
import hashlib
import importlib.metadata
import io
import json
import os
import tempfile
from functools import cached_property
from pathlib import Path

from ..judge import verdicts
from ..ladder.registry import Step
from . import rubric
from .grading import GRADER_ERROR, NO_SUBMISSION, OUT_OF_REACH, Grade
from .submissions import GRADEBOOK_SUFFIX, Submission, students_folder

PACKAGE = Path(__file__).resolve().parents[1]  # the whole autograder package
DISTRIBUTION = "sgemm-course"  # pyproject.toml's project name
LOCK = ".lock"  # in the feedback folder: one grading run of a class at a time

COLUMNS = (
    "student",
    "assignment",
    "total",
    "max_points",
    "possible",
    "possible_why",
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


class Refused(ValueError):
    """A command that would lose, mix or replace grades; str() says why and what to do."""


class Gradebook:
    """The grades of one assignment of one class: feedback_dir/<student>.json and the CSV."""

    def __init__(self, csv_path: Path, feedback_dir: Path, step: Step):
        self.csv_path = Path(csv_path)
        self.feedback_dir = Path(feedback_dir)
        self.step = step

    @classmethod
    def of(
        cls, root: Path, step: Step, csv_path: Path | None = None, feedback_dir: Path | None = None
    ) -> Gradebook:
        """The gradebook of the class in root: by default <folder>.grades/<step>/
        (grades.csv and feedback/), beside the folder that holds the students. Beside
        it, not in it: nbgrader, like find(), takes every folder in it for a student."""
        folder = students_folder(root).resolve()
        home = folder.with_name(folder.name + GRADEBOOK_SUFFIX) / step.name
        return cls(csv_path or home / "grades.csv", feedback_dir or home / "feedback", step)

    @cached_property
    def grader(self) -> str:
        """grader_version(step), once per gradebook: a run reads it for every student."""
        return grader_version(self.step)

    def _path(self, student: str) -> Path:
        return self.feedback_dir / f"{student}.json"

    def students(self) -> list[str]:
        """Everyone with a feedback file."""
        return sorted(p.stem for p in self.feedback_dir.glob("*.json"))

    def get(self, student: str) -> Grade | None:
        try:
            return _load(self._path(student))
        except FileNotFoundError:
            return None

    def _stamped(self, kernel_fingerprint: str) -> str:
        """The fingerprint a feedback file keeps: its kernel's and the grader's together."""
        return hashlib.sha256(f"{kernel_fingerprint} {self.grader}".encode()).hexdigest()[:16]

    def is_current(self, submission: Submission, backend: str) -> bool:
        """Whether the saved grade stands: made by this grader, on this backend, from
        the kernel handed in now, without a grader error, on a machine that could run
        it. A grade made from a kernel also stands when nothing is handed in any more:
        an absence does not undo a grade (--force grades the absence)."""
        old = self.get(submission.student)
        if old is None or old.status in (GRADER_ERROR, OUT_OF_REACH):
            return False
        if submission.path is None and old.status != NO_SUBMISSION:
            return True
        return old.backend == backend and old.fingerprint == self._stamped(
            submission.fingerprint(self.step)
        )

    def gone(self, roster: list[Submission]) -> list[str]:
        """Students whose grade stands though they hand nothing in now: graded, and no
        longer in the roster, or in it with nothing handed in."""
        present = {s.student: s for s in roster}
        return [
            student
            for student in self.students()
            if student not in present
            or (present[student].path is None and self.get(student).status != NO_SUBMISSION)
        ]

    def put(self, grade: Grade) -> None:
        """Save a grade as grading.grade made it (its fingerprint is its kernel's)."""
        record = {
            **grade.to_json(),
            "fingerprint": self._stamped(grade.fingerprint),
            "grader": self.grader,
        }
        write_atomically(self._path(grade.student), json.dumps(record, indent=1) + "\n")

    def write_csv(self, roster: list[str]) -> int:
        """Rebuild the CSV from the feedback files: a row for each student of the
        roster graded so far and for each student with a feedback file; returns the
        number of rows."""
        found = (self.get(student) for student in sorted(set(roster) | set(self.students())))
        rows = [_row(g) for g in found if g is not None]
        out = io.StringIO()
        writer = csv.DictWriter(out, COLUMNS, lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)
        write_atomically(self.csv_path, out.getvalue())
        return len(rows)

    @contextlib.contextmanager
    def locked(self, shared: bool = False):
        """Refuse a feedback folder or CSV that holds anything but this assignment's
        grades, then hold the feedback folder's lock while grading: shared by the
        shards of one Slurm job array, exclusive otherwise, since two runs at once
        would grade students twice and each write the CSV."""
        self._check_feedback()
        self._check_csv()
        self.feedback_dir.mkdir(parents=True, exist_ok=True)
        with open(self.feedback_dir / LOCK, "a") as lock:
            try:
                fcntl.flock(lock, (fcntl.LOCK_SH if shared else fcntl.LOCK_EX) | fcntl.LOCK_NB)
            except BlockingIOError:
                raise Refused(
                    f"another grade run is using {self.feedback_dir}: wait until it ends"
                ) from None
            yield

    def _check_feedback(self) -> None:
        for path in sorted(self.feedback_dir.glob("*.json")):
            if (assignment := _load(path).assignment) != self.step.name:
                raise Refused(
                    f"{self.feedback_dir} holds grades of {assignment} ({path.name}), "
                    f"not {self.step.name}: give this assignment its own --json"
                )

    def _check_csv(self) -> None:
        """Refuse to replace a file that is not this assignment's grades CSV (an empty
        file has nothing to lose)."""
        if not self.csv_path.exists() or self.csv_path.stat().st_size == 0:
            return
        try:
            with open(self.csv_path, newline="") as f:
                reader = csv.DictReader(f)
                header = reader.fieldnames or []
                others = {row.get("assignment") for row in reader} - {self.step.name}
        except (UnicodeDecodeError, csv.Error):
            header, others = [], set()
        if header[:2] != ["student", "assignment"]:
            raise Refused(
                f"{self.csv_path} is not a grades CSV (it does not start with "
                "student,assignment): refusing to replace it; give another --out"
            )
        if others:
            raise Refused(
                f"{self.csv_path} holds grades of {', '.join(sorted(map(str, others)))}, "
                f"not {self.step.name}: refusing to replace them; give another --out"
            )


def _load(path: Path) -> Grade:
    """The grade in a feedback file. Raises FileNotFoundError, or Refused for a file
    that is not a grade (a wrong --json, or one edited by hand)."""
    try:
        return Grade.from_json(json.loads(path.read_text()))
    except (ValueError, TypeError, KeyError, AttributeError) as e:
        raise Refused(
            f"{path} is not a grade file ({type(e).__name__}: {e}): is --json the right "
            "folder? (delete the file to grade that student again)"
        ) from None


def grader_version(step: Step) -> str:
    """A fingerprint of what a grade of `step` depends on besides the kernel: the
    grader's code (its *.py and *.h files, the rubric among them) and version, the
    thresholds in grading.json, and the step's reference kernel (the speed test's
    minimum is a fraction of its GFLOP/s). A change to any of them makes every
    earlier grade of the step stale."""
    try:
        version = importlib.metadata.version(DISTRIBUTION)
    except importlib.metadata.PackageNotFoundError:  # run from a clone, not installed
        version = ""
    digest = hashlib.sha256(version.encode())
    for path in sorted(PACKAGE.rglob("*")):
        if path.suffix in (".py", ".h"):
            digest.update(f"\0{path.relative_to(PACKAGE)}\0".encode() + path.read_bytes())
    digest.update(b"\0grading.json\0" + _thresholds().encode())
    digest.update(b"\0reference\0" + step.source().encode())
    return digest.hexdigest()[:16]


def _thresholds() -> str:
    """grading.json without its comments (its "//" keys): rewording one regrades nobody."""
    path = verdicts.GRADING
    try:
        config = json.loads(path.read_text())
    except ValueError as e:
        raise Refused(f"{path} is not valid JSON ({e}): fix it, then grade") from None
    return json.dumps({k: v for k, v in config.items() if not k.startswith("//")}, sort_keys=True)


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
