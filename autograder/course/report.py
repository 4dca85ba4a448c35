"""A class at a glance: what it got wrong, who is fastest (verified), and a page per student.

    python -m autograder report submitted.grades/05_blocktiling_2d

`write` reads a gradebook's feedback files (autograder.grade.gradebook) and writes,
beside its feedback folder, `report.html` for the instructor and `students/<student>.html`
for each student, to hand back. `grade` and `grade --merge` call it after the grades.
Every page is one self-contained file (its figures are PNGs inside it, written by
autograder.course.pictures.png with the size of their smallest text, for book/look.py to
check; no script, no font, nothing from a network), so it opens from a USB stick.

The class report shows:

- each test's pass rate and the distribution of the totals (two figures);
- the class's causes: every diagnosed cause of a failing test (autograder.judge.diagnosis),
  counted over students, most common first, with who, an example message and its line.
  Students' causes are one cause when a repair of one rule (a comparison, a term, ...)
  confirmed them on lines that stand for the same statement of the step's own kernel
  (autograder.judge.aligned, at grading time), or, with no rule, when their diagnosis
  is of one kind on such lines: that key does not depend on a learner's line numbers
  or names. A cause
  with no such statement (no line confirmed, or a kernel that does not read as the
  step's) is keyed by its kind and its words with the learner's code, places and
  numbers taken out;
- a leaderboard per GPU of the speeds the grader verified (autograder.judge.verdicts:
  only accepted timings of kernels right on every test), with the reference kernel's
  GFLOP/s timed beside each, and kernels whose speeds lie within each other's spread
  ranked as ties;
- the students not graded, why, and what to do;
- every student's grade with its date and whether the grader that made it is this one.

A student's page holds their own feedback alone: no other student's name, and no shape
of a hidden test (rubric.GradedTest.hidden), each written as "a hidden shape". The pages
depend on nothing but the feedback files and the grader's version, so building them
again from unchanged grades rewrites nothing.
"""

from __future__ import annotations

import base64
import hashlib
import html
import re
import statistics
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from matplotlib.figure import Figure

from ..grade import rubric
from ..grade.gradebook import Gradebook, grader_version, write_atomically
from ..grade.grading import GRADED, Grade
from ..judge import verdicts
from ..judge.causes import cause_of
from ..judge.diagnosis import KINDS
from ..judge.timing import NOISY_ERROR
from ..ladder import registry
from ..ladder.registry import Step
from . import pictures
from .pictures import ink

REPORT = "report.html"
PAGES = "students"  # the folder of the students' pages, beside the report
# The spread assumed of a timing recorded before spreads were: the largest standard
# error the grader accepts of the reference's launches (judge.timing.NOISY_ERROR), above
# the 1.8 % that five timings of one kernel spread by at most on an H100 (README).
ASSUMED_ERROR = NOISY_ERROR
# What to do about a student not graded, by their grade's status (grading's statuses).
TO_DO = {
    "no submission": "nothing was handed in: collect it, then grade again",
    "unreadable": "no single kernel could be read: ask for one .cu file, or the notebook "
    "with its kernel cell, then grade again",
    "not implemented": "the #error stub is still there: the kernel was not written",
    "compile error": "the compiler's message is on their page: they fix it and hand it in again",
    "refused": "the grader refused to build it (the message says what): they take that out "
    "and hand it in again",
    "off the contract": "the kernel does not take the course's parameters: their page says "
    "which; they fix its signature",
    "needs a GPU": "it uses what the CPU backend cannot run: grade it on a GPU",
    "needs another GPU": "the step runs on one kind of GPU alone: grade it there",
    "grader error": "the grader's failure, not the student's: run grade again",
}


def gradebook_of(folder: Path) -> Gradebook:
    """The gradebook in `folder` (<folder>.grades/<step>/, holding feedback/)."""
    folder = Path(folder)
    if not (folder / "feedback").is_dir():
        raise ValueError(
            f"{folder} holds no feedback/ folder: give the gradebook grade wrote, "
            "<folder>.grades/<step>/"
        )
    step = _step_of(folder)
    return Gradebook(folder / "grades.csv", folder / "feedback", step)


def _step_of(folder: Path) -> Step:
    """The step a gradebook is of: its folder's name, or else its grades'."""
    try:
        return registry.step(folder.name)
    except KeyError:
        unnamed = Gradebook(folder / "grades.csv", folder / "feedback", None)
        for student in unnamed.students():
            return registry.step(unnamed.get(student).assignment)
        raise ValueError(f"{folder} is named after no step, and holds no grade") from None


def write(book: Gradebook, not_yet: list[str] = ()) -> Path:
    """Build the class report and every student's page from the gradebook's feedback
    files, beside its feedback folder; returns the report's path. not_yet: students of
    the class with no grade yet (after the shards of a job array)."""
    grades = [g for s in book.students() if (g := book.get(s)) is not None]
    home = book.feedback_dir.parent
    current = grader_version(book.step)
    pages = {g.student: f"{PAGES}/{_page_name(g.student)}" for g in grades}
    for grade in grades:
        _write_if_changed(home / pages[grade.student], _student_page(grade, book.step, current))
    report = home / REPORT
    _write_if_changed(report, _class_page(grades, book.step, current, pages, list(not_yet)))
    return report


def _write_if_changed(path: Path, text: str) -> None:
    if not path.exists() or path.read_text() != text:
        write_atomically(path, text)


def _page_name(student: str) -> str:
    """A file name for a student's page: their name where it is a plain one."""
    safe = re.sub(r"[^A-Za-z0-9_.-]", "_", student).lstrip(".") or "student"
    if safe != student:
        safe += "-" + hashlib.sha256(student.encode()).hexdigest()[:6]
    return f"{safe}.html"


# --- Words ---------------------------------------------------------------------------


def _inline(text: str) -> str:
    """text as HTML: escaped, each `code` as code, each line on its own."""
    escaped = html.escape(text, quote=False)
    escaped = re.sub(r"`([^`\n]+)`", r"<code>\1</code>", escaped)
    return escaped.replace("`", "&#96;").replace("\n", "<br>")


def _hidden_shapes() -> list[str]:
    """The shapes of hidden tests that no test shown to learners has."""
    shown = {s for t in rubric.CUDA_TESTS if t.suite and not t.hidden
             for s in verdicts.SUITES[t.suite]}  # fmt: skip
    return [str(s) for t in rubric.CUDA_TESTS if t.suite and t.hidden
            for s in verdicts.SUITES[t.suite] if s not in shown]  # fmt: skip


def for_the_student(text: str) -> str:
    """text with every shape of a hidden test written as "a hidden shape"."""
    for shape in _hidden_shapes():
        text = re.sub(rf"(?<![\dx]){re.escape(shape)}(?![\dx])", "a hidden shape", text)
    return text


def _words(message: str) -> str:
    """A cause's words without what is the learner's own: their code, their file and
    lines, numbers, and the plural a number takes."""
    text = re.sub(r"`[^`]*`", "`…`", message)
    text = re.sub(r"[\w.-]+\.(?:cu|ipynb):\d+(?: \(cell line \d+\))?", "…", text)
    text = re.sub(r"\b([A-Za-z_]\w*)\[[^\]]*\]", r"\1[…]", text)
    return re.sub(r"(# [a-z]+?)s\b", r"\1", cause_of(text))


# --- The class's causes --------------------------------------------------------------


@dataclass
class ClassCause:
    kind: str
    statement: str  # the step's statement it stands for, or ""
    reference_line: int | None
    students: dict  # student -> their cause record (the first of theirs)

    @property
    def kinds(self) -> list[str]:
        """The kinds its students' diagnoses gave, the most frequent first: one mistake
        repaired alike may be named more or less exactly from its evidence."""
        counted = Counter(r["kind"] for r in self.students.values())
        return [k for k, _ in counted.most_common()]

    @property
    def example(self) -> tuple[str, dict]:
        student = sorted(self.students)[0]
        return student, self.students[student]


def _records(grade: Grade) -> list[dict]:
    """A graded student's causes; for a grade recorded before causes were, one per line
    of each failing test's message (grouped by its words, with no kind)."""
    if grade.causes:
        return grade.causes
    found = []
    for test in grade.tests:
        if test.earned < test.points and test.id != "test_fast_enough":
            for line in test.message.splitlines():
                said = re.sub(r"^\d+ of \d+ cases \([^)]*\): |^[^:]*beta=[^:]*: ", "", line)
                found.append({"test": test.id, "kind": "", "line": None, "reference_line": None,
                              "statement": "", "message": said})  # fmt: skip
    return found


def _key(record: dict) -> tuple:
    """What makes two students' causes one: the repair's rule on the step's statement
    where a repair confirmed the line (the same mistake, however strong the evidence
    that named its kind: an index mistake reproduced exactly, or only repaired); the
    kind on that statement where no rule is known; else the kind and the words."""
    statement, rule = record.get("reference_line"), record.get("rule", "")
    if statement and rule:
        return ("repaired", statement, rule)
    if statement:
        return (record["kind"], statement)
    return (record["kind"], _words(record["message"]))


def class_causes(grades: list[Grade]) -> list[ClassCause]:
    """Every cause of the graded students, counted over students, most common first."""
    groups: dict[tuple, ClassCause] = {}
    for grade in grades:
        if grade.status != GRADED:
            continue
        for record in _records(grade):
            key = _key(record)
            cause = groups.setdefault(
                key,
                ClassCause(record["kind"], record.get("statement", ""),
                           record.get("reference_line"), {}),
            )  # fmt: skip
            cause.students.setdefault(grade.student, record)
    order = list(KINDS)
    return sorted(
        groups.values(),
        key=lambda c: (-len(c.students), order.index(c.kind) if c.kind in order else len(order)),
    )


# --- The leaderboard -----------------------------------------------------------------


@dataclass
class Entry:
    student: str
    device: str
    gflops: float  # the median of its timings
    low: float  # the range another timing may give, by its spread
    high: float
    error: float  # the relative spread used
    assumed: bool  # the spread was not recorded (an older grade)
    reference: float | None  # the reference kernel's GFLOP/s, timed beside it
    rank: int = 0
    tie: bool = False


def verified(grade: Grade) -> bool:
    """Whether the grade holds a speed to show: timings the grader accepted (a rejected
    timing has no minimum) of a kernel right on every correctness test."""
    right = all(t.earned == t.points for t in grade.tests if t.id != "test_fast_enough")
    accepted = bool(grade.gflops) and grade.minimum_gflops is not None
    return grade.status == GRADED and accepted and right


def leaderboard(grades: list[Grade]) -> dict[str, list[Entry]]:
    """The verified speeds by GPU, fastest first; an entry whose range meets the range
    of the first entry of the ties before it shares its rank."""
    boards: dict[str, list[Entry]] = {}
    for g in filter(verified, grades):
        assumed = not g.gflops_error
        error = ASSUMED_ERROR if assumed else max(2 * e for e in g.gflops_error)
        reference = statistics.median(g.reference_gflops) if g.reference_gflops else None
        boards.setdefault(g.device, []).append(Entry(
            g.student, g.device, statistics.median(g.gflops), min(g.gflops) * (1 - error),
            max(g.gflops) * (1 + error), error, assumed, reference,
        ))  # fmt: skip
    for entries in boards.values():
        entries.sort(key=lambda e: (-e.gflops, e.student))
        leader = None
        for i, e in enumerate(entries, 1):
            if leader is not None and e.high >= leader.low:
                e.rank, e.tie, leader.tie = leader.rank, True, True
            else:
                e.rank, leader = i, e
    return boards


# --- Figures -------------------------------------------------------------------------

FIGURE_WIDTH = 3.4  # inches: 340 px, which fits a phone's column at its own size


def _png(fig: Figure, alt: str) -> str:
    data = base64.b64encode(pictures.png(fig)).decode()
    return f'<img src="data:image/png;base64,{data}" alt="{html.escape(alt)}">'


def _axes(fig: Figure):
    ax = fig.add_subplot()
    ax.spines[["top", "right"]].set_visible(False)
    ax.tick_params(labelsize=ink.SMALL)
    return ax


def _pass_rates(grades: list[Grade]) -> str:
    fig = Figure(figsize=(FIGURE_WIDTH, 2.0), dpi=ink.DPI)
    ax = _axes(fig)
    names = [t.id.removeprefix("test_").replace("_", " ") for t in rubric.CUDA_TESTS]
    passed = [sum(_earned(g, t.id) == t.points for g in grades) for t in rubric.CUDA_TESTS]
    share = [100 * p / len(grades) for p in passed]
    bars = ax.barh(names[::-1], share[::-1], color=ink.BLUE)
    for bar, p in zip(bars, passed[::-1]):
        ax.text(bar.get_width() + 2, bar.get_y() + bar.get_height() / 2, f"{p} of {len(grades)}",
                va="center", fontsize=ink.SMALL)  # fmt: skip
    ax.set_xlim(0, 125)
    ax.set_xticks([0, 50, 100])
    ax.set_xlabel("% of the class passing", fontsize=ink.SMALL)
    fig.tight_layout()
    return _png(fig, "each test's pass rate: " + ", ".join(
        f"{n} {p} of {len(grades)}" for n, p in zip(names, passed)))


def _distribution(grades: list[Grade]) -> str:
    fig = Figure(figsize=(FIGURE_WIDTH, 2.0), dpi=ink.DPI)
    ax = _axes(fig)
    totals = [g.total for g in grades]
    points = range(rubric.MAX_POINTS + 1)
    counts = [totals.count(p) for p in points]
    ax.bar(points, counts, color=ink.ORANGE, width=0.8)
    possible = {rubric.possible(g.backend) for g in grades}
    for most in possible - {rubric.MAX_POINTS}:
        ax.axvline(most + 0.5, color=ink.GREY, lw=1)
        ax.text(most + 0.6, max(counts), f"{most}: all\non the CPU", fontsize=ink.SMALL, va="top")
    ax.set_xticks(list(points))
    ax.set_xlabel(f"points (of {rubric.MAX_POINTS})", fontsize=ink.SMALL)
    ax.set_ylabel("students", fontsize=ink.SMALL)
    ax.yaxis.get_major_locator().set_params(integer=True)
    fig.tight_layout()
    return _png(fig, "how many students scored each total: " + ", ".join(
        f"{p}: {c}" for p, c in zip(points, counts) if c))


def _earned(grade: Grade, test: str) -> int:
    return next((t.earned for t in grade.tests if t.id == test), 0)


# --- Pages ---------------------------------------------------------------------------

STYLE = """
* { box-sizing: border-box; }
body { margin: 0; font: 16px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif;
       color: #1a1a1a; background: #fff; }
main { max-width: 1040px; margin: 0 auto; padding: 16px; overflow-wrap: break-word; }
code { overflow-wrap: anywhere; }
h1 { font-size: 1.6em; margin: 0.4em 0; } h2 { font-size: 1.25em; margin-top: 1.6em; }
code { font: 0.9em ui-monospace, "DejaVu Sans Mono", monospace; background: #f3f3f3;
       padding: 0 0.2em; border-radius: 3px; }
.figures { display: flex; flex-wrap: wrap; gap: 16px; }
figure { margin: 0; } figcaption { font-size: 0.9em; color: #444; max-width: 340px; }
table { border-collapse: collapse; width: 100%; font-size: 0.95em; }
th, td { text-align: left; vertical-align: top; padding: 6px 8px; border-bottom: 1px solid #ddd; }
th { background: #f6f6f6; }
td.n, th.n { text-align: right; white-space: nowrap; }
.muted { color: #555; } .stale { color: #9a3b00; font-weight: 600; }
.tie { font-weight: 600; color: #0b5d8c; }
@media (max-width: 700px) {
  table, thead, tbody, tr, th, td { display: block; width: 100%; }
  thead { display: none; }
  tr { border: 1px solid #ddd; border-radius: 4px; margin-bottom: 10px; padding: 4px 0; }
  td { border: none; padding: 3px 10px; }
  td.n { text-align: left; }
  td::before { content: attr(data-label) ": "; font-weight: 600; }
}
"""


def _page(title: str, body: str) -> str:
    return (
        '<!doctype html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        f"<title>{html.escape(title)}</title>\n<style>{STYLE}</style>\n</head>\n"
        f"<body>\n<main>\n{body}\n</main>\n</body>\n</html>\n"
    )


def _table(heads: list[str], rows: list[list[str]], numeric: set[int] = frozenset()) -> str:
    """A table whose cells are HTML already; on a phone each row is a card, each cell
    named by its column."""
    cls = lambda i: ' class="n"' if i in numeric else ""  # noqa: E731
    head = "".join(f"<th{cls(i)}>{html.escape(h)}</th>" for i, h in enumerate(heads))
    body = "".join(
        "<tr>" + "".join(f'<td{cls(i)} data-label="{html.escape(heads[i])}">{cell}</td>'
                         for i, cell in enumerate(row)) + "</tr>\n"  # fmt: skip
        for row in rows
    )
    return f"<table>\n<thead><tr>{head}</tr></thead>\n<tbody>\n{body}</tbody>\n</table>"


def _version(grade: Grade, current: str) -> str:
    if not grade.grader:
        return '<span class="stale">not recorded (graded before versions were)</span>'
    if grade.grader != current:
        return f'<span class="stale">{grade.grader}: an older grader; grade again</span>'
    return f"{grade.grader} (this one)"


def _status_of(grade: Grade) -> str:
    """A grade's status, with a compile error that is the grader's refusal named so."""
    first = grade.tests[0].message if grade.tests else ""
    refused = "not allowed in a course kernel" in first or "refus" in first.lower()
    if grade.status == "compile error" and refused:  # run.device_only's HostCode
        return "refused"
    return grade.status


def _class_page(grades, step: Step, current: str, pages: dict, not_yet: list[str]) -> str:
    link = lambda s: f'<a href="{html.escape(pages[s])}">{html.escape(s)}</a>'  # noqa: E731
    title = f"{step.name}: the class at a glance"
    if not grades:
        return _page(title, f"<h1>{html.escape(title)}</h1>\n<p>No grades yet.</p>")
    graded = [g for g in grades if g.status == GRADED]
    backends = sorted({g.backend for g in grades})
    devices = sorted({g.device for g in grades if g.device})
    dates = sorted(g.graded_at for g in grades if g.graded_at)
    stale = [g for g in grades if g.grader != current]
    full = sum(g.total == rubric.possible(g.backend) for g in grades)
    parts = [
        f"<h1>{html.escape(title)}</h1>",
        f"<p>{len(grades)} students, {len(graded)} graded by every test, {full} with every "
        f"point possible where they were graded; on {html.escape(', '.join(backends))} "
        f"({html.escape('; '.join(devices)) or 'no device named'}). Grades made "
        f"{html.escape(dates[0] if dates else '?')} to {html.escape(dates[-1] if dates else '?')}"
        f" by the grader {current}"
        + (f"; <span class=\"stale\">{len(stale)} by another grader version, or one not "
           "recorded: <code>grade</code> makes them again</span>" if stale else "")  # fmt: skip
        + ". Each student's page, linked below, holds their own feedback alone, to hand back.</p>",
        "<h2>Points</h2>",
        '<div class="figures">'
        f"<figure>{_pass_rates(grades)}<figcaption>Each test's pass rate: students earning "
        "its points, of the whole class.</figcaption></figure>"
        f"<figure>{_distribution(grades)}<figcaption>How many students scored each total."
        "</figcaption></figure></div>",
        "<h2>What the class got wrong</h2>",
        _causes_section(graded, link),
        "<h2>Verified speeds</h2>",
        _leaderboard_section(grades, link),
        "<h2>Not graded</h2>",
        _not_graded_section(grades, not_yet, link),
        "<h2>Every student</h2>",
        _students_section(grades, current, link),
    ]
    return _page(title, "\n".join(parts))


def _causes_section(graded: list[Grade], link) -> str:
    causes = class_causes(graded)
    if not causes:
        return "<p>No graded kernel failed a correctness test.</p>"
    kernel = registry.step(graded[0].assignment).path.name
    rows = []
    for c in causes:
        student, record = c.example
        unknown = "no cause diagnosed: the run stopped, or was graded before causes were recorded"
        what = "; or ".join(KINDS.get(kind, unknown) for kind in c.kinds)
        where = ""
        if c.statement:
            where = (f"<br>The step's statement: <code>{html.escape(c.statement)}</code> "
                     f"(line {c.reference_line} of {html.escape(kernel)})")  # fmt: skip
        line = f", line {record['line']}" if record.get("line") else ""
        example = (f'<br><span class="muted">{html.escape(student)}{line}:</span> '
                   f"{_inline(record['message'])}")  # fmt: skip
        rows.append([
            f"{len(c.students)} of {len(graded)}",
            f"<strong>{html.escape(what)}</strong>{where}{example}",
            ", ".join(link(s) for s in sorted(c.students)),
        ])  # fmt: skip
    return (
        f"<p>Every cause the grader diagnosed in a failing test, counted over the {len(graded)} "
        "kernels graded by every test, most common first. Students share a cause when one "
        "kind of change repairs it on lines that stand for the same statement of the step's "
        "own kernel (or, where no repair confirmed a line, when its kind is the same there); "
        "without such a statement, when its words are the same but for their own code, lines "
        "and numbers. Each with one student's message as an example.</p>"
        + _table(["students", "cause, and an example", "who"], rows, {0})
    )


def _leaderboard_section(grades: list[Grade], link) -> str:
    boards = leaderboard(grades)
    if not any(g.backend == "gpu" for g in grades):
        return ("<p>No speeds: these grades were made on the CPU backend, which times "
                "nothing (the speed test needs a GPU).</p>")  # fmt: skip
    if not boards:
        return "<p>No kernel right on every test had a timing the grader accepted.</p>"
    out = [
        "<p>Only timings the grader verified: each launch's output checked, the rate no "
        "higher than the GPU can compute, of kernels right on every correctness test. "
        "The reference kernel was timed beside each, on the same GPU, in the same process. "
        "Kernels whose ranges (each timing's spread, twice its standard error) meet share a rank "
        "(marked =).</p>"
    ]
    for device, entries in sorted(boards.items()):
        rows = []
        for e in entries:
            rank = f'<span class="tie">{e.rank}=</span>' if e.tie else str(e.rank)
            share = f"{100 * e.gflops / e.reference:.0f}%" if e.reference else "not recorded"
            spread = f"±{100 * e.error:.1f}%" + (" (assumed: not recorded)" if e.assumed else "")
            reference = f"{e.reference:.0f}" if e.reference else "not recorded"
            rows.append([rank, link(e.student), f"{e.gflops:.0f}", share, reference, spread])
        out.append(f"<h3>{html.escape(device or 'a GPU not named')}</h3>")
        out.append(_table(["rank", "student", "GFLOP/s", "of the reference", "reference GFLOP/s",
                           "spread"], rows, {0, 2, 3, 4, 5}))  # fmt: skip
    return "\n".join(out)


def _not_graded_section(grades: list[Grade], not_yet: list[str], link) -> str:
    missing = [g for g in grades if g.status != GRADED]
    if not missing and not not_yet:
        return "<p>Every student's kernel was graded by every test.</p>"
    rows = []
    for g in sorted(missing, key=lambda g: (_status_of(g), g.student)):
        status = _status_of(g)
        first = (g.tests[0].message.splitlines() or [""])[0] if g.tests else ""
        rows.append([link(g.student), html.escape(status), _inline(first),
                     html.escape(TO_DO.get(status, "see their page"))])  # fmt: skip
    for student in not_yet:
        rows.append([html.escape(student), "not graded yet", "",
                     "a run stopped before it: run grade again"])  # fmt: skip
    return _table(["student", "why", "the grader's words", "what to do"], rows)


def _students_section(grades: list[Grade], current: str, link) -> str:
    rows = []
    for g in grades:
        points = [str(_earned(g, t.id)) for t in rubric.CUDA_TESTS]
        rows.append([link(g.student), f"{g.total} of {rubric.possible(g.backend)}", *points,
                     html.escape(g.status), html.escape(g.graded_at or "?"),
                     _version(g, current)])  # fmt: skip
    tests = [t.id.removeprefix("test_").replace("_", " ") for t in rubric.CUDA_TESTS]
    heads = ["student", "total", *tests, "status", "graded at", "grader"]
    return _table(heads, rows, {1, 2, 3, 4})


def _student_page(grade: Grade, step: Step, current: str) -> str:
    """One student's own feedback, to hand back: no one else's name, no hidden shape."""
    say = lambda text: _inline(for_the_student(text))  # noqa: E731
    title = f"{step.name}: feedback for {grade.student}"
    possible = rubric.possible(grade.backend)
    short = rubric.short_of_max(grade.backend)
    why = f" ({html.escape(short)})" if possible < rubric.MAX_POINTS else ""
    rows = []
    for test in rubric.CUDA_TESTS:
        score = next((t for t in grade.tests if t.id == test.id), None)
        if score is None:
            continue
        what = "hidden test" if test.hidden else test.what
        rows.append([f"<strong>{html.escape(test.id)}</strong><br><span class=\"muted\">"
                     f"{html.escape(what)}</span>", f"{score.earned} of {score.points}",
                     say(score.message) or "passed"])  # fmt: skip
    parts = [
        f"<h1>{html.escape(title)}</h1>",
        f"<p><strong>{grade.total} of {rubric.MAX_POINTS} points</strong>{why}; status: "
        f"{html.escape(grade.status)}. Graded "
        f"{html.escape(grade.graded_at or 'at a time not recorded')} "
        f"on {html.escape(grade.backend.upper())}"
        + (f" ({html.escape(grade.device)})" if grade.device not in ("", "CPU") else "")
        + f" by the grader {_version(grade, current)}.</p>",
        "<h2>Tests</h2>",
        _table(["test", "points", "what the grader saw"], rows, {1}),
    ]
    if verified(grade):
        reference = statistics.median(grade.reference_gflops) if grade.reference_gflops else None
        gflops = statistics.median(grade.gflops)
        share = (f", {100 * gflops / reference:.0f}% of the reference kernel's {reference:.0f} "
                 "timed beside it" if reference else "")  # fmt: skip
        parts += ["<h2>Speed</h2>", f"<p>{gflops:.0f} GFLOP/s on "
                  f"{html.escape(grade.device)}{share} (verified launches).</p>"]  # fmt: skip
    return _page(title, "\n".join(parts))
