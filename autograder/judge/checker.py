"""Is a kernel correct? Run it on a suite of awkward shapes and say where it is wrong.

Each case draws fresh random A, B and C, surrounds them with bands that
catch mistakes (NaN around A and B, so a read outside them poisons the result;
a known value around C, so a write outside it shows), runs the kernel, and
compares C with a float64 reference. The tolerance grows with K, as the
rounding error of a float32 dot product does. A failure is described in
words: where the wrong elements are, what they were, what to check.

The case logic is written against an array module `xp` (CuPy on a GPU, NumPy
for tests and for the CPU backend) and a `launch` function that runs the
kernel (autograder.run.backends); autograder.judge.job runs it all in a child process
so that a kernel that crashes or hangs cannot take the caller down. The cases
announce each launch of the kernel (`Started`, `Ran`): the time limit of a case
covers the kernel's own run, never the inputs or the float64 reference, which
are the grader's work.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field, replace
from typing import Callable

import numpy as np

from ..run.faults import KernelFault
from . import advice, mapping, reduction
from .causes import by_cause
from .diagnose import describe_mismatch

ALPHA = 1.5
BETA = -0.75
# Written into C before a beta = 0 launch. Finite, because a kernel may compute
# beta * C (0 * finite = 0); distinctive, so "never written" can be told apart.
SENTINEL = np.float32(-1.2345678e30)
# ... unless the kernel's step leaves C unread where beta = 0 (registry.Step's
# leaves_c_unread), as BLAS lets it: C holds infinity then, which such a kernel never
# reads, and one that reads it makes NaN of (0 * inf). Not NaN: a NaN C could not be
# told apart, element by element, from a NaN the kernel computed; a C left as it was
# is still told by its value.
UNREAD_C = np.float32(np.inf)


def c_where_beta_is_0(leaves_c_unread: bool) -> np.float32:
    """What C holds before a launch with beta = 0: UNREAD_C or SENTINEL."""
    return UNREAD_C if leaves_c_unread else SENTINEL


# The value in the bands around C: any change there is a write outside C.
GUARD = np.float32(7.654321e29)
U = 2.0**-24  # float32 unit roundoff
# The bits of the NaN the CPU backend fills shared memory with (every byte 0xFF,
# cpu_runtime.h's fresh_shared). Arithmetic on x86 passes a NaN operand's bits
# through, so an element of C with these bits was computed from shared memory
# no thread had written; the checker's own NaN (around A and B) has other bits,
# and so has any NaN a GPU computes.
UNWRITTEN_SHARED_BITS = 0xFFFFFFFF
# What a case's message says of C when those bits are in it, and when C changed between
# two runs on the same inputs.
UNWRITTEN_NAN = (
    "NaN from shared memory that was read before any thread wrote it (the CPU backend "
    "fills it with NaN when a block starts): a missing __syncthreads() after the loads, "
    "or a tile not fully loaded"
)
RACED = "the result changes between two runs on the same input"
UNSET_LOCAL = (
    "NaN from a thread's own float that was never given a value (the CPU backend fills "
    "those with NaN)"
)
# ... and the NaN it fills a thread's own floats with when they are declared without a
# value (cpu_runtime.h's local_poison).
UNSET_LOCAL_BITS = 0xFFC0FFEE


@dataclass(frozen=True)
class Shape:
    M: int
    N: int
    K: int
    why: str = ""

    @property
    def flops(self) -> int:
        return 2 * self.M * self.N * self.K

    def __str__(self) -> str:
        return f"{self.M}x{self.N}x{self.K}"


def beta_of(shape: Shape) -> float:
    """The beta != 0 a shape's case runs with: BETA, or its opposite where M + N + K is
    even, so that the suite has both signs (a kernel that tells beta = 0 by its sign,
    `beta < 0` for `beta != 0`, is wrong in some case) and the shapes the sanitizer and
    the localizer's confirmations run (odd ones) keep BETA."""
    return BETA if (shape.M + shape.N + shape.K) % 2 else -BETA


# The shape a GPU run also checks on exact-size buffers for accesses outside A, B
# and C, and for races (autograder.judge.sanitizer): partial tiles in every direction,
# for 32- and 128-wide tiles, and 5 slices of K = 32 (step 12's 4 buffers), so that
# every pipeline of the course refills a buffer it has multiplied: the race racecheck
# looks for there happens at no shorter K.
EXACT_SIZE = Shape(127, 129, 129, "one past and one short of the tiles")
SMALL = (
    Shape(1, 1, 1, "a single element"),
    Shape(1, 300, 70, "one row"),
    Shape(257, 1, 33, "one column"),
    Shape(17, 19, 3, "K smaller than any tile"),
    Shape(31, 33, 17, "just under and over one warp"),
    Shape(67, 131, 68, "K a multiple of 4, N not"),
    Shape(130, 516, 129, "N a multiple of 4, K not"),
    EXACT_SIZE,
    Shape(200, 300, 60, "multiples of 4 but not of the tiles"),
    Shape(256, 512, 128, "whole tiles"),
)
MEDIUM = (Shape(1001, 777, 513, "odd, several tiles in every direction"),)
LARGE = (Shape(4095, 4097, 4093, "large and odd"),)
SUITE = SMALL + MEDIUM + LARGE

# What NaN in C means, as far as the case can tell: the checker's NaN around A and B.
NAN_FROM_OUTSIDE = (
    "; some are NaN: the kernel read outside A or B, which the checker surrounds with NaN "
    f"({advice.LOADS})"
)
# A case with beta = 0 whose C of UNREAD_C came out NaN, and that passes with a finite C.
READ_UNREAD_C = (
    "the kernel reads C although beta = 0: with beta = 0 BLAS lets C hold anything, and "
    "the checker's C holds infinity there (0 * inf is NaN; with a finite C this case "
    "passes): leave C unread where beta = 0"
)
# ... and when compute-sanitizer found no access outside A or B on the GPU: what
# else a GPU gives a kernel that reads memory nobody wrote (autograder.judge.job).
NAN_FROM_UNWRITTEN = (
    "; some are NaN: read outside A or B (which the checker surrounds with NaN), or from "
    "shared memory no thread had written, which on a GPU holds whatever was there; "
    f"compute-sanitizer saw no read outside A or B at {EXACT_SIZE}, so most likely the "
    "latter: a missing __syncthreads() after the loads, or a tile not fully loaded"
)


@dataclass(frozen=True)
class Budget:
    """How much of the suite a backend can afford.

    seconds: a shape is not run, and the report says so, when the kernel's speed
    on the shapes before it says it would take longer than this; 0: never run
    on this backend (not the kernel's doing, so it costs no points).
    one_beta: shapes run with beta != 0 only; the others run with both.
    """

    seconds: dict
    one_beta: frozenset


GPU_BUDGET = Budget({LARGE[0]: 8.0}, frozenset(LARGE))
# The reference kernels take 0.15 to 1.1 s for the medium shape on the CPU (two
# cores); the large one, 170 times the work, would take minutes, so it is left
# to a GPU. (8 s stays under the notebooks' 10 s limit per case: the estimate
# runs high, since it extrapolates from small cases, which pay more overhead
# per flop.)
CPU_BUDGET = Budget({MEDIUM[0]: 8.0, LARGE[0]: 0.0}, frozenset(LARGE))
BUDGETS = {"gpu": GPU_BUDGET, "cpu": CPU_BUDGET}  # by backend name


@dataclass(frozen=True)
class Started:
    """The kernel is being launched now: a case's time limit runs from here."""

    label: str
    flops: int


@dataclass(frozen=True)
class Ran:
    """The kernel finished, in `seconds`; judging it is the grader's time."""

    seconds: float


@dataclass(frozen=True)
class Skipped:
    """A shape that was not run, and why. costs: whether the kernel's own slowness
    kept it out (then a suite holding it is not passed), or the backend never runs it."""

    shape: Shape
    why: str
    costs: bool

    def __str__(self) -> str:
        return f"{self.shape} not run: {self.why}"


@dataclass(frozen=True)
class CaseResult:
    shape: Shape
    beta: float
    ok: bool
    message: str = ""
    max_error: float = 0.0  # largest |C - ref| / tolerance; <= 1 passes
    seconds: float = 0.0  # the kernel's own run time
    under: str = ""  # how it ran, when not as the other cases did
    # What caused the failure, diagnosed with the report's other cases
    # (autograder.judge.diagnosis.Diagnosis); None before that, or when passed.
    cause: object = None

    @property
    def label(self) -> str:
        return f"{self.shape}, beta={self.beta:g}" + (f", {self.under}" if self.under else "")


@dataclass(repr=False)
class Report:
    kernel: str
    device: str  # where it ran, with a one-word status of its confinement
    seed: int
    cases: list[CaseResult] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)
    error: str = ""  # a crash, a hang or a launch failure that ended the run
    stopped_by: object = None  # its cause (a judge.diagnosis.Diagnosis), where one was found
    tolerance: str = ""  # which tolerance applied (describe_tolerance)
    bounds: str = ""  # how accesses outside A, B and C were looked for
    confinement: str = ""  # how the process that ran the kernel was confined, in full

    @property
    def ok(self) -> bool:
        return not self.error and bool(self.cases) and all(c.ok for c in self.cases)

    @property
    def failures(self) -> list[CaseResult]:
        return [c for c in self.cases if not c.ok]

    def __str__(self) -> str:
        return self.text()

    def text(self, verbose: bool = False) -> str:
        """The verdict and each cause of failure first, then every case, a failing one
        by the number of its cause; verbose: with each failing case's own message, and
        how the run was confined."""
        causes = by_cause(self.cases)
        number = {id(c): i for i, cause in enumerate(causes, 1) for c in cause.cases}
        lines = [self.verdict, *(f"  [{i}] {cause}" for i, cause in enumerate(causes, 1))]
        if self.error:
            lines.append(f"  FAIL {self.error}")
        lines.append(f"check {self.kernel} on {self.device} (seed {self.seed})")
        lines += [f"  {name}: {text}" for name, text in self._settings(verbose)]
        for c in self.cases:
            if c.ok:
                lines.append(f"  ok   {c.label:<26} {self._detail(c)}")
            else:
                lines.append(f"  FAIL {c.label:<26} [{number[id(c)]}]" + f" {c.message}" * verbose)
        lines += [f"  skip {s}" for s in self.skipped]
        lines += [f"  note: {n}" for n in self.notes]
        return "\n".join(lines)

    def _settings(self, verbose: bool) -> list[tuple[str, str]]:
        shown = [("confinement", self.confinement if verbose else "")]
        shown += [("tolerance", self.tolerance), ("bounds", self.bounds)]
        return [(name, text) for name, text in shown if text]

    @staticmethod
    def _detail(case: CaseResult) -> str:
        return f"error {case.max_error:.2g} of tolerance" if case.ok else case.message

    @property
    def verdict(self) -> str:
        passed = sum(c.ok for c in self.cases)
        return (
            f"{'PASSED' if self.ok else 'FAILED'}: {passed} of {len(self.cases)} cases "
            + ("run correct" if self.skipped else "correct")
            + ("" if not self.error else ", then the run stopped")
            + "".join(f"; {s}" for s in self.skipped)
        )

    # A notebook shows the report once, as what it is (not the dataclass's fields).
    __repr__ = __str__

    def _repr_html_(self) -> str:
        """What a notebook shows: the verdict and each cause of failure, a screenful at
        most, and every case one click away."""
        from html import escape

        news = [str(cause) for cause in by_cause(self.cases)]
        news += [f"FAIL {self.error}"] * bool(self.error)
        listed = "".join(f"<li>{escape(line)}</li>" for line in news)
        rows = "".join(
            f"<tr><td style='color:{'green' if c.ok else 'red'}'>{'ok' if c.ok else 'FAIL'}</td>"
            f"<td>{escape(c.label)}</td><td style='text-align:left'>"
            + escape(self._detail(c))
            + "</td></tr>"
            for c in self.cases
        )
        extra = "".join(
            f"<p>{escape(text)}</p>"
            for text in [*(str(s) for s in self.skipped), *(f"note: {n}" for n in self.notes)]
        )
        settings = "<br>".join(
            f"{name}: {escape(text)}" for name, text in self._settings(verbose=False)
        )
        return (
            f"<p><b>{escape(self.verdict)}</b></p>"
            + (f"<ul>{listed}</ul>" if listed else "")
            + f"<details><summary>every case: {escape(self.kernel)} on {escape(self.device)} "
            f"(seed {self.seed})</summary><p>{settings}</p>"
            f"<table>{rows}</table>{extra}</details>"
        )


# A launch runs the kernel once: launch(M, N, K, alpha, A, B, beta, C), where
# A, B and C are contiguous float32 arrays of xp, views into padded buffers.
# A backend that caught the kernel making a bad access raises KernelFault.
Launch = Callable[[int, int, int, float, object, object, float, object], None]


def _padded(xp, values, pad_value, pad: int):
    """values (flattened) inside a buffer with `pad` elements of pad_value each side."""
    buf = xp.full(values.size + 2 * pad, pad_value, dtype=xp.float32)
    buf[pad : pad + values.size] = values.ravel()
    return buf


def _pad_for(shape: Shape) -> int:
    # Wide enough to hold the spill-over of a missing bound check on a tile of
    # up to 256 rows; a multiple of 4 keeps the views 16-byte aligned.
    return (256 * max(shape.N, shape.K) + 1024) // 4 * 4


def tolerance_factor(K: int, input_roundoff: float = 0.0) -> float:
    """How far each element of C may be from the exact product, relative to
    |alpha| |A||B| + |beta| |C|: the rounding error of a float32 dot product of
    length K, relative to the sum of the magnitudes of its terms, is a few units
    for the epilogue plus a term that grows like sqrt(K) (random-sign rounding
    errors); a kernel that drops a single term of K (an off-by-one) misses by far
    more. Inputs rounded by up to a relative r before multiplying (TF32: r = 2^-11)
    move each product by up to (2r + r^2) of its magnitude: a bound, added."""
    return (8 + 2 * math.sqrt(K)) * U + 2 * input_roundoff + input_roundoff**2


def elementwise_tolerance(xp, A64, B64, alpha, input_roundoff=0.0, beta=0.0, C0=None):
    """How far each element of alpha A B + beta C0 may be from its exact value:
    tolerance_factor times |alpha| |A||B| + |beta| |C0|, for float64 A64 and B64 (any
    rows of A, any columns of B). The magnitudes it makes are zeroed before they are
    freed: those of sampled rows and columns would tell a kernel which ones a timed
    launch checks (autograder.judge.timing)."""
    absA, absB = xp.abs(A64), xp.abs(B64)
    scale = absA @ absB
    absA.fill(0)
    absB.fill(0)
    scale *= abs(alpha)
    if beta:
        scale += abs(beta) * xp.abs(C0.astype(xp.float64))
    scale *= tolerance_factor(A64.shape[1], input_roundoff)
    scale += 1e-30
    return scale


def describe_tolerance(input_roundoff: float = 0.0) -> str:
    """In words, what tolerance_factor allows."""
    fp32 = "FP32, |C - exact| <= (8 + 2 sqrt(K)) u (|alpha||A||B| + |beta||C|), u = 2^-24"
    if not input_roundoff:
        return fp32
    return f"{fp32}, plus (2r + r^2)|alpha||A||B| for inputs rounded by r = {input_roundoff:.3g}"


def run_case(xp, launch: Launch, shape: Shape, beta: float, rng, sync=lambda: None, **kw):
    """Run one shape and judge it; the CaseResult (see case_events)."""
    for event in case_events(xp, launch, shape, beta, rng, sync, **kw):
        pass
    return event


def case_events(
    xp,
    launch: Launch,
    shape: Shape,
    beta: float,
    rng,
    sync: Callable[[], None] = lambda: None,
    input_roundoff: float = 0.0,
    clues: mapping.Clues = mapping.Clues(None, None),
    clock: Callable[[], float] = time.perf_counter,
    leaves_c_unread: bool = False,
):
    """Run one shape and judge the result: yields Started and Ran around each launch
    of the kernel, then the CaseResult. input_roundoff: how far the kernel rounds
    each input before multiplying, relative to it (registry.Step); clues: what the
    diagnosis of an index mistake may know of the kernel (mapping); clock: what the
    launch's seconds are read from (Backend.clock); leaves_c_unread: the kernel's step
    leaves C unread where beta = 0 (registry.Step), and C holds UNREAD_C then."""
    case = _Inputs.draw(xp, shape, beta, rng, leaves_c_unread)
    label = f"{shape}, beta={beta:g}"
    yield Started(label, shape.flops)
    try:
        c_buf, seconds = case.run(launch, sync, clock)
    except KernelFault as fault:
        yield Ran(0.0)
        yield CaseResult(shape, beta, False, advice.explain_fault(fault))
        return
    yield Ran(seconds)
    outcome = _judged(xp, case, c_buf, input_roundoff)
    if outcome.right:
        yield CaseResult(shape, beta, True, max_error=outcome.max_error, seconds=seconds)
        return
    if _read_unread_c(xp, case, outcome) and bool(xp.isnan(outcome.got).any()):
        # NaN where C held infinity: from C, if the same case with a finite C passes.
        yield Started(label + " (again, with a finite C)", shape.flops)
        finite = replace(case, C0=xp.full_like(case.C0, SENTINEL))
        again = _judged(xp, finite, finite.run(launch, sync, clock)[0], input_roundoff)
        yield Ran(0.0)
        if again.right:
            unwritten = _host((outcome.got == case.C0) & outcome.bad)
            first = _first_bad_element(xp, outcome.got, outcome.expected, outcome.bad, unwritten)
            message = READ_UNREAD_C + first
            yield CaseResult(shape, beta, False, message, outcome.max_error, seconds)
            return
    if outcome.bad.any():
        yield Started(label + " (again, to look for a race)", shape.flops)
        again = case.c_of(case.run(launch, sync, clock)[0])
        yield Ran(0.0)
        # By more than its tolerance: a sum that is added in another order from run to
        # run (step 09's GEMM on the CPU backend, a tile shape per launch in turn)
        # differs in its last bits, and no race is in that.
        # An element left at UNREAD_C (inf) is not apart from itself (nan_to_num).
        once, twice = (xp.nan_to_num(c, nan=0.0).astype(xp.float64) for c in (outcome.got, again))
        apart = xp.abs(twice - once)
        changed = (apart > outcome.tolerance) | (xp.isnan(again) != xp.isnan(outcome.got))
        outcome = replace(outcome, raced=bool(changed.any()))
    outcome = replace(outcome, cause=_index_cause(outcome, clues))
    message = _message(xp, outcome, launch, clues)
    yield CaseResult(shape, beta, False, message, outcome.max_error, seconds)


@dataclass(frozen=True)
class _Inputs:
    """One case's fresh A, B and old C, and A and B in the buffers a launch reads them
    from (NaN around them); each run writes C into a buffer of its own (GUARD around)."""

    xp: object
    shape: Shape
    beta: float
    A: object
    B: object
    C0: object
    a_buf: object
    b_buf: object
    pad: int

    @classmethod
    def draw(cls, xp, shape: Shape, beta: float, rng, leaves_c_unread: bool = False) -> _Inputs:
        """leaves_c_unread: C holds UNREAD_C where beta = 0, else SENTINEL."""
        M, N, K = shape.M, shape.N, shape.K
        A = rng.standard_normal((M, K), dtype=np.float32)
        B = rng.standard_normal((K, N), dtype=np.float32)
        C0 = (
            rng.standard_normal((M, N), dtype=np.float32)
            if beta
            else xp.full((M, N), c_where_beta_is_0(leaves_c_unread), dtype=xp.float32)
        )
        pad = _pad_for(shape)
        a_buf, b_buf = _padded(xp, A, np.nan, pad), _padded(xp, B, np.nan, pad)
        return cls(xp, shape, beta, A, B, C0, a_buf, b_buf, pad)

    def run(self, launch: Launch, sync: Callable[[], None], clock: Callable[[], float]):
        """(C's padded buffer, seconds by `clock`) after one launch on these inputs."""
        M, N, K, pad = self.shape.M, self.shape.N, self.shape.K, self.pad
        c_buf = _padded(self.xp, self.C0, GUARD, pad)
        A_in, B_in = self.a_buf[pad : pad + M * K], self.b_buf[pad : pad + K * N]
        sync()
        start = clock()
        launch(M, N, K, ALPHA, A_in, B_in, self.beta, c_buf[pad : pad + M * N])
        sync()
        return c_buf, clock() - start

    def c_of(self, c_buf):
        """C (M x N) in its padded buffer."""
        M, N = self.shape.M, self.shape.N
        return c_buf[self.pad : self.pad + M * N].reshape(M, N)


@dataclass(frozen=True)
class _Outcome:
    """What one launch made of C, beside what it should have made: what a failing
    case's message is built from (_explain)."""

    got: object  # C as the kernel left it, M x N
    expected: object  # alpha A B + beta C0, in float64
    product: object  # A B, in float64
    A64: object
    B64: object
    C0: object
    beta: float
    tolerance: object  # how far each element of C may be from expected
    bad: object  # where it is further (NaN included)
    max_error: float  # the largest |C - expected| / tolerance
    before: int  # floats written before C's start
    after: int  # ... and past its end
    raced: bool = False  # C changed between two runs on the same inputs
    cause: str = ""  # an index mistake that reproduces C exactly (mapping)

    @property
    def right(self) -> bool:
        return not self.bad.any() and not self.before and not self.after


def _judged(xp, case: _Inputs, c_buf, input_roundoff: float) -> _Outcome:
    """C in c_buf against the float64 reference, and what was written around it."""
    got, pad, size = case.c_of(c_buf), case.pad, case.shape.M * case.shape.N
    A64, B64 = case.A.astype(xp.float64), case.B.astype(xp.float64)
    product = A64 @ B64
    beta, C0 = case.beta, case.C0
    expected = ALPHA * product + (beta * C0.astype(xp.float64) if beta else 0.0)
    tolerance = elementwise_tolerance(xp, A64, B64, ALPHA, input_roundoff, beta, C0)
    error = xp.abs(got.astype(xp.float64) - expected) / tolerance
    return _Outcome(
        got, expected, product, A64, B64, C0, beta, tolerance,
        bad=~(error <= 1),  # NaN counts as bad
        max_error=float(xp.nan_to_num(error, nan=np.inf).max()),
        before=int((c_buf[:pad] != GUARD).sum()),
        after=int((c_buf[pad + size :] != GUARD).sum()),
    )  # fmt: skip


def _read_unread_c(xp, case: _Inputs, o: _Outcome) -> bool:
    """Whether C held UNREAD_C (beta = 0, a step that leaves C unread) and is wrong."""
    return not case.beta and bool(o.bad.any()) and bool(xp.isinf(case.C0).all())


def _index_cause(o: _Outcome, clues: mapping.Clues) -> str:
    """An index mistake that reproduces C exactly (mapping), where C is wrong and
    nothing was written around it; where the result changed between runs, only one
    that makes blocks race can be."""
    if not o.bad.any() or o.before or o.after:
        return ""
    M, N = o.got.shape
    case = mapping.Case(
        *(_host(m).astype(np.float64) for m in (o.got, o.A64, o.B64)),
        _host(o.C0).astype(np.float64) if o.beta else np.zeros((M, N)),
        ALPHA,
        o.beta,
        _host(o.tolerance),
        _host(o.got == o.C0),
        _host(o.product),
    )
    return mapping.diagnose(case, clues, o.raced)


def _message(xp, o: _Outcome, launch: Launch, clues: mapping.Clues) -> str:
    """A failing case's message: what C shows (_explain), after what a split-K
    reduction made of its layers (step 09: the real cause) and a race, where seen."""
    message = _explain(xp, o)
    splits = getattr(launch, "splits", None)
    if splits and (
        said := reduction.explain(splits(), xp, o.got, o.C0, ALPHA, o.beta, o.tolerance)
    ):
        message = f"{said}; {message}"
    if o.raced:
        # What the change between runs shows, and no more: a race, or a value read before
        # it was written, are told apart by the evidence (autograder.judge.diagnosis).
        why = f": {_RACE}" if clues.mbarriers and not o.cause else ""
        why = ": blocks store to the same elements" if o.cause else why
        message = f"{RACED}{why}; {message}"
    return message


# Why threads race in a kernel that hands its buffers over with mbarriers (steps 12 and
# 13, which run on a GPU alone): what a change between runs has meant there.
_RACE = (
    "threads race (most often a buffer released on its mbarrier before every read of it "
    "is done, wgmma's included: release it after waiting for the wgmmas that read it)"
)


def _explain(xp, o: _Outcome) -> str:
    """What C shows: writes around it, and where and how its elements are wrong."""
    parts = []
    if o.before or o.after:
        where = []
        if o.after:
            where.append(f"{o.after} float{'s' * (o.after != 1)} past the end of C")
        if o.before:
            where.append(f"{o.before} float{'s' * (o.before != 1)} before its start")
        parts.append(
            f"wrote {' and '.join(where)}: a thread outside C stored anyway ({advice.STORES})"
        )
    if bool(o.bad.any()):
        got = o.got
        host_bad, host_unwritten = _host(o.bad), _host((got == o.C0) & o.bad)
        # A race or a NaN read says what went wrong; a pattern of wrong elements is then
        # where it showed, not a sign of a bad index formula.
        read_nan = bool(xp.isnan(got).any())
        sentence = describe_mismatch(host_bad, host_unwritten, index_hint=not (o.raced or read_nan))
        hint = o.cause or _whole_formula_hint(xp, got, o.product, o.C0, o.beta, o.tolerance)
        if hint:
            sentence = hint
        elif bool((got.view(xp.uint32) == UNSET_LOCAL_BITS).any()):
            sentence += f"; some are {UNSET_LOCAL}"
        elif bool((got.view(xp.uint32) == UNWRITTEN_SHARED_BITS).any()):
            sentence += f"; some are {UNWRITTEN_NAN}"
        elif bool(xp.isnan(got).any()):
            sentence += NAN_FROM_OUTSIDE
        parts.append(sentence + _first_bad_element(xp, got, o.expected, o.bad, host_unwritten))
    return "; ".join(parts)


def _whole_formula_hint(xp, got, product, C0, beta, tolerance) -> str:
    """Recognise a result that is right except for alpha or beta, or right values in
    the wrong places: C stored column-major, or each element's row and column swapped."""

    def matches(candidate, allowed=tolerance):
        return bool((xp.abs(got.astype(xp.float64) - candidate) <= allowed).all())

    c0 = C0.astype(xp.float64) if beta else xp.zeros(got.shape)
    if beta and matches(ALPHA * product):
        return "C = alpha*A*B, without + beta*C: the kernel ignores beta (or the old C)"
    if matches(product + beta * c0):
        return "C = A*B + beta*C, without alpha: the kernel ignores alpha"
    if matches(beta * c0):
        return (
            "C = beta*C, without alpha*A*B: no product of A and B reached C (the sum stays "
            "0: is each product added to it, and is it what is stored?)"
        )
    # Right values in the wrong places: element (i, j) stored at C[j * M + i] (and the
    # old C read from there). On a square C that is the transpose, which row and column
    # swapped in the sums gives too: the message names both.
    M, N = got.shape
    store = "stored at C[j * M + i] (C is row-major: element (i, j) belongs at C[i * N + j])"
    if M > 1 and N > 1:
        column_major = (ALPHA * product.T).reshape(M, N) + beta * c0
        allowed = xp.abs(tolerance.T).reshape(M, N) + abs(beta) * xp.abs(c0) * 2 * U
        if matches(column_major, allowed) and M == N:
            return (
                f"C looks transposed: element (i, j) holds the value of (j, i): {store}, or "
                "computed from row j of A and column i of B (row and column swapped in the sums)"
            )
        if matches(column_major, allowed):
            return f"C holds the right values in column-major order: element (i, j) was {store}"
    return ""


def _first_bad_element(xp, got, expected, bad, host_unwritten) -> str:
    i, j = (int(v) for v in np.argwhere(_host(bad))[0])
    if host_unwritten[i, j]:
        return f" (first: ({i}, {j}), never written)"
    return f" (first: ({i}, {j}) is {float(got[i, j]):.6g}, should be {float(expected[i, j]):.6g})"


def _host(array) -> np.ndarray:
    return array.get() if hasattr(array, "get") else np.asarray(array)


def iter_suite(
    xp,
    launch: Launch,
    shapes=SUITE,
    seed: int | None = None,
    sync: Callable[[], None] = lambda: None,
    budget: Budget = GPU_BUDGET,
    input_roundoff: float = 0.0,
    clues: mapping.Clues = mapping.Clues(None, None),
    clock: Callable[[], float] = time.perf_counter,
    leaves_c_unread: bool = False,
):
    """Run every shape with beta = 0 and beta != 0 (beta_of), as far as the budget allows
    (leaves_c_unread: see case_events).

    Yields the events of each case (Started, Ran, CaseResult; see case_events)
    and Skipped for a shape it does not run, so that a caller watching from another
    process knows which case ran, and whose time it was, if one hangs.
    """
    # Inputs are drawn where the kernel runs: on a GPU, drawing the large shape's
    # 50 million numbers on the host would take longer than everything else.
    rng = xp.random.default_rng(seed)
    seconds_per_flop = 0.0
    for shape in shapes:
        if shape in budget.seconds:
            estimate = seconds_per_flop * shape.flops
            if budget.seconds[shape] == 0:
                yield Skipped(shape, "too large for this backend (a GPU runs it)", costs=False)
                continue
            if estimate > budget.seconds[shape]:
                yield Skipped(
                    shape,
                    f"at this kernel's speed here it would take about {estimate:.0f} s, "
                    f"more than the {budget.seconds[shape]:.0f} s allowed",
                    costs=True,
                )
                continue
        nonzero = beta_of(shape)
        for beta in (nonzero,) if shape in budget.one_beta else (0.0, nonzero):
            events = case_events(
                xp, launch, shape, beta, rng, sync, input_roundoff, clues, clock, leaves_c_unread
            )
            for event in events:
                yield event
            if event.seconds:  # the best rate so far: small cases pay more overhead per flop
                rate = event.seconds / shape.flops
                seconds_per_flop = min(seconds_per_flop, rate) if seconds_per_flop else rate


def fresh_seed() -> int:
    return int(np.random.SeedSequence().entropy % 2**32)
