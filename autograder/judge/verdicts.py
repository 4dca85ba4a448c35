"""Is a kernel right, and fast enough? One verdict for notebooks, `grade` and pytest alike.

`evaluate` runs the correctness suites a test needs and, where asked, the
verified timing (autograder.judge.job) in one child process, and turns what came
back into a verdict per suite and a speed verdict. The points for each live
in autograder.grade.rubric; the notebooks' grade cells (autograder.course.exercise), the
batch grader (autograder.grade.grading) and the pytest autograder all come here.
"""

from __future__ import annotations

import contextlib
import json
import statistics
from dataclasses import dataclass, field
from pathlib import Path

from ..ladder import registry
from ..run import gpu
from ..run.compiler import CompileError, compile_for_arch
from ..run.kernel import KernelSpec
from .causes import by_cause, listed
from .checker import LARGE, MEDIUM, SMALL, Report, Shape, fresh_seed
from .job import GraderFault, Job, Time, checks, run, stopped_while_timed
from .timing import Samples

# Shapes every tile of the ladder divides exactly: a kernel can be right here
# and still wrong at the edges, which is what the "odd" suite is for.
WHOLE_TILES = (Shape(128, 128, 64, "one block tile"), Shape(256, 384, 128, "whole tiles"))
SUITES = {"whole tiles": WHOLE_TILES, "odd": SMALL + MEDIUM + LARGE}
GRADING = Path(__file__).resolve().parents[2] / "grading.json"
NOT_IMPLEMENTED = "not implemented yet"
CASE_TIMEOUT_S = 10.0  # what one launch of a kernel may take in a graded test


class NotImplementedYet(AssertionError):
    """The learner has not replaced the #error stub yet."""


def grading_config() -> dict:
    return json.loads(GRADING.read_text())


def step_of(spec: KernelSpec) -> registry.Step:
    step = registry.step_of_kernel(spec.filename, spec.name_expression)
    if step is None:
        raise ValueError(f"{spec.filename} is not named after a step (e.g. 03_smem_tiling.cu)")
    return step


def out_of_reach(step: registry.Step, backend: str) -> str:
    """Why no test of `step` can run on `backend` here, or "" when they can. A kernel
    built for an architecture-specific target (sm_90a: steps 12 and 13) runs on that
    architecture's GPUs alone, and the CPU backend cannot run it."""
    if not step.target or (backend == "gpu" and gpu.unavailable_reason()):
        return ""  # (without a GPU, the GPU backend says so itself)
    if backend == "gpu":
        info = gpu.device_info()
        if step.runs_on_gpu(info.arch):
            return ""
        here = f"this GPU is a {info.name} ({info.arch})"
    else:
        here = "kernels run on the CPU backend here, which cannot run it"
    return f"{step.name} runs on an {step.target} GPU alone (Hopper: an H100 or H200); {here}"


def compile_for_target(spec: KernelSpec) -> str:
    """Compile a kernel for its architecture-specific target with NVRTC, which needs no
    GPU: where it cannot run (out_of_reach), its stub or compile errors still show.
    What it compiled to, in words (registers, spills). Raises CompileError or
    NotImplementedYet."""
    with _stub_said():
        compiled = compile_for_arch(spec.source, [spec.name_expression], spec.target, spec.filename)
    return f"compiled: {compiled.resources[spec.name_expression]}"


@contextlib.contextmanager
def _stub_said():
    """A compile error that is the #error stub becomes NotImplementedYet."""
    try:
        yield
    except CompileError as e:
        if NOT_IMPLEMENTED in e.log:
            raise NotImplementedYet(
                f"{NOT_IMPLEMENTED}: replace the #error line in {e.filename} with your code"
            ) from None
        raise


def threshold(
    step: registry.Step, gpu_name: str, reference_gflops: float, config: dict
) -> tuple[float, str]:
    """The GFLOP/s a kernel must reach, and where that number comes from."""
    absolute = config.get("absolute_gflops", {}).get(gpu_name, {})
    if step.id in absolute:
        return float(absolute[step.id]), f"set for the {gpu_name} in {GRADING.name}"
    fraction = config["fraction_of_reference"]
    return fraction * reference_gflops, (
        f"{fraction:.0%} of the reference kernel's {reference_gflops:.0f} GFLOP/s, "
        f"timed just now on this {gpu_name}"
    )


@dataclass(frozen=True)
class Speed:
    """The speed test's verdict on one kernel."""

    passed: bool
    message: str
    gflops: list[float] = field(default_factory=list)  # the median of each timing
    minimum: float | None = None  # set only when the timings were accepted
    # Beside each accepted timing: the reference kernel's GFLOP/s timed with it, and the
    # relative standard error of the kernel's launches (how far another timing may move).
    reference: list[float] = field(default_factory=list)
    error: list[float] = field(default_factory=list)


def not_timed(wrong: str) -> Speed:
    """A wrong kernel can be arbitrarily fast, so it is not timed."""
    return Speed(
        False, "not timed, because it is not right on whole tiles: " + wrong.split("\n")[0]
    )


def judge_speed(outcome, step: registry.Step, config: dict) -> Speed:
    """The verdict on the timings of a kernel and its reference (judge.Outcome)."""
    timings = outcome.measurements
    for timed in timings:
        if timed["reference"].wrong:
            raise GraderFault(
                f"the reference kernel's timed output was wrong: {timed['reference'].wrong}"
            )
        if timed["yours"].wrong:
            return Speed(
                False,
                f"a timed launch's output was wrong ({timed['yours'].wrong}): a kernel must "
                "compute the same product whenever it runs, so the speed test scores zero",
            )
    for timed in timings:
        if timed["reference"].throttled:  # steady but slow: the noise rule cannot see it
            raise GraderFault(f"{timed['reference'].throttled}; grade again on a cool, idle GPU")
        # The reference is the course's own kernel: if its launches disagree, the GPU
        # does (throttling, another process on it), and no verdict can be trusted.
        # A submission's own noise is its own: its median counts as it is.
        steady = Samples(timed["reference"].seconds)
        if steady.noisy:
            tries = timed["reference"].tries
            raise GraderFault(
                f"the reference kernel's {len(steady.seconds)} timed launches varied by "
                f"{steady.noise:.0%} (standard deviation over mean)"
                f"{f', the last of {tries} tries' if tries > 1 else ''}: this GPU is too "
                "noisy to decide (throttling, or another process on it); grade again on a "
                "quiet GPU"
            )
    yours = sorted(t["yours"].gflops for t in timings)
    reference = statistics.median(t["reference"].gflops for t in timings)
    gflops, (M, N, K) = statistics.median(yours), timings[0]["yours"].size
    # A step judged with TF32 inputs (11, 12) may use the tensor cores at their full
    # rate; every other step must compute to FP32 accuracy.
    peak, how = (
        (outcome.tf32_peak_gflops, "from TF32 inputs ({:.0f} GFLOP/s: its TF32 peak)")
        if step.input_roundoff
        else (
            outcome.peak_gflops,
            "to FP32 accuracy ({:.0f} GFLOP/s: its FP32 peak, or 3xTF32 on its tensor cores)",
        )
    )
    if peak and gflops > peak:
        return Speed(
            False,
            f"{gflops:.0f} GFLOP/s at {M}x{N}x{K} is more than this GPU can compute "
            f"{how.format(peak)}, so the timing is rejected and the speed test scores zero",
            [round(g, 1) for g in yours],
        )
    minimum, source = threshold(step, outcome.device_name, reference, config)
    relation = "at least" if gflops >= minimum else "the minimum is"
    launches = timings[0]["yours"].seconds
    how = f"median of {len(launches)} verified launches on fresh inputs"
    if (tries := timings[0]["yours"].tries) > 1:
        how += f", timed {tries} times: before, the reference's launches were too noisy"
    if len(timings) > 1:
        how = (
            f"the median of {len(timings)} timings, which ranged {yours[0]:.0f} to {yours[-1]:.0f}"
        )
    by_speed = sorted(timings, key=lambda t: t["yours"].gflops)  # in the order of `yours`
    return Speed(
        gflops >= minimum,
        f"{gflops:.0f} GFLOP/s at {M}x{N}x{K} ({how}): {relation} {minimum:.0f} ({source})",
        [round(g, 1) for g in yours],
        round(minimum, 1),
        [round(t["reference"].gflops, 1) for t in by_speed],
        [round(Samples(t["yours"].seconds).error, 5) for t in by_speed],
    )


@dataclass
class Evaluation:
    report: Report
    problems: dict[str, str | None]  # per suite: None when right on every shape of it
    speed: Speed | None = None  # when timing was asked for
    device: str = ""

    def not_run(self, suite: str) -> str:
        """The suite's shapes this backend never runs, said beside a pass: a grade
        earned without them says so."""
        shapes = SUITES[suite]
        unrun = [str(s) for s in self.report.skipped if s.shape in shapes]
        return "passed; " + "; ".join(unrun) if unrun else ""


def evaluate(
    spec: KernelSpec,
    suites: list[str],
    backend: str,
    case_timeout_s: float,
    timings: int = 0,
) -> Evaluation:
    """Run the suites and, with timings > 0 on a GPU, time the kernel that many times
    beside its step's reference, after its whole-tile cases (a kernel is timed only
    when it is right on whole tiles). Raises CompileError, NotImplementedYet,
    BackendUnavailable, gpu.NoGPU or GraderFault."""
    stages: list = []
    if timings:
        suites = ["whole tiles", *[s for s in suites if s != "whole tiles"]]
    for suite in suites:
        stages += checks(spec, SUITES[suite])
        if timings and suite == "whole tiles":
            config = grading_config()
            step = step_of(spec)
            reference = KernelSpec.from_step(step)
            stages += [Time(tuple(config["size"]), reference)] * timings
    with _stub_said():
        outcome = run(Job(spec, backend, tuple(stages), fresh_seed()), case_timeout_s)
    report = outcome.report
    problems = {suite: _problem(report, SUITES[suite]) for suite in suites}
    evaluation = Evaluation(report, problems, device=outcome.device_name)
    if timings:
        if problems["whole tiles"]:
            evaluation.speed = not_timed(problems["whole tiles"])
        elif not outcome.measurements or stopped_while_timed(report):
            # The run stopped before timing, or in a timed launch: no speed counts.
            evaluation.speed = Speed(False, f"not timed: {report.error}")
        else:
            evaluation.speed = judge_speed(outcome, step, config)
    return evaluation


# Causes of failure a test's message lists; the rest are counted.
MAX_CAUSES = 5


def _problem(report: Report, shapes) -> str | None:
    """None if the kernel is right on every shape of `shapes`, else what is wrong: one
    line per cause of failure (autograder.judge.causes)."""
    ran = {c.shape for c in report.cases}
    problems = listed(by_cause([c for c in report.cases if c.shape in shapes]), MAX_CAUSES)
    problems += [
        f"{s}: a suite is passed only when each of its shapes ran"
        for s in report.skipped
        if s.costs and s.shape in shapes
    ]
    if report.error and not ran.issuperset(shapes):  # the run stopped before its end
        problems.append(report.error)
    return "\n".join(problems) or None
