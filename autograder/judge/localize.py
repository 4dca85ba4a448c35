"""Find where a failing kernel goes wrong by evidence, not by a catalogue of patterns.

A kernel one mistake away from a right one has a repair one change away. The
learner's kernel is built once more for the CPU, in the diagnostic build
(cpu_runtime.h's CPU_DIAGNOSE), holding every repair the rules of
autograder.judge.edits give (autograder.judge.mutant_schema: each is switched on at
run time by its site and choice, so one compile serves them all). Then, in a confined child:

1. the kernel as written runs the failing cases once more, with the diagnostic
   build's checks on: a race, or a thread's own float read before it had a value,
   stops it there and is named (the evidence);
2. each repair runs the smallest failing case, and one that gets it right runs
   every other case too. A repair after which every case passes confirms its
   line: one change there makes the kernel right. The message then names that
   line and what the change touched, never the change itself.

Where no repair, or repairs on several lines, make every case pass, no line is
named: the message says what the evidence shows and no more.
"""

from __future__ import annotations

import ctypes
import difflib
import os
import re
import time
from concurrent import futures
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, replace
from functools import lru_cache
from pathlib import Path

import numpy as np

from ..isolate import isolation
from ..isolate.child import Child
from ..ladder import registry
from ..run import contract, cpu, syntax
from ..run.compiler import CompileError
from ..run.faults import KernelFault
from ..run.kernel import KernelSpec
from ..run.syntax import Source
from . import aligned, edits, suspects, trials, twins
from .advice import explain_fault
from .checker import EXACT_SIZE, RACED, UNSET_LOCAL, UNWRITTEN_NAN, Shape, beta_of
from .mutant_schema import flat, schema
from .scopes import Kernel
from .trials import Trial

# Seconds of repairs tried, after the build: a learner waits for them, so the most
# likely are tried first. Seconds of each search's CPU, not of the clock: a machine
# busy with other work finds what an idle one finds, later (the same kernel gets the
# same message). SGEMM_LOCALIZE_S sets another.
SEARCH_S = 4.0
WALL = 4  # times SEARCH_S the clock may take, however busy the machine
CANDIDATE_S = 2.0  # a repair's first look, before it is taken for an endless loop
STARTUP_S = 10.0  # a child's start (its library loaded, its cases drawn) and first repair
PREPARE_S = 600.0  # the two libraries' builds (the repairs' library's up to five times)
EVIDENCE_S = 30.0  # the kernel as written, on the failing cases, in the diagnostic build
SEARCHES = 2  # children trying repairs side by side
CAP = 1500  # repairs built into the library at most (the compiler's time grows with them)
AFTER_FOUND = 300  # repairs tried after the first that works, for one on another line


@dataclass(frozen=True)
class Repair:
    """A change that made every case right: where, by which rule, and the learner's
    own text it changed; for a rule that exchanges a token, which token for which
    (a message may name the dimension a bound should compare against, never the fix)."""

    line: int
    operator: str
    before: str
    swapped: tuple[str, str] = ("", "")
    context: str = ""  # the whole expression `before` is part of
    rank: int = 0  # its place in the order the repairs were tried
    statement: tuple[int, int] = (0, 0)  # the first and last line of the statement it changes


@dataclass(frozen=True)
class Finding:
    evidence: str  # what the diagnostic build stopped on in the kernel as written, or ''
    wrong: bool  # the kernel as written was wrong on the CPU too
    repairs: tuple[Repair, ...]
    tried: int  # repairs run
    of: int  # repairs there were
    seconds: float

    @property
    def complete(self) -> bool:
        return self.tried == self.of

    @property
    def lines(self) -> tuple[int, ...]:
        return tuple(sorted({r.line for r in self.repairs}))


# ---- the builds ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Hints:
    """What the failing cases point at, before the diagnostic build runs: the lines
    their messages name (where a bad access was made), whether only cases with
    beta != 0 fail, whether C changed between runs or holds NaN from shared memory
    nobody wrote (a missing barrier), or NaN from a float never given a value, whether
    only cases where two dimensions differ fail (one used for the other)."""

    lines: frozenset[int] = frozenset()
    beta: bool = False
    barriers: bool = False
    unset: bool = False
    unwritten: bool = False  # C holds NaN from shared memory nobody wrote
    dimensions: bool = False  # only cases where two of M, N and K differ fail

    @classmethod
    def of(cls, cases: list, spec: KernelSpec) -> Hints:
        failing = [c for c in cases if not c.ok]
        sizes = lambda c: (c.shape.M, c.shape.N, c.shape.K)  # noqa: E731
        # A pair of dimensions that differ in every failing case, and are equal (and more
        # than 1) in a case that passes: one may stand where the other belongs.
        pairs = [(i, j) for i, j in ((0, 1), (0, 2), (1, 2))
                 if all(sizes(c)[i] != sizes(c)[j] for c in failing)
                 and any(c.ok and sizes(c)[i] == sizes(c)[j] > 1 for c in cases)]  # fmt: skip
        named = {
            int(n) for c in failing for n in re.findall(rf"{re.escape(spec.filename)}:(\d+)", c.message)
        }  # fmt: skip
        said = " ".join(c.message for c in failing)
        return cls(
            frozenset(named | _own_lines(spec)),
            beta=bool(failing) and all(c.beta for c in failing) and any(c.ok for c in cases if not c.beta),
            barriers=RACED in said or UNWRITTEN_NAN in said,
            unset=UNSET_LOCAL in said,
            unwritten=UNWRITTEN_NAN in said,
            dimensions=bool(failing and pairs),
        )


def _own_lines(spec: KernelSpec) -> set[int]:
    """The lines of a course step's kernel that are not the step's own (what a learner
    wrote, most likely where a mistake is), where the rest reads as the step does."""
    step = _course_step(spec)
    if step is None:
        return set()
    theirs = [" ".join(t.split()) for t in step.source().splitlines()]
    ours = [" ".join(t.split()) for t in spec.source.splitlines()]
    matcher = difflib.SequenceMatcher(None, theirs, ours, autojunk=False)
    own = {j + 1 for tag, _, _, j1, j2 in matcher.get_opcodes() if tag != "equal" for j in range(j1, j2)}
    return own if len(own) <= len(ours) // 2 else set()


def _from_the_step(spec: KernelSpec, text: str) -> list[edits.Edit]:
    """Repairs from the step's own kernel, where spec is a course step's written otherwise
    (autograder.judge.aligned)."""
    step = _course_step(spec)
    return aligned.repairs(text, _step_text(step.id)) if step else []


def _course_step(spec: KernelSpec):
    """The course step whose kernel spec is (a learner's version of), or None."""
    step = registry.step_of_kernel(spec.filename, spec.name_expression)
    return step if step is not None and step.is_cuda else None


@lru_cache(maxsize=None)
def _step_text(step_id: str) -> str:
    return cpu.preprocessed(KernelSpec.from_step(registry.step(step_id)))


@dataclass(frozen=True)
class Built:
    """The two libraries of a kernel, and the repairs the second holds (the CAP nearest
    what the hints point at)."""

    diagnose: Path
    variants: Path
    candidates: list  # (site, choice, Edit)
    text: str  # the preprocessed source the repairs were made from
    hints: Hints


def prepare(spec: KernelSpec, hints: Hints) -> Future:
    """build(spec, hints) started in the background (the compiler runs in processes of
    its own): the caller goes on checking cases meanwhile. Its result is None where the
    CPU backend cannot build the kernel here."""
    # An executor of its own, whose thread ends with the build: one shared by the whole
    # process would, in a child forked from it, take builds that no thread ever runs.
    pool = ThreadPoolExecutor(1)
    try:
        return pool.submit(_built_or_none, spec, hints)
    finally:
        pool.shutdown(wait=False)


def _built_or_none(spec: KernelSpec, hints: Hints) -> Built | None:
    try:
        return build(spec, hints)
    except (cpu.UnsupportedOnCpu, cpu.NoCompiler, CompileError):
        return None


def build(spec: KernelSpec, hints: Hints) -> Built:
    """Build the diagnostic library and the one holding the repairs, side by side (each
    is one compiler process). A repair the compiler refuses (the rules read types from
    declarations only) is left out with the others on its line (twins', alone, first),
    and that library built again; after four tries, without any twin. Raises UnsupportedOnCpu, NoCompiler or CompileError."""
    text = cpu.preprocessed(spec)
    source = Source.parse(text)
    every = edits.repairs(text) + twins.repairs(Kernel.parse(text)) + _from_the_step(spec, text)
    repairs = [e for _, _, e in _order(text, every, hints, "", spec)][:CAP]
    with ThreadPoolExecutor(1) as pool:
        # The kernel as written, each loop's turns counted (a schema of no repairs).
        diagnose = pool.submit(cpu.build, spec, "diagnose", schema(source, [])[0])
        for attempt in range(6):
            if attempt == 4:  # the errors named no twin's line: without any twin, as before
                repairs = [r for r in repairs if r.operator != twins.OPERATOR]
            schematized, candidates = schema(source, repairs)
            try:
                variants = cpu.build(spec, "variants", source=schematized)
                return Built(diagnose.result(), variants, candidates, text, hints)
            except cpu.UnsupportedOnCpu as e:
                lines = re.findall(rf"{re.escape(spec.filename)}:(\d+):\d+: error", e.log)
                bad = {int(n) for n in lines}
                if not bad:
                    raise
                # A repair is there when any line it replaces is (a twin's value may begin
                # a line above the error). A twin's names are read from the tree, not
                # checked as the compiler does: where one is there, it goes first, and
                # the rules' repairs stay.
                there = [r for r in repairs if bad & set(range(r.line, _last_line(r) + 1))]
                twins_there = [r for r in there if r.operator == twins.OPERATOR]
                repairs = [r for r in repairs if r not in (twins_there or there)]
    raise cpu.UnsupportedOnCpu("the kernel's repairs would not compile together")


def _last_line(edit: edits.Edit) -> int:
    return edit.line + edit.before.count("\n")


RATE = 256  # accesses a thread may make per k of its row of C (and 64 more), at least
MEASURED = 4  # times the rate of the kernel as written, where that is more
MEASURE_CAP = 8  # times RATE: a kernel as written that makes more is taken as endless


def _budget(cases: list[Trial], rate: int = RATE) -> int:
    """Accesses one thread may make in one block before it is stopped, since a repair
    may loop for ever: a right kernel's thread makes a few dozen per k of its row of C,
    unless it reaches its registers through pointers (_rate)."""
    return rate * (max(c.shape.K for c in cases) + 64)


def _rate(launch, configure, path: Path, case: Trial) -> int:
    """The rate of accesses the budget allows: RATE, or MEASURED times what the kernel
    as written makes in the first block of `case`, where that is more (a thread that
    passes its arrays of registers to a function makes hundreds per k, each counted;
    a repair held to RATE was stopped as endless). A kernel as written that faults or
    runs past MEASURE_CAP times RATE before its first block ends shows no rate: its
    repairs may make what a kernel as written may (a fault on a thread's first access
    once held the right repair of siboehm's warptiling kernel, 600 a k, to RATE)."""
    configure(-1, 0, _budget([case], MEASURE_CAP * RATE), 1)
    try:
        case.run(launch)
    except KernelFault:
        return MEASURE_CAP * RATE
    most = ctypes.CDLL(str(path)).cpu_most_accesses
    most.restype = ctypes.c_long
    return max(RATE, MEASURED * most() // (case.shape.K + 64))


def _loaded(spec: KernelSpec, path: Path):
    """launch and configure for a library (in a child that has confined itself)."""
    configure = ctypes.CDLL(str(path)).cpu_configure
    configure.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_long, ctypes.c_long]
    return cpu._launcher(spec, path), configure


# ---- the children ----------------------------------------------------------------------------


@dataclass(frozen=True)
class _Evidence:
    text: str
    wrong: bool
    smallest: tuple[Shape, float] | None  # a small case that fails, when one was found
    rate: int  # _rate's


@dataclass(frozen=True)
class _Trying:
    index: int
    cpu: float  # seconds of the child's CPU the repairs before it took


@dataclass(frozen=True)
class _Found:
    repair: Repair


@dataclass(frozen=True)
class _Confirming:
    pass


@dataclass(frozen=True)
class _Stopped:
    pass


MESSAGES = (_Evidence, _Trying, _Confirming, _Found, _Stopped, Repair, Shape)


def _witness(conn, spec, paths, failing, seed, scratch) -> None:
    """The kernel as written, in the diagnostic build, on the failing cases: the first
    thing it stops on, and whether it is wrong at all here; then, in the variants build,
    the smallest case that still fails (what each repair runs first); and the rate of
    accesses the repairs may make (_rate)."""
    diagnose, variants = paths
    isolation.enter(scratch, readable=[diagnose, variants])
    cases = trials.drawn(spec, failing, seed)
    evidence, wrong = "", False
    run, set_up = _loaded(spec, variants)
    rate = _rate(run, set_up, variants, cases[0])
    launch, configure = _loaded(spec, diagnose)
    configure(-1, 0, _budget(cases, rate), 0)
    for case in cases:
        try:
            case.run(launch)
        except KernelFault as fault:
            evidence = explain_fault(fault)
            break
    set_up(-1, 0, _budget(cases, rate), 0)
    wrong = bool(evidence) or not all(case.right(run) for case in cases)
    smallest = _shrunk(spec, run, failing, seed) if wrong else None
    conn.send(_Evidence(evidence, wrong, smallest, rate))


# Sizes a shrinking case tries for each of M, N and K, smallest first.
_SIZES = (1, 2, 3, 4, 5, 8, 9, 16, 17, 31, 33, 64, 65, 127, 129)


def _shrunk(spec, launch, failing, seed) -> tuple[Shape, float] | None:
    """A case as small as the kernel still fails, from the cheapest failing one: each of
    M, N and K in turn down to the least size that fails (delta debugging on the input);
    for a kernel written for some shapes only, the cheapest of those that fails.
    Every repair runs it first, and most fail there, at a fraction of the time."""
    shape, beta = min(failing, key=lambda c: _cost(spec, c[0]))
    rng = np.random.default_rng(seed)
    if spec.shapes is not None:
        cheaper = [s for s in _lattice(spec.shapes, shape) if _cost(spec, s) < _cost(spec, shape)]
        cheaper = sorted(cheaper, key=lambda s: _cost(spec, s))[:_SHRINK_TRIES]
        failing = (s for s in cheaper if _fails(spec, launch, s, beta, rng))
        return next(((s, beta) for s in failing), (shape, beta))
    for axis in ("K", "N", "M"):
        for size in _SIZES:
            if size >= getattr(shape, axis):
                break
            trial = replace(shape, **{axis: size})
            if _fails(spec, launch, trial, beta, rng):
                shape = trial
                break
    return shape, beta


def _fails(spec: KernelSpec, launch, shape: Shape, beta: float, rng) -> bool:
    return not all(trial.right(launch) for trial in trials.draw(spec, shape, beta, rng))


_SHRINK_TRIES = 8  # cheaper shapes a kernel written for some shapes only runs, at most


def _lattice(shapes, within: Shape) -> list[Shape]:
    """The shapes a kernel written for `shapes` is right on, up to `within`: each of M, N
    and K a multiple of what all of them share (128 where they are 128, 256 and 384:
    whole tiles), or where they share no such step (1), the shapes themselves."""
    steps = [np.gcd.reduce([s[axis] for s in shapes]) for axis in range(3)]
    if min(steps) == 1:
        return [Shape(*s) for s in shapes]
    sizes = [range(step, top + 1, step) for step, top in zip(steps, (within.M, within.N, within.K))]
    return [Shape(int(m), int(n), int(k)) for m in sizes[0] for n in sizes[1] for k in sizes[2]]


def _cost(spec: KernelSpec, shape: Shape) -> int:
    """What a case costs to run on the CPU: threads times the length of their loop."""
    gx, gy = spec.geometry.grid(shape.M, shape.N)
    bx, by = spec.geometry.block
    return gx * gy * bx * by * (shape.K + 16)


# What a repair that gets the failing cases right must get right too: small cases are
# what a wrong repair can fit (a tile's rows past M are zeros either way), so before it
# counts, a repair runs cases that fill several tiles in every direction.
CONFIRM = ((EXACT_SIZE, beta_of(EXACT_SIZE)), (Shape(200, 300, 60), 0.0))
CONFIRM_S = 60.0  # a repair past its first look: every case, and the confirming ones


def _confirming(spec: KernelSpec, tried: list) -> list[tuple[Shape, float]]:
    """The cases a repair must get right besides `tried` before it counts: CONFIRM, or
    for a kernel written for some shapes only, each of those with either beta."""
    if spec.shapes is None:
        return [c for c in CONFIRM if c not in tried]
    shapes = [Shape(*s) for s in spec.shapes]
    confirming = [(s, b) for s in shapes for b in (0.0, beta_of(s))]
    return [c for c in confirming if c not in tried]


@dataclass(frozen=True)
class _Search:
    """What every child searching the repairs works from."""

    spec: KernelSpec
    path: Path  # the library of repairs
    failing: list  # (Shape, beta) of the cases that failed, cheapest first
    passing: list  # and of cases that passed and are cheap enough to keep a repair honest
    seed: int
    rate: int  # counted accesses a thread may make per k (_rate)
    until: float  # time.time() past which no repair is started
    scratch: object


def _search(conn, search: _Search, order, cpu) -> None:
    """Try the repairs `order` holds, in turn, for `cpu` seconds of this process's CPU
    or until the clock reads search.until."""
    spec, seed, until = search.spec, search.seed, search.until
    isolation.enter(search.scratch, readable=[search.path])
    launch, configure = _loaded(spec, search.path)
    cases = trials.drawn(spec, search.failing + search.passing, seed)
    confirm = trials.drawn(spec, _confirming(spec, search.failing + search.passing), seed + 1)
    budget = _budget(cases + confirm, search.rate)
    # A repair that loops runs to its budget: on the first case, the first case's (a
    # budget drawn for the largest case made each such repair cost a second, and on a
    # slower CPU two of them ended the search as if they had hung).
    look = _budget(cases[:1], search.rate)
    first_look = np.prod(spec.geometry.grid(cases[0].shape.M, cases[0].shape.N)) > 1
    stop = len(order)
    began = time.process_time()
    for index, (rank, (site, choice, edit)) in enumerate(order):
        used = time.process_time() - began
        if used > cpu or time.time() > until or index >= stop:
            break
        conn.send(_Trying(index, used))
        # Most repairs are wrong in every block: the first block alone shows it, at a
        # fraction of the time where the case has many.
        configure(site, choice, look, int(first_look))
        if not cases[0].right(launch, where_written=first_look):
            continue
        configure(site, choice, budget, 0)
        # Past its first look, a repair runs every case, each far bigger than a block of
        # the first: the parent waits longer (within CANDIDATE_S, the right repair of a
        # kernel of 1024-thread blocks was once taken for an endless loop, and lost).
        conn.send(_Confirming())
        if all(case.right(launch) for case in (cases if first_look else cases[1:]) + confirm):
            repair = Repair(edit.line, edit.operator, edit.before, edit.swapped, edit.context, rank)
            conn.send(_Found(repair))
            # Go on a little, for a repair on another line that would make it ambiguous.
            stop = min(stop, max(2 * index, index + AFTER_FOUND))
    conn.send(_Stopped())


def _order(text: str, candidates: list, hints: Hints, evidence: str, spec: KernelSpec) -> list:
    """Candidates ((site, choice, Edit), or Edits) in the order they are tried: a barrier
    added anywhere first where the cases point at a race, a dimension exchanged where
    only cases with two dimensions unequal fail; then those nearest the lines
    the evidence points at (the access it stopped on, where the float read before it
    had a value was declared, where beta is used when only cases with beta != 0 fail;
    or else where C is stored), a rule with few repairs a place a step further out
    than one with many (a term of the kernel's own, a factor, a variable), and each
    trigram a repair makes the code around it share with the rest of the kernel half a
    step nearer (suspects.Familiarity: a slip makes its line read unlike its twins)."""
    items = [c if isinstance(c, tuple) else (0, 0, c) for c in candidates]
    kernel = Kernel.parse(text)
    named = {int(n) for n in re.findall(rf"(?:{re.escape(spec.filename)}:|line )(\d+)", evidence)}
    start = set(hints.lines) | named
    if hints.beta:  # the kernel's own name for the contract's beta
        names = suspects.parameters(kernel, spec.name_expression)
        terms = [p.name for p in contract.CONTRACTS[spec.contract].parameters]
        where = terms.index("beta")
        start |= suspects.lines_using(kernel, names[where]) if len(names) > where else set()
    if hints.unset:
        start |= {d.locals[0].line for d in syntax.own_floats(kernel.source)
                  if any(v.value is None for v in d.locals)}  # fmt: skip
    if hints.unwritten:  # what was read unwritten is what the stores to shared memory miss
        start |= suspects.lines_storing_shared(kernel)
    if not start:
        start = {e.line for _, _, e in items if re.search(r"\bC\s*\[", e.before)}
    distance = suspects.related_lines(kernel, start)
    far = 1 + max(distance.values(), default=0)
    barriers = hints.barriers or "__syncthreads()" in evidence
    pairs = suspects.multiplied(kernel)
    familiar = suspects.Familiarity(text)

    def key(candidate):
        edit = candidate[2]
        steps = distance.get(edit.line, far)
        if barriers and edit.operator == "add barrier" or hints.dimensions and _crosswise(edit):
            return -1, 0, steps
        many = _many(edit, pairs)
        return steps + many - familiar(edit) / 2, many, steps

    return sorted(items, key=key)


def _many(edit: edits.Edit, pairs: set) -> bool:
    """Whether a repair is of a rule that gives many at a place (a factor, a term, a
    variable), unless the kernel's own text points at it: a factor it multiplies this
    operand by elsewhere (by * BM * N where the column's product lacks by), a product
    it writes elsewhere (bx * BN) rather than a lone name."""
    if edit.operator == "add factor":
        factor = edit.text.replace(edit.before, "", 1).strip(" *")
        operands = (edit.before, factor)
        return not {frozenset(operands), frozenset(map(suspects.operand, operands))} & pairs
    if edit.operator == "add term":
        return not edit.text.endswith(")")  # `(sum) + name`, not `(sum) + (product)`
    return edit.operator == "variable"


def _crosswise(edit: edits.Edit) -> bool:
    """Whether a repair exchanges a dimension for another, or the x of a thread's or a
    block's index for its y: what a kernel that fails only where two dimensions differ
    most likely got wrong."""
    old, new = edit.swapped
    return edit.operator == "dimension" or (
        edit.operator == "builtin" and old.split(".")[0] == new.split(".")[0]
    )  # fmt: skip


def localize(
    spec: KernelSpec,
    prepared: Future,
    failing: list[tuple[Shape, float]],
    passing: list[tuple[Shape, float]],
    seed: int,
    scratch,
    hints: Hints | None = None,
) -> Finding | None:
    """What the diagnostic build shows of spec on the CPU for these failing cases, and
    the repairs (prepare's) that make them and the passing ones right; None where the
    CPU backend cannot run the kernel here (no compiler, a construct it lacks).
    hints: what every case points at (prepare's may have seen only the first)."""
    began = time.monotonic()
    try:
        built = prepared.result(timeout=PREPARE_S)
    except futures.TimeoutError:  # TimeoutError itself from Python 3.11
        return None  # the verdicts stand without a line
    if built is None:
        return None
    evidence, wrong, rate = "", True, RATE
    failing = sorted(failing, key=lambda c: _cost(spec, c[0]))
    # Cases that passed keep a repair honest where they are cheap; the confirming cases
    # (CONFIRM) do the rest.
    passing = [c for c in passing if _cost(spec, c[0]) <= _cost(spec, EXACT_SIZE)]
    paths = (built.diagnose, built.variants)
    with Child(_witness, spec, paths, failing, seed, scratch, messages=MESSAGES) as child:
        message = child.receive(EVIDENCE_S, "running the kernel in the diagnostic build")
        if isinstance(message, _Evidence):
            evidence, wrong, rate = message.text, message.wrong, message.rate
            if message.smallest:
                failing = [message.smallest, *failing]
    if not wrong:
        return Finding(evidence, wrong, (), 0, 0, time.monotonic() - began)
    order = _order(built.text, built.candidates, hints or built.hints, evidence, spec)
    cpu = float(os.environ.get("SGEMM_LOCALIZE_S", SEARCH_S))
    search = _Search(spec, built.variants, failing, passing, seed, rate,
                     time.time() + WALL * cpu, scratch)  # fmt: skip
    searches = max(1, min(SEARCHES, os.cpu_count() or 1))
    found, tried = [], 0
    with ThreadPoolExecutor(searches) as pool:
        ranked = list(enumerate(order))
        parts = [ranked[i::searches] for i in range(searches)]
        for part_found, part_tried in pool.map(lambda part: _search_part(search, part, cpu), parts):
            found += part_found
            tried += part_tried
    if found:  # the preprocessed text's rows, parsed only when a repair needs its line
        source = Source.parse(built.text)
        rows = dict(zip(source.lines, built.text.split("\n")))
        found = [_on_own_line(r, rows, spec.source) for r in found]
        found = [_in_statement(_where_it_changes(r, order[r.rank][2]), source, order[r.rank][2])
                 for r in found]  # fmt: skip
        # A rule's repair says what kind of mistake it is; a statement put whole (the
        # step's, a twin's) only where.
        whole = (*aligned.OPERATORS, twins.OPERATOR)
        found = sorted(found, key=lambda r: (r.operator in whole, r.rank))
        found = _where_it_differs(found, spec)
    return Finding(evidence, wrong, tuple(found), tried, len(order), time.monotonic() - began)


def _where_it_differs(found: list[Repair], spec: KernelSpec) -> list[Repair]:
    """Of repairs on several lines, those on the lines where a course step's kernel is
    written otherwise than the step's own, when there are any: a line that reads as the
    step's is where a repair makes up for the mistake, not where it is (k looping to
    the wrong bound is made up for by a smaller step, a barrier missing by one a line
    further on)."""
    if len({r.line for r in found}) < 2:
        return found
    own = _own_lines(spec)
    return [r for r in found if r.line in own or r.operator == "restore statement"] or found


def _on_own_line(repair: Repair, rows: dict[int, str], source: str) -> Repair:
    """The repair on the learner's own line. The preprocessor expands a macro whose
    arguments span several lines on the first of them, leaving each of the others only
    what follows the invocation (`rows`: the preprocessed row of each line): of those
    lines, the one holding the text the repair changes, when exactly one does and the
    first does not."""
    lines = [flat(line) for line in source.splitlines()]
    bare = lambda text: text.replace(" ", "")  # noqa: E731
    holds = lambda n: bare(flat(repair.before)) in bare(lines[n - 1])  # noqa: E731
    if not repair.before.strip() or repair.line > len(lines) or holds(repair.line):
        return repair
    swallowed, n = [], repair.line + 1
    while n <= len(lines) and len(bare(flat(rows.get(n, "")))) < len(bare(lines[n - 1])) and (
        bare(lines[n - 1]).endswith(bare(flat(rows.get(n, ""))))
    ):  # fmt: skip
        swallowed.append(n)
        n += 1
    holding = [n for n in swallowed if holds(n)]
    return replace(repair, line=holding[0]) if len(holding) == 1 else repair


def _where_it_changes(repair: Repair, edit: edits.Edit) -> Repair:
    """A statement put whole (the step's, its twin's) over one the learner wrote on
    several lines: on the one line of theirs it changes, where it changes one only (a
    term missing from a call's second argument is that line's mistake, not the call's)."""
    if edit.kind != "statement" or "\n" not in edit.before or not edit.text.strip(";\n "):
        return repair
    token = re.compile(r"\w+|\S")
    old = [(m.group(), edit.before.count("\n", 0, m.start())) for m in token.finditer(edit.before)]
    new = token.findall(edit.text)
    lines = set()
    for op, i1, i2, _, _ in difflib.SequenceMatcher(None, [t for t, _ in old], new).get_opcodes():
        if op != "equal":  # an insertion is on the line of the token it goes before
            changed = old[i1 : max(i2, i1 + 1)] if i1 < len(old) else old[-1:]
            lines |= {row for _, row in changed}
    return replace(repair, line=edit.line + lines.pop()) if len(lines) == 1 else repair


# What a repair's statement is: the innermost of these around it; of a loop or a branch,
# its header, up to the statement it runs.
_STATEMENTS = {
    "expression_statement": None, "declaration": None, "return_statement": None,
    "for_statement": "body", "while_statement": "body", "if_statement": "consequence",
}  # fmt: skip


def _in_statement(repair: Repair, source: Source, edit: edits.Edit) -> Repair:
    """The repair with the learner's lines of the statement it changes: a loop's bound
    and its step, written on two lines of one header, are one statement's (an insertion
    is its own)."""
    node = source.root.descendant_for_byte_range(edit.start, max(edit.start, edit.end - 1))
    while edit.end > edit.start and node is not None and node.type not in _STATEMENTS:
        node = node.parent
    if node is None or edit.end == edit.start:
        return replace(repair, statement=(repair.line, repair.line))
    ran = _STATEMENTS[node.type] and node.child_by_field_name(_STATEMENTS[node.type])
    whole = edit.start <= node.start_byte and edit.end >= node.end_byte
    end = node.end_byte if whole or not ran else ran.start_byte
    while end > node.start_byte + 1 and source.data[end - 1 : end].isspace():
        end -= 1
    first, last = (source.line(source.data.count(b"\n", 0, b)) for b in (node.start_byte, end - 1))
    return replace(repair, statement=(min(first, repair.line), max(last, repair.line)))


def _search_part(search: _Search, order, cpu: float):
    """Search one share of the repairs in children, for `cpu` seconds of their CPU in
    all, starting a new one after a repair that crashed its child or looped past
    CANDIDATE_S; (repairs found, repairs tried)."""
    found, start, tried = [], 0, 0
    while start < len(order) and time.time() <= search.until and cpu > 0:
        current, timeout, used, since = None, STARTUP_S, 0.0, time.monotonic()
        with Child(_search, search, order[start:], cpu, messages=MESSAGES) as child:
            while True:
                message = child.receive(timeout, "trying repairs")
                timeout = CANDIDATE_S
                if isinstance(message, _Trying):
                    current, used, since = start + message.index, message.cpu, time.monotonic()
                    tried = current + 1
                elif isinstance(message, _Confirming):
                    timeout = CONFIRM_S
                elif isinstance(message, _Found):
                    found.append(message.repair)
                elif isinstance(message, _Stopped):
                    return found, tried
                else:  # Hung, Died or Forged: go on after the repair it was trying
                    start = len(order) if current is None else current + 1
                    # What it had used, and the repair it died on: a crash, its time; a
                    # hang, CANDIDATE_S (what a confirmation might have taken is unknown).
                    cpu -= used + min(time.monotonic() - since, CANDIDATE_S)
                    break
    return found, tried
