"""A class of planted submissions for step 05, in every layout the grader accepts.

Each student's kernel is the reference kernel with at most one planted
substitution (see planted.py), so what each must score is known without
running anything: EXPECTED gives the points per test on a GPU; on the CPU the
speed test scores zero for everyone.

    python tests/planted_class.py DIR [--students N]   # write a class of N (for the GPU runs)
    python tests/planted_class.py DIR --mistakes [--students N]   # a class for the report

The last is a class as an instructor meets one, for the class report
(autograder/course/report.py): of 40, most with one of ten single-point mistakes
made by the rules the mutants are made by (autograder/judge/edits.py), several
students each, some correct, one slow, one that does not compile and one whose
file cannot be read; every kernel's source and line numbers its own.
"""

from __future__ import annotations

import argparse
import itertools
import shutil
from pathlib import Path

from autograder import KernelSpec
from autograder.judge import edits
from autograder.ladder import registry
from autograder.run.kernel import substituted

STEP = registry.step("05")
ROOT = Path(__file__).resolve().parent.parent
SOLUTION = ROOT / "solutions" / STEP.name / f"{STEP.name}.ipynb"
RELEASE = ROOT / "exercises" / STEP.name / f"{STEP.name}.ipynb"

STORE = "if (row < M && col < N) {"
K_LOOP = "for (int k0 = 0; k0 < K; k0 += BK) {"
FMA_LOOPS = "#pragma unroll\n      for (int m = 0; m < TM; ++m) {\n#pragma unroll\n        for"
# student kind -> (substitution or None, points per test on a GPU: whole, odd, fast)
KINDS = {
    "correct": (None, (3, 4, 3)),
    # Reads A past the end of each row when K is not a multiple of BK: right on
    # whole tiles, wrong on odd shapes.
    "wrong_bound": (
        (
            "const bool inside = blockRow + r < M && k0 + c < K;",
            "const bool inside = blockRow + r < M;",
        ),
        (3, 0, 3),
    ),
    "writes_outside_c": ((STORE, "{"), (3, 0, 3)),
    "hangs": ((K_LOOP, K_LOOP.replace("k0 += BK", "k0 += BK * 0")), (0, 0, 0)),
    "compile_error": (("float regN[TN];", "float regN[TN]"), (0, 0, 0)),
    # Correct, but `acc` indexed by a loop that is not unrolled lives in local memory.
    "slow": (
        (FMA_LOOPS, FMA_LOOPS.replace("#pragma unroll\n      for", "#pragma unroll 1\n      for")),
        (3, 4, 0),
    ),
}


K_STEP = "#pragma unroll\n    for (int k = 0; k < BK; ++k) {"
# Correct kernels of middling speed, for measuring how stable a speed verdict is
# (their points depend on the GPU, so the planted class leaves them out).
TIMING_VARIANTS = {
    "k_loop_not_unrolled": (K_STEP, K_STEP.replace("unroll", "unroll 1")),
    "k_loop_unrolled_twice": (K_STEP, K_STEP.replace("unroll", "unroll 2")),
}


def kernel_source(kind: str) -> str:
    substitution = KINDS[kind][0] if kind in KINDS else TIMING_VARIANTS[kind]
    return substituted(KernelSpec.from_step(STEP), [substitution] if substitution else []).source


def _notebook_with(kernel: str, path: Path) -> None:
    """The solution notebook with its kernel cell replaced, as a learner's would be."""
    import nbformat  # only here: GPU machines may lack it, and .cu classes do not need it

    nb = nbformat.read(SOLUTION, as_version=4)
    cell = next(c for c in nb.cells if c.source.startswith("%%writefile"))
    cell.source = f"%%writefile {STEP.path.name}\n{kernel}"
    path.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, path)


def write_class(root: Path) -> dict[str, tuple[int, int, int]]:
    """The planted class, one student per kind and layout; returns the expected
    points per test on a GPU, by student."""
    root = Path(root)
    nbgrader = root / "submitted"
    expected = {}

    def add(student, kind, points=None):
        expected[student] = points or KINDS[kind][1]

    # nbgrader's layout: the solution notebook as submitted, and the untouched release.
    folder = nbgrader / "alice" / STEP.name
    folder.mkdir(parents=True)
    shutil.copy(SOLUTION, folder / SOLUTION.name)
    add("alice", "correct")
    folder = nbgrader / "frank" / STEP.name
    folder.mkdir(parents=True)
    shutil.copy(RELEASE, folder / RELEASE.name)
    add("frank", "stub", (0, 0, 0))
    _notebook_with(kernel_source("wrong_bound"), nbgrader / "bob" / STEP.name / SOLUTION.name)
    add("bob", "wrong_bound")
    # Plain .cu files and folders.
    for student, kind in (
        ("carol", "writes_outside_c"),
        ("dave", "hangs"),
        ("erin", "compile_error"),
        ("ivan", "correct"),
        ("judy", "slow"),
    ):
        (nbgrader / f"{student}.cu").write_text(kernel_source(kind))
        add(student, kind)
    (nbgrader / "grace").mkdir()
    _notebook_with(kernel_source("correct"), nbgrader / "grace" / "my_work.ipynb")
    add("grace", "correct")
    (nbgrader / "heidi").mkdir()  # handed in nothing
    add("heidi", "nothing", (0, 0, 0))
    return expected


def write_large_class(root: Path, students: int, timing_variants: bool = False) -> None:
    """`students` .cu submissions cycling through the kinds, for throughput runs
    (mostly correct, as a real class is: a hang costs its time limit), or through
    the correct kernels of several speeds, for measuring the speed verdict's stability.
    Every source differs (a comment naming its student), as a class's do: a source seen
    before is not compiled again (CuPy's cache), which would flatter a throughput."""
    mix = ["correct"] * 6 + ["wrong_bound", "slow", "compile_error", "writes_outside_c"]
    if timing_variants:
        mix = ["correct", "slow", *TIMING_VARIANTS]
    root.mkdir(parents=True, exist_ok=True)
    for i, kind in zip(range(students), itertools.cycle(mix)):
        name = f"s{i:03d}_{kind}"
        (root / f"{name}.cu").write_text(f"// {name}\n" + kernel_source(kind))


# The class report's mistakes: (line of the step's kernel, rule, the expression before,
# after), and how many of the 40 students make each. Several make the same one, each in
# a kernel of their own, as a class does.
MISTAKES = (
    ((40, "drop condition", "blockRow + r < M && k0 + c < K", "blockRow + r < M"), 7),
    ((47, "drop condition", "k0 + r < K && blockCol + c < N", "k0 + r < K"), 5),
    ((41, "drop term", "(blockRow + r) * K + k0", "(blockRow + r) * K"), 4),
    ((40, "relational", "k0 + c < K", "k0 + c <= K"), 3),
    ((58, "swap indices", "As[threadRow * TM + m][k]", "As[k][threadRow * TM + m]"), 2),
    ((58, "drop term", "threadRow * TM + m", "threadRow * TM"), 2),
    ((71, "drop barrier", "__syncthreads();", ";"), 2),
    ((77, "drop term", "blockRow + threadRow * TM", "threadRow * TM"), 2),
    ((48, "dimension", "N", "K"), 1),
    ((55, "relational", "k < BK", "k <= BK"), 1),
)
NAMES = (
    "amara", "bodhi", "celeste", "dario", "esme", "farid", "greta", "hugo", "ines", "jonas",
    "kiri", "lorcan", "maeve", "nikhil", "oona", "pavel", "quinn", "rosalind", "soren",
    "tamsin", "ulrich", "vesna", "wren", "xiomara", "yusuf", "zelda", "anouk", "bertil",
    "cosima", "dmitri", "elodie", "fennel", "gideon", "halima", "idris", "juno", "kasimir",
    "leona", "marlow", "nadia",
)  # fmt: skip


def mistaken(line: int, rule: str, before: str, after: str) -> str:
    """The step's kernel with one mistake: the single-point edit of autograder.judge.edits
    at `line` by `rule` that turns `before` into `after`."""
    from autograder.run.syntax import Source

    source = KernelSpec.from_step(STEP).source
    found = [e for e in edits.mutants(source)
             if (e.line, e.operator, e.before.strip()) == (line, rule, before)
             and (e.text.strip() == after or e.operator == "drop barrier")]  # fmt: skip
    if not found:
        raise LookupError(f"no {rule} of {before!r} at line {line} of {STEP.path.name}")
    return found[0].apply(Source.parse(source))


def write_mistakes_class(root: Path, students: int = 40) -> dict[str, str]:
    """A class of `students` .cu files (40 at most) for the class report: the MISTAKES,
    the rest correct but one slow, one compile error and one unreadable file; each
    kernel with its own comment lines on top (so its lines are its own). Returns each
    student's kind."""
    kinds = [f"{rule} at {line}: {before} -> {after}"
             for (line, rule, before, after), n in MISTAKES for _ in range(n)]  # fmt: skip
    extra = ["slow", "compile_error", "unreadable"]
    kinds = kinds[: max(0, students - len(extra) - 1)]
    kinds = kinds + extra + ["correct"] * (students - len(kinds) - len(extra))
    sources = {m: mistaken(*m) for m, _ in MISTAKES}
    root.mkdir(parents=True, exist_ok=True)
    planted = {}
    # Spread the kinds over the names, so that a name says nothing of its kind.
    for i, (name, kind) in enumerate(zip(NAMES, itertools.islice(_shuffled(kinds), students))):
        planted[name] = kind
        if kind == "unreadable":
            (root / f"{name}.ipynb").write_text("{ this is not a notebook")
            continue
        mistake = next((m for m, _ in MISTAKES if kind.startswith(f"{m[1]} at {m[0]}:")), None)
        kernel = sources[mistake] if mistake else kernel_source(kind)
        header = f"// draft {i}\n" + "".join(f"// note {j}\n" for j in range(i % 4))
        (root / f"{name}.cu").write_text(header + kernel)
    return planted


def _shuffled(items: list) -> list:
    """items in a fixed order that mixes them (every 7th, around: 7 and 40 share no factor)."""
    n = len(items)
    step = next(s for s in (7, 11, 13, 17) if n % s)
    return [items[(i * step) % n] for i in range(n)]


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("dir", type=Path)
    parser.add_argument("--students", type=int, help="a large class of N .cu files")
    parser.add_argument(
        "--timing-variants", action="store_true", help="correct kernels of several speeds"
    )
    parser.add_argument(
        "--mistakes", action="store_true", help="a class of single-point mistakes, for the report"
    )
    args = parser.parse_args()
    if args.mistakes:
        for student, kind in write_mistakes_class(args.dir, args.students or 40).items():
            print(f"{student}: {kind}")
    elif args.students:
        write_large_class(args.dir, args.students, args.timing_variants)
    else:
        write_class(args.dir)
    print(f"wrote {args.dir}")
