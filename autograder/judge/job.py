"""Run a kernel's job in a child process: its correctness cases, then its verified timing.

A job is a kernel, a backend and stages: `Check` runs shapes (autograder.judge.checker),
`Time` times the kernel beside its step's reference (autograder.judge.timing), but
only while every case so far was right, since a wrong kernel can be arbitrarily
fast. The child (autograder.isolate.child) reports every event as a typed message; the
parent holds each phase to its own time limit:

- setup (starting the CUDA context or building for the CPU, compiling, loading):
  SETUP_TIMEOUT_S. This is the grader's work, never the kernel's: a machine that
  is slow to start (a GPU's first context after a reboot, the first Slurm task
  on a node) costs no student anything, and a setup that never ends is a
  GraderFault ("the grader could not start ..."), to be regraded.
- a launch of the kernel, from `Started` or `TimedLaunch` to the next message:
  the caller's case limit. This is the only time a kernel is charged for: on the
  CPU backend its own time, not the time it waited for a CPU that other work had
  (isolate.child's own_time); and a launch that runs out counts only once it runs
  out again alone (`run`), and not at all when even then the machine was too busy
  to give it its limit's worth (a GraderFault).
- everything else (drawing inputs, the float64 reference, comparing):
  JUDGE_TIMEOUT_S, the grader's again.
"""

from __future__ import annotations

import contextlib
import re
import signal
import traceback
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np

from ..isolate import isolation
from ..isolate.child import Child, Died, Forged, Hung
from ..run import gpu, gpu_lock
from ..run.backends import BackendUnavailable, LaunchRefused, open_backend
from ..run.compiler import CompileError
from ..run.kernel import KernelSpec, template_arguments
from . import checker, diagnosis, localize, mapping, sanitizer, timing
from .advice import explain_cuda_error
from .checker import (
    EXACT_SIZE,
    NAN_FROM_OUTSIDE,
    NAN_FROM_UNWRITTEN,
    SUITE,
    CaseResult,
    Ran,
    Report,
    Shape,
    Skipped,
    Started,
    beta_of,
    fresh_seed,
)  # fmt: skip

SETUP_TIMEOUT_S = 600.0
JUDGE_TIMEOUT_S = 300.0
CASE_TIMEOUT_S = 30.0  # `check`'s default; notebooks and grading use their own (exercise.py)


class GraderFault(RuntimeError):
    """The grader failed, not the kernel: its machine did not start, or its code broke."""


# ---- what a job is -------------------------------------------------------------------------


@dataclass(frozen=True)
class Check:
    """Run the kernel on these shapes, beta = 0 and beta != 0 (as the backend's budget
    allows); every_term: the kernel at its every-term parameters (KernelSpec.every_term)."""

    shapes: tuple[Shape, ...]
    every_term: bool = False


# Where the kernel runs at its every-term parameters: partial tiles in every direction.
EVERY_TERM_SHAPES = (EXACT_SIZE,)


def checks(spec: KernelSpec, shapes: tuple[Shape, ...]) -> tuple[Check, ...]:
    """The Check of these shapes, and where they hold partial tiles and the spec has
    every-term parameters, the Check that runs the kernel there too."""
    found = (Check(shapes),)
    if spec.every_term and set(EVERY_TERM_SHAPES) <= set(shapes):
        found += (Check(EVERY_TERM_SHAPES, every_term=True),)
    return found


def every_term_label(spec: KernelSpec) -> str:
    """How a case at the every-term parameters is labelled: 'at WM=64, WN=64'."""
    ours = template_arguments(spec.source, spec.name_expression)
    theirs = template_arguments(spec.source, spec.every_term.name_expression)
    changed = ", ".join(f"{k}={v}" for k, v in theirs.items() if ours.get(k) != v)
    return f"at {changed}, where every index term counts"


@dataclass(frozen=True)
class Time:
    """Time the kernel, and `reference` beside it, at `size` (if every case so far was right)."""

    size: tuple[int, int, int]
    reference: KernelSpec | None = None
    repeats: int = timing.REPEATS


@dataclass(frozen=True)
class Job:
    spec: KernelSpec
    backend: str  # "gpu" or "cpu"
    stages: tuple[Check | Time, ...]
    seed: int
    alone: bool = False  # every stage in one turn with the device to itself (see run)
    diagnose: bool = True  # the failing cases' causes found (localize), not just their words


# ---- what the child says -------------------------------------------------------------------


@dataclass(frozen=True)
class Ready:
    device: str  # in words, with versions
    name: str  # the device's own name ("Tesla T4"), which grading.json's minimums use
    peak_gflops: float | None  # to FP32 accuracy
    tf32_peak_gflops: float | None  # from TF32 inputs
    confinement: str  # how the child is confined, in full; "" on a GPU


@dataclass(frozen=True)
class Measured:
    results: dict[str, timing.Measurement]


@dataclass(frozen=True)
class Crashed:
    why: str
    plain: str  # why, without the advice on where such a mistake most often is


@dataclass(frozen=True)
class Refused:
    """A launch the device cannot run, refused before running."""

    why: str


@dataclass(frozen=True)
class CompileFailed:
    filename: str
    log: str
    compiler: str


@dataclass(frozen=True)
class Unavailable:
    why: str


@dataclass(frozen=True)
class Broke:
    """An exception in the grader's own code in the child."""

    trace: str


@dataclass(frozen=True)
class Done:
    pass


def _serve(conn, job: Job, scratch) -> None:
    """The child: open the backend, compile, then run the stages, reporting everything.
    scratch: the one directory the CPU backend's confined child may write in."""
    send = conn.send
    try:
        backend = open_backend(job.backend, scratch)
        references = list({s.reference for s in job.stages if isinstance(s, Time) and s.reference})
        every_term = any(isinstance(s, Check) and s.every_term for s in job.stages)
        every = [job.spec.every_term] if every_term else []
        launch, *loaded = backend.load([job.spec, *references, *every])
        launches = dict(zip(references + every, loaded))
    except CompileError as e:
        return send(CompileFailed(e.filename, e.log, e.compiler))
    except BackendUnavailable as e:
        return send(Unavailable(str(e)))
    except LaunchRefused as e:
        return send(Refused(str(e)))
    except Exception:
        return send(Broke(traceback.format_exc(limit=4)))
    send(
        Ready(
            backend.device,
            backend.device_name,
            backend.peak_gflops,
            backend.tf32_peak_gflops,
            backend.confinement,
        )
    )
    # Turns on the device: a check's steps beside other checks, a timing alone; or,
    # for a job that runs alone, one turn alone around everything.
    whole, check_turn, timing_turn = contextlib.nullcontext, backend.shared, backend.alone
    if job.alone:
        whole, check_turn, timing_turn = backend.alone, _no_turn, _no_turn
    try:
        with whole():
            _run_stages(job, backend, launch, launches, send, check_turn, timing_turn)
    except backend.crashes as e:
        return send(Crashed(explain_cuda_error(e), explain_cuda_error(e, advice=False)))
    except Exception:
        return send(Broke(traceback.format_exc(limit=4)))
    send(Done())


def _run_stages(job: Job, backend, launch, launches, send, check_turn, timing_turn) -> None:
    right = True
    for index, stage in enumerate(job.stages):
        # Each stage its own inputs: no timing sees what an earlier one saw.
        seed = int(np.random.SeedSequence([job.seed, index]).generate_state(1)[0])
        if isinstance(stage, Check):
            spec = job.spec.every_term if stage.every_term else job.spec
            events = checker.iter_suite(
                backend.xp,
                launches[spec] if stage.every_term else launch,
                stage.shapes,
                seed,
                backend.sync,
                checker.BUDGETS[backend.name],
                job.spec.input_roundoff,
                mapping.clues_for(spec),
                backend.clock,
                spec.leaves_c_unread,
            )
            for event in _in_turns(check_turn, backend.sync, events):
                if isinstance(event, CaseResult) and stage.every_term:
                    event = replace(event, under=every_term_label(job.spec))
                right &= not isinstance(event, CaseResult) or event.ok
                send(event)
        elif right:
            kernels = {"yours": launch}
            if stage.reference:
                kernels["reference"] = launches[stage.reference]
            with timing_turn():
                results = timing.measure(
                    backend,
                    kernels,
                    stage.size,
                    seed,
                    send,
                    stage.repeats,
                    job.spec.input_roundoff,
                )
            send(Measured(results))


_no_turn = contextlib.nullcontext  # inside a turn that the whole job holds


def _in_turns(turn, sync, events):
    """The checker's events, computed in turns on the device (shared ones, beside other
    checks): a turn per step (drawing a case and launching it; judging it), so that a
    timing waits for one step at most. A case is announced (Started) in the turn that
    launches it: the parent's clock for the launch starts there, and a wait for a turn
    is not the kernel's time. Each step's device work ends inside its turn: drawing
    inputs queues work that would otherwise run on into a timing that starts next."""
    while True:
        with turn():
            event = next(events, None)
            while isinstance(event, Started):
                yield event  # to be sent at once: its launch follows, in this turn
                event = next(events, None)
            sync()
        if event is None:
            return
        yield event


# Every class a child of this module may send (child.Child refuses anything else).
MESSAGES = (
    Ready, Measured, Crashed, Refused, CompileFailed, Unavailable, Broke, Done,
    Started, Ran, Skipped, CaseResult, Shape, timing.TimedLaunch, timing.Measurement,
)  # fmt: skip


# ---- what the parent makes of it -----------------------------------------------------------


@dataclass
class Outcome:
    report: Report
    measurements: list[dict[str, timing.Measurement]] = field(default_factory=list)
    device_name: str = ""
    peak_gflops: float | None = None  # to FP32 accuracy
    tf32_peak_gflops: float | None = None  # from TF32 inputs
    crashed: bool = False  # the kernel crashed in a case (not in a timing)
    # The localizer's builds, started at the first failing case (localize.prepare), so
    # that they compile while the other cases run.
    prepared: object = None
    # The case the kernel crashed in or did not finish, if any.
    stopped: tuple[Shape, float] | None = None
    hung: Hung | None = None  # the launch that did not finish, if one did not
    # The error without its advice, where a line the localizer confirms replaces it.
    plain_error: str = ""


def run(job: Job, case_timeout_s: float = CASE_TIMEOUT_S) -> Outcome:
    """Run job in a child process. Raises CompileError, BackendUnavailable (the
    backend cannot run this kernel here), gpu.NoGPU or GraderFault."""
    if job.backend == "gpu":
        gpu.require("running a kernel on the GPU")
    report = Report(
        kernel=job.spec.label,
        device=f"the {job.backend.upper()}",
        seed=job.seed,
        tolerance=checker.describe_tolerance(job.spec.input_roundoff),
    )
    outcome = Outcome(report)
    with isolation.scratch() as scratch:
        with _turn(job):
            printed = [_run_child(job, case_timeout_s, outcome, scratch)]
        if not job.alone and (outcome.hung or (outcome.crashed and job.backend == "gpu")):
            # Processes that share a GPU share its faults: on an H100 graded with 8
            # workers, a correct kernel "crashed" (cudaErrorLaunchFailure) at
            # 4095x4097x4093, and faulting kernels looped in other processes left that
            # GPU needing a reset. And a machine's other work slows a launch down: three
            # copies of step 03's reference graded on a loaded CPU, one ran out of its
            # 10 s. So a crash or a launch that runs out is the kernel's only if it
            # happens again with the device to itself: the job runs once more, alone,
            # in a fresh child, and that run's verdicts are the ones that count.
            first, device = report.error, job.backend.upper()
            report = replace(report, cases=[], skipped=[], error="", notes=[])
            outcome = Outcome(report)
            alone = replace(job, alone=True)
            with _turn(alone):
                printed.append(_run_child(alone, case_timeout_s, outcome, scratch))
            report.notes.append(
                f"the first run stopped ({first}) while other work shared the {device}; "
                f"these verdicts are from a second run, {_ALONE[job.backend]}"
            )
        if outcome.hung and outcome.hung.starved:
            raise GraderFault(_starved(outcome.hung))
        if stopped_while_timed(report):
            # A kernel that hangs or crashes only when timed loses its speed points,
            # and nothing else: the checks after the timing run in a fresh child.
            timed = next(i for i, s in enumerate(job.stages) if isinstance(s, Time))
            timed += len(outcome.measurements)
            rest = tuple(s for s in job.stages[timed:] if isinstance(s, Check))
            if rest:
                after = Outcome(Report(report.kernel, report.device, report.seed))
                checks = replace(job, stages=rest)
                printed.append(_run_child(checks, case_timeout_s, after, scratch))
                report.cases += after.report.cases
                report.skipped += after.report.skipped
                if after.report.error:
                    report.error += f"; then, {after.report.error}"
        _check_bounds(job, report, scratch)
        _diagnose(job, outcome, scratch)
    if any(printed):
        report.notes.append("\n".join(filter(None, printed)))
    return outcome


# What a job run alone has to itself: a GPU, or of the CPUs, what the grader's other
# jobs would have used (a machine's other work goes on; see Child.receive's own_time).
_ALONE = {"gpu": "with the GPU to itself", "cpu": "with the grader's other CPU jobs stopped for it"}


def _turn(job: Job):
    """The parent's turn on the CPU for a CPU job's run (autograder.run.gpu_lock): beside
    the grader's other CPU jobs, or alone. A GPU job's child takes its own turns."""
    if job.backend != "cpu":
        return contextlib.nullcontext()
    return gpu_lock.alone(gpu_lock.CPU) if job.alone else gpu_lock.shared(gpu_lock.CPU)


def _starved(hung: Hung) -> str:
    """Why a launch that ran out says nothing of the kernel: it never had its limit."""
    return (
        f"{hung.doing}: the machine was too busy to tell whether the kernel is slow or "
        f"stuck: in {hung.wall_s:.0f} s on the clock it had a CPU for "
        f"{hung.wall_s - hung.held_back_s:.1f} s of its {hung.seconds:.0f} s, though the "
        "grader's other work had stopped for it; grade again on a less loaded machine"
    )


def stopped_while_timed(report: Report) -> bool:
    """Did the run stop in a timed launch (the kernel hung, crashed or was killed)?"""
    return report.error.startswith(tuple(_TIMING.values()))


def _run_child(job: Job, case_timeout_s: float, outcome: Outcome, scratch) -> str:
    """Run job's stages in one child, filling outcome in; what the kernel printed."""
    report = outcome.report
    doing, timeout = f"starting the {job.backend.upper()} and compiling", SETUP_TIMEOUT_S
    started: Started | None = None  # the case whose kernel is running
    timed: str | None = None  # which kernel is being timed, until its timings come back
    seconds_per_flop = 0.0  # the kernel's best rate so far, to tell slow from stuck
    with Child(_serve, job, scratch, messages=MESSAGES) as child:
        while True:
            launching = timeout == case_timeout_s
            own_time = launching and job.backend == "cpu"
            message = child.receive(timeout, doing, own_time)
            if isinstance(message, Hung):
                if not launching:
                    raise GraderFault(f"the grader got stuck {doing} (no word in {timeout:.0f} s)")
                report.error = _hung(
                    message, started, seconds_per_flop, job.spec.waits_on_mbarriers
                )
                outcome.stopped, outcome.hung = _case_of(started), message
                break
            if isinstance(message, Died):
                if timeout != case_timeout_s and message.exitcode != -signal.SIGSYS:
                    raise GraderFault(f"the grader's process died {doing} ({message.why})")
                report.error = f"{doing}: the process running the kernel died ({message.why})"
                break
            if isinstance(message, Forged):
                report.error = f"{doing}: {message.why}"
                break
            if isinstance(message, (Started, timing.TimedLaunch)):
                started = message if isinstance(message, Started) else None
                timed = None if started else _TIMING[message.kernel]
                doing = message.label if started else timed
                timeout = case_timeout_s
                continue
            doing, timeout = "judging the result", JUDGE_TIMEOUT_S
            if isinstance(message, Ran):
                if message.seconds and started:
                    rate = message.seconds / started.flops
                    seconds_per_flop = min(seconds_per_flop or rate, rate)
            elif isinstance(message, CaseResult):
                report.cases.append(_with_launch_hint(message, job.spec))
                if not message.ok and outcome.prepared is None and _localizable(job):
                    hints = localize.Hints.of([message], job.spec)
                    outcome.prepared = localize.prepare(job.spec, hints)
            elif isinstance(message, Skipped):
                report.skipped.append(message)
            elif isinstance(message, Measured):
                outcome.measurements.append(message.results)
                timed = None
            elif isinstance(message, Ready):
                report.device, report.confinement = message.device, message.confinement
                outcome.device_name, outcome.peak_gflops = message.name, message.peak_gflops
                outcome.tf32_peak_gflops = message.tf32_peak_gflops
            elif isinstance(message, Crashed):
                # A timed launch's fault surfaces when its output is checked: it is the
                # timing's, not the judging's.
                where = _doing(started, timed or doing)
                report.error = f"{where}: {message.why}"
                outcome.plain_error = f"{where}: {message.plain}"
                outcome.crashed = timed is None
                outcome.stopped = _case_of(started) if timed is None else None
                break
            elif isinstance(message, Refused):
                report.error = f"not run: {message.why}"
                break
            elif isinstance(message, CompileFailed):
                raise CompileError(message.filename, message.log, message.compiler)
            elif isinstance(message, Unavailable):
                raise BackendUnavailable(message.why)
            elif isinstance(message, Broke):
                raise GraderFault(f"the grader broke:\n{message.trace}")
            elif isinstance(message, Done):
                break
    return child.output.summary()


CPU_BOUNDS = "every access and every read of shared memory checked (the CPU backend)"


def _check_bounds(job: Job, report: Report, scratch) -> None:
    """What the cases cannot see on a GPU (a read outside A or B whose value goes
    unused, a race that happens not to show): the CPU backend checks every access as
    it runs; a GPU run that checked EXACT_SIZE runs it once more on exact-size buffers
    under compute-sanitizer (autograder.judge.sanitizer), as one more case."""
    if job.backend == "cpu":
        report.bounds = CPU_BOUNDS
        return
    checked = any(isinstance(s, Check) and EXACT_SIZE in s.shapes for s in job.stages)
    if not checked:
        return
    if report.error:
        report.bounds = "not checked, since the run stopped"
        return
    executable = sanitizer.find()
    if executable is None:
        report.bounds = (
            "NOT CHECKED on this GPU: compute-sanitizer (part of the CUDA toolkit) was not "
            "found; `--backend cpu` checks every access"
        )
        return
    try:
        found = sanitizer.sanitize(job.spec, EXACT_SIZE, Path(scratch), executable)
    except sanitizer.SanitizerFailed as e:
        report.bounds = f"NOT CHECKED: {e}"
        return
    except sanitizer.SanitizerTimedOut as e:
        found = str(e)
    tools = " and ".join(sanitizer.tools_for(job.spec))
    how = f"exact-size buffers, compute-sanitizer {tools}"
    report.bounds = f"{EXACT_SIZE} run again on {how}"
    report.cases.append(CaseResult(EXACT_SIZE, beta_of(EXACT_SIZE), not found, found, under=how))
    if not found:  # NaN in C came from somewhere other than the padding around A and B
        report.cases = [
            replace(c, message=c.message.replace(NAN_FROM_OUTSIDE, NAN_FROM_UNWRITTEN))
            for c in report.cases
        ]
    _check_on_the_cpu(job, report)


CPU_CHECKED = "the CPU backend, every access and every thread's own array checked"


def _check_on_the_cpu(job: Job, report: Report) -> None:
    """EXACT_SIZE once more on the CPU backend, where it can run the kernel: an index
    past the end of a thread's own array, a race the GPU's order hid, a float read
    before it had a value, are wrong there every time, and right on a GPU only by luck.
    A kernel the CPU backend cannot run (tensor cores) is refused there, and left so."""
    cpu_job = Job(job.spec, "cpu", (Check((EXACT_SIZE,)),), job.seed, diagnose=False)
    try:
        cases = run(cpu_job).report.cases
    except (BackendUnavailable, CompileError, GraderFault):
        return  # no compiler here, or a construct it lacks: the GPU's own checks stand
    report.bounds += f"; {EXACT_SIZE} run on {CPU_CHECKED}"
    report.cases += [replace(c, under=CPU_CHECKED) for c in cases if not c.ok]


# Cases the localizer runs for every repair it tries: the smallest failing ones first
# (most repairs fail there, fast), then a few that passed (a repair must keep them).
LOCALIZE_FAILING, LOCALIZE_PASSING = 4, 3


def _localizable(job: Job) -> bool:
    """Whether the CPU backend's diagnostic builds may run this kernel: a GEMM's or a
    reduction's (autograder.judge.trials), with a C++ compiler here (on a GPU too: the
    evidence comes from the CPU)."""
    return job.spec.contract in ("gemm", "reduce")


def _diagnose(job: Job, outcome: Outcome, scratch) -> None:
    """The failing cases' causes (autograder.judge.diagnosis), from the evidence the CPU
    backend's diagnostic build and its repairs give (autograder.judge.localize); for a
    kernel that did not finish a case, where one change makes it finish right."""
    report = outcome.report
    failing = [c for c in report.cases if not c.ok]
    on_cpu = lambda c: c.shape not in checker.CPU_BUDGET.seconds  # noqa: E731
    wrong = list(dict.fromkeys((c.shape, c.beta) for c in sorted(filter(on_cpu, failing), key=_size)))
    wrong = wrong[:LOCALIZE_FAILING]
    stopped = outcome.stopped and outcome.stopped[0] not in checker.CPU_BUDGET.seconds
    finding = None
    # A mistake that only the every-term parameters show is looked for in that kernel.
    spec = job.spec
    if failing and job.spec.every_term and all(c.under.startswith("at ") for c in failing):
        spec = job.spec.every_term
    if (wrong or stopped) and job.diagnose and _localizable(job):
        hints = localize.Hints.of(report.cases, spec)
        prepared = outcome.prepared if spec is job.spec else None
        prepared = prepared or localize.prepare(spec, hints)
        passing = sorted((c for c in report.cases if c.ok and on_cpu(c)), key=_size)
        finding = localize.localize(
            spec,
            prepared,
            [outcome.stopped] * bool(stopped) + wrong,
            [(c.shape, c.beta) for c in passing[:LOCALIZE_PASSING]],
            job.seed,
            scratch,
            hints,
        )
    causes = diagnosis.diagnose(report.cases, finding, job.spec.filename)
    report.cases = diagnosis.with_causes(report.cases, causes)
    if stopped and (cause := diagnosis.where_it_stopped(finding, job.spec.filename)):
        # A line found by a repair says where to look: the general advice would not.
        confirmed = outcome.plain_error and diagnosis.repaired(finding)
        report.error = f"{outcome.plain_error if confirmed else report.error}; {cause}"
        report.stopped_by = cause


def _size(case: CaseResult) -> int:
    return case.shape.flops


def _case_of(started: Started | None) -> tuple[Shape, float] | None:
    """The (shape, beta) of a case from its Started label ("17x19x3, beta=0")."""
    m = started and re.match(r"(\d+)x(\d+)x(\d+), beta=(-?[\d.]+)$", started.label)
    return (Shape(*map(int, m.groups()[:3])), float(m.group(4))) if m else None


def _with_launch_hint(case: CaseResult, spec: KernelSpec) -> CaseResult:
    """Elements never written by a kernel launched with a hand-given tile: the tile may
    be larger than what one block of the kernel covers, leaving gaps in the grid."""
    if case.ok or not spec.launch_by_hand or "never written" not in case.message:
        return case
    rows, cols = spec.geometry.tile
    hint = (
        f"; or the launch's tile is too large: --tile {rows}x{cols} gives one block per "
        f"{rows}x{cols} of C, so a block of this kernel must cover that much"
    )
    return replace(case, message=case.message + hint)


def _doing(started: Started | None, doing: str) -> str:
    return started.label if started else doing


_TIMING = {"yours": "timing the kernel", "reference": "timing the step's reference kernel"}


# Why a kernel that is not slow never finishes, most likely: a wait on an mbarrier
# (steps 12 and 13) whose phase never completes, or else a loop that never ends.
_STUCK_ON_A_BARRIER = (
    "a wait on an mbarrier that never completes? check each wait's parity (a buffer's "
    "phase flips once per round of the ring) and that every thread the barrier counts "
    "arrives on it"
)
_STUCK_IN_A_LOOP = "an endless loop? check that every loop's counter reaches its bound"


def _hung(message: Hung, started: Started | None, seconds_per_flop: float, mbarriers: bool) -> str:
    """Slow or stuck? What the kernel's speed on the cases before says about this one.
    mbarriers: the kernel waits on mbarriers (KernelSpec.waits_on_mbarriers)."""
    text = f"{message.doing}: did not finish within {message.seconds:.0f} s"
    if message.held_back_s >= 0.05 * message.seconds:  # the machine's other work showed
        text += (
            f" of its own time ({message.wall_s:.0f} s on the clock, {message.held_back_s:.0f} s "
            "of which it waited for a CPU that other work had)"
        )
    expected = seconds_per_flop * started.flops if started and seconds_per_flop else None
    if expected and expected > message.seconds / 2:
        return (
            f"{text}; at the speed it ran the cases before ({started.flops / expected / 1e9:.2g} "
            f"GFLOP/s) it needs about {expected:.0f} s here: it is too slow, not stuck"
        )
    hint = _STUCK_ON_A_BARRIER if mbarriers else _STUCK_IN_A_LOOP
    if expected:
        return f"{text}, though at its speed on the cases before it needs {expected:.2g} s ({hint})"
    return f"{text} ({hint})"


def check(
    spec: KernelSpec,
    shapes=None,
    seed: int | None = None,
    case_timeout_s: float = CASE_TIMEOUT_S,
    backend: str = "gpu",
) -> Report:
    """Run spec on `shapes` (by default the suite, or the shapes the spec is written
    for) in a child process on the "gpu" or the "cpu"; its Report.

    Raises CompileError, gpu.NoGPU, BackendUnavailable or GraderFault.
    """
    seed = fresh_seed() if seed is None else seed
    if shapes is None:
        shapes = tuple(Shape(*s) for s in spec.shapes) if spec.shapes else SUITE
    return run(Job(spec, backend, checks(spec, tuple(shapes)), seed), case_timeout_s).report
