"""The checker's feedback measured on mutants: every single-point change of a kernel.

    python -m autograder mutants 03 05           # the learner's part of steps 03 and 05
    python -m autograder mutants --others DIR     # kernels written by others (DIR/others.json)

A grader's messages are only as good as the mistakes they were tried on, so each
kernel is changed in every way the rules of autograder.judge.edits allow, one
change at a time, within the part a learner writes (the step's exercise region;
for a kernel by others, every function body), and each mutant is checked as a
learner's kernel is (autograder.judge.check). For each it records whether it
compiles, whether the check fails it (killed), and for a killed one: whether the
first cause names the changed line (localized), whether it names another line as
the mistake's place (a wrong lead), and how many causes the report gives (one bug,
one cause). A mutant that survives is equivalent when it compiles to the same
machine code as the kernel (NVRTC, compared as PTX); any other survivor is a gap
in the suite, listed.

Results go to a CSV, one row per mutant (book/data/mutants_<backend>.csv by
default), and a table per kernel is printed.
"""

from __future__ import annotations

import csv
import json
import multiprocessing
import os
import re
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from dataclasses import asdict, dataclass, fields, replace
from datetime import date
from pathlib import Path

from ..judge import aligned, check, edits
from ..judge.causes import by_cause
from ..judge.diagnosis import REPAIRED
from ..ladder import registry
from ..run import compiler, cpu
from ..run.compiler import CompileError
from ..run.kernel import KernelSpec, from_file, template_arguments

DATA = Path(__file__).resolve().parents[2] / "book" / "data"
# The rules a mutant is made by: every one of edits.mutants's but "variable" (any local
# exchanged for any other: most are no learner's mistake, and they would swamp the rest).
RULES = frozenset(edits.OPERATORS) - {"variable", "add term", "add factor", "add barrier",
                                      "add initial value", "add condition", *aligned.OPERATORS}
_ANCHOR = re.compile(r"^\s*// \[docs:([a-z0-9-]+)\]\s*$")


@dataclass(frozen=True)
class Kernel:
    """A kernel to mutate: its spec (with the shapes it is right on: a kernel by others
    may assume multiples of its tile), the lines a learner writes, and where it is from."""

    name: str
    spec: KernelSpec
    lines: tuple[int, int] | None
    source: str = ""  # where a kernel by others comes from


@dataclass
class Row:
    kernel: str
    number: int
    line: int
    rule: str
    before: str
    after: str
    outcome: str = ""  # "compile error", "killed", "equivalent" or "survived"
    failed: int = 0  # cases failed
    groups: int = 0  # causes the report gives
    localized: bool = False
    # The line the first cause names as the mistake's, if any; or the two lines it says
    # one change on either of makes every case pass ("34 or 31").
    named: str = ""
    wrong_lead: bool = False
    rank: int = 0  # the place of the first repair that made every case pass; 0: none
    cause: str = ""  # the first cause, as the learner reads it; why a survivor is equivalent
    seconds: float = 0.0
    where: str = ""  # the device the check ran on, with versions, and the date


def step_kernels(steps: list[str], regions: Callable[[str], list[str]]) -> list[Kernel]:
    """The course's steps, each with the part its exercise asks a learner to write:
    regions(step's name) names its anchors (the course's assignments know them)."""
    found = []
    for name in steps:
        step = registry.step(name)
        spec = KernelSpec.from_step(step)
        regions_of_step = regions(step.name)
        lines = spec.source.splitlines()
        spans = []
        for region in regions_of_step:
            first = next(i for i, t in enumerate(lines, 1) if _anchor(t) == region)
            last = next(i for i, t in enumerate(lines, 1) if _anchor(t) == f"{region}-end")
            spans.append((first, last))
        span = (min(a for a, _ in spans), max(b for _, b in spans))
        found.append(Kernel(step.name, spec, span))
    return found


def _anchor(line: str) -> str:
    m = _ANCHOR.match(line)
    return m.group(1) if m else ""


def other_kernels(folder: Path) -> list[Kernel]:
    """Kernels written by others, as others.json in `folder` lists them: each with the
    geometry it is launched with and the shapes it is right on."""
    found = []
    for entry in json.loads((folder / "others.json").read_text()):
        spec = from_file(
            folder / entry["file"], kernel=entry["kernel"], block=tuple(entry["block"]),
            tile=tuple(entry["tile"]), rows_on=entry.get("rows_on", "y"),
        )  # fmt: skip
        if entry["shapes"] != "all":
            spec = replace(spec, shapes=tuple(tuple(s) for s in entry["shapes"]))
        found.append(Kernel(Path(entry["file"]).stem, spec, None, entry.get("source", "")))
    return found


def mutants_of(kernel: Kernel) -> list[tuple[edits.Edit, KernelSpec]]:
    """Every mutant of the kernel's region, by RULES, as (edit, spec)."""
    from ..run.syntax import Source

    source = Source.parse(kernel.spec.source)
    found = []
    for e in edits.mutants(kernel.spec.source, kernel.lines):
        if e.operator in RULES:
            text = e.apply(source)
            every = kernel.spec.every_term and replace(kernel.spec.every_term, source=text)
            found.append((e, replace(kernel.spec, source=text, every_term=every)))
    return found


def judge_one(kernel: Kernel, number: int, edit: edits.Edit, spec: KernelSpec, backend: str,
              seed: int) -> Row:  # fmt: skip
    """Check one mutant and say what a learner would read."""
    row = Row(kernel.name, number, edit.line, edit.operator, _shown(edit.before), _shown(edit.text))
    began = time.perf_counter()
    try:
        report = check(spec, seed=seed, backend=backend)
    except CompileError:
        row.outcome = "compile error"
        return row
    finally:
        row.seconds = round(time.perf_counter() - began, 2)
    row.where = f"{report.device.split(';')[0]}, {date.today().isoformat()}"
    if report.ok:
        why = _equivalent(kernel.spec, spec, edit)
        row.outcome, row.cause = ("equivalent", why) if why else ("survived", "")
        return row
    row.outcome = "killed"
    causes = by_cause(report.cases)
    row.failed = sum(1 for c in report.cases if not c.ok)
    row.groups = len(causes) + bool(report.error and not causes)
    first = causes[0] if causes else None
    diagnosis = first.diagnosis if first else None
    said = str(first) if first else report.error
    row.cause = said[:400]
    named = [diagnosis.line] if diagnosis is not None and diagnosis.line else []
    if diagnosis is not None and not named and len(diagnosis.among) <= BETWEEN:
        named = list(diagnosis.among)
    if diagnosis is None:  # the run stopped (a crash, a hang): the line a repair confirmed
        repaired = re.search(rf"at {re.escape(spec.filename)}:(\d+)[^;]*\({REPAIRED}", said)
        named = [int(repaired.group(1))] if repaired else []
    row.named = " or ".join(map(str, named))
    row.localized = any(n in _lines(edit) for n in named)
    # Lines each of which a repair confirmed are no lead the evidence contradicts.
    row.wrong_lead = len(named) == 1 and not row.localized
    found = re.search(r"repair (\d+) of", diagnosis.evidence if diagnosis is not None else "")
    row.rank = int(found.group(1)) if found else 0
    return row


# A first cause that lists this many lines, one change on any of which makes every case
# pass, still points the learner at the mistake; more is a search, not a place.
BETWEEN = 2


def _lines(edit: edits.Edit) -> range:
    """The lines holding what a mutant changed: a sum written over four lines whose last
    + became * is changed on each of them, and a repair of that operator is named on the
    line its own operands start on."""
    return range(edit.line, edit.line + edit.before.count("\n") + 1)


def judge_survivors(rows: list[Row], kernels: list[Kernel]) -> list[Row]:
    """The rows, each survivor judged again (after a person has read it and added a row
    to JUDGED): its checks passed, so only whether it is shown equivalent can change."""
    # Each kernel's mutants made once, found by what a row keeps of them.
    found = {
        (k.name, e.line, e.operator, _shown(e.before), _shown(e.text)): (k, e, spec)
        for k in kernels if any(r.kernel == k.name and r.outcome == "survived" for r in rows)
        for e, spec in mutants_of(k)
    }  # fmt: skip
    for row in rows:
        mutant = found.get((row.kernel, row.line, row.rule, row.before, row.after))
        if row.outcome == "survived" and mutant:
            kernel, edit, spec = mutant
            if why := _equivalent(kernel.spec, spec, edit):
                row.outcome, row.cause = "equivalent", why
    return rows


def _shown(text: str) -> str:
    """A mutant's text as its row keeps it: on one line, at most 80 characters."""
    return " ".join(text.split())[:80]


def _equivalent(original: KernelSpec, mutant: KernelSpec, edit: edits.Edit) -> str:
    """Why a mutant that passed computes what the kernel computes, or '' when it is not
    shown to: it exchanged two values that are equal where the kernel runs (a launch of
    32 x 32 threads, a template's TM and TN both 8), or it compiles to the same PTX."""
    old, new = edit.swapped
    if edit.operator == "builtin" and {old, new} == {"blockDim.x", "blockDim.y"}:
        bx, by = original.geometry.block
        if bx == by:
            return f"blockDim.x and blockDim.y are both {bx} in this launch"
    if edit.operator == "parameter":
        values = template_arguments(original.source, original.name_expression)
        if old in values and values.get(old) == values.get(new):
            return f"{old} and {new} are both {values[old]} at this kernel's parameters"
    if _same_code(original, mutant):
        return "compiles to the same PTX as the kernel"
    mutated = " ".join(mutant.source.splitlines()[edit.line - 1].split())
    return _judged().get((original.filename, edit.line, mutated), "")


# Survivors that the rules above cannot show equivalent, each read by a person, with why
# it computes what the kernel computes (a loop that runs once, loads only reordered).
JUDGED = DATA / "mutants_judged.csv"


def _judged() -> dict[tuple[str, int, str], str]:
    """(file, line, the mutant's line as it reads) -> why; a kernel changed since makes
    its rows match nothing, so each is judged again."""
    if not JUDGED.exists():
        return {}
    with open(JUDGED, newline="") as f:
        return {(r["file"], int(r["line"]), r["mutated"]): f"judged: {r['why']}"
                for r in csv.DictReader(f)}  # fmt: skip


def _same_code(original: KernelSpec, mutant: KernelSpec) -> bool:
    """Whether the mutant compiles to the kernel's own PTX: an equivalent mutant, which
    no check can kill."""
    def ptx(spec: KernelSpec) -> str:
        compiled = compiler.compile_for_arch(spec.source, [spec.name_expression], "sm_80",
                                             spec.filename)  # fmt: skip
        return re.sub(r"^\s*\.loc\b.*$", "", compiled.ptx, flags=re.MULTILINE)

    try:
        return ptx(original) == ptx(mutant)
    except CompileError:
        return False


def run(kernels: list[Kernel], backend: str, jobs: int, sample: int = 0, seed: int = 1) -> list[Row]:
    """Every mutant of every kernel (or `sample` of each, spread evenly), checked on
    `jobs` processes side by side."""
    work = []
    for kernel in kernels:
        mutants = mutants_of(kernel)
        if sample and len(mutants) > sample:
            mutants = [mutants[i * len(mutants) // sample] for i in range(sample)]
        work += [(kernel, n, e, s) for n, (e, s) in enumerate(mutants)]
    # Never fork: the caller may hold threads (the localizer's builds), whose locks a
    # forked child would find taken for ever.
    context = multiprocessing.get_context("forkserver" if os.name == "posix" else "spawn")
    with tempfile.TemporaryDirectory() as cache, ProcessPoolExecutor(
        jobs, mp_context=context, initializer=_cold, initargs=(cache,)
    ) as pool:
        futures = [pool.submit(judge_one, k, n, e, s, backend, seed) for k, n, e, s in work]
        return [f.result() for f in futures]


def _cold(cache: str) -> None:
    """Each mutant is built afresh, as a learner's new kernel is: builds cached by an
    earlier run left the compiler out of the times (a run after one that built the same
    mutants read a median 1.5 times faster)."""
    cpu.CACHE = Path(cache)


def write(rows: list[Row], path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="") as out:
        writer = csv.DictWriter(out, [f.name for f in fields(Row)])
        writer.writeheader()
        writer.writerows(asdict(r) for r in rows)


def read(path: Path) -> list[Row]:
    with path.open() as f:
        return [
            Row(**{k: _typed(Row, k, v) for k, v in row.items()}) for row in csv.DictReader(f)
        ]


def _typed(cls, name: str, value: str):
    kind = {f.name: f.type for f in fields(cls)}[name]
    if kind == "int":
        return int(value or 0)
    if kind == "float":
        return float(value or 0)
    if kind == "bool":
        return value == "True"
    return value


@dataclass(frozen=True)
class Summary:
    kernel: str
    mutants: int
    compile_errors: int
    killed: int
    equivalent: int
    survived: int
    localized: int
    between: int  # of those, named with another line (BETWEEN)
    wrong_leads: int
    one_group: int
    seconds: float  # median check time of a killed mutant

    @property
    def kill_rate(self) -> float:
        alive = self.mutants - self.compile_errors - self.equivalent
        return self.killed / alive if alive else 1.0

    def share(self, count: int) -> float:
        return count / self.killed if self.killed else 1.0


def summarize(rows: list[Row], kernel: str = "all") -> Summary:
    chosen = [r for r in rows if kernel in ("all", r.kernel)]
    outcomes = Counter(r.outcome for r in chosen)
    killed = [r for r in chosen if r.outcome == "killed"]
    times = sorted(r.seconds for r in killed)
    return Summary(
        kernel, len(chosen), outcomes["compile error"], outcomes["killed"], outcomes["equivalent"],
        outcomes["survived"], sum(r.localized for r in killed),
        sum(r.localized and " or " in r.named for r in killed), sum(r.wrong_lead for r in killed),
        sum(r.groups == 1 for r in killed), times[len(times) // 2] if times else 0.0,
    )  # fmt: skip


HEADER = (
    "| kernel | mutants | compile errors | killed | equivalent | survived | killed of the "
    "rest | localized | of them, with one other line | wrong leads | one cause | "
    "median check (s) |"
)


def table(rows: list[Row]) -> str:
    """The summary, one row per kernel and one for all, as Markdown."""
    kernels = list(dict.fromkeys(r.kernel for r in rows))
    lines = [HEADER, "|" + "---|" * 12]
    for name in [*kernels, "all"]:
        s = summarize(rows, name)
        lines.append(
            f"| {name} | {s.mutants} | {s.compile_errors} | {s.killed} | {s.equivalent} | "
            f"{s.survived} | {s.kill_rate:.1%} | {s.share(s.localized):.1%} | "
            f"{s.share(s.between):.1%} | "
            f"{s.share(s.wrong_leads):.1%} | {s.share(s.one_group):.1%} | {s.seconds:.1f} |"
        )
    return "\n".join(lines)


def default_path(backend: str, others: bool) -> Path:
    """book/data/mutants_cpu.csv (mutants_others_cpu.csv for kernels by others); on a
    GPU, named after it (mutants_h100_80gb_hbm3.csv)."""
    from ..run import gpu

    where = backend if backend == "cpu" else gpu.slug(gpu.device_info().name)
    return DATA / f"mutants_{'others_' * others}{where}.csv"


def default_jobs() -> int:
    return max(1, (os.cpu_count() or 2) // 2)
