"""What the exercise notebooks call: check a kernel, and the graded tests.

    from autograder import exercise
    exercise.check("03_smem_tiling.cu")               # the full report, as the CLI prints it
    exercise.assert_correct("03_smem_tiling.cu", "odd")  # a grade cell: raises with the reason

Every run happens in a child process with a time limit (see sandbox), so a
kernel that crashes or hangs fails its own test and the notebook goes on.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from . import gpu, registry, sandbox
from .checker import LARGE, MEDIUM, SMALL, Shape
from .compiler import CompileError
from .kernel import KernelSpec, from_file

# Shapes every tile of the ladder divides exactly: a kernel can be right here
# and still wrong at the edges, which is what the "odd" suite is for.
WHOLE_TILES = (Shape(128, 128, 64, "one block tile"), Shape(256, 384, 128, "whole tiles"))
SUITES = {"whole tiles": WHOLE_TILES, "odd": SMALL + MEDIUM + LARGE}
GRADING = Path(__file__).resolve().parent.parent / "grading.json"
NOT_IMPLEMENTED = "not implemented yet"
CASE_TIMEOUT_S = 10.0


class NotImplementedYet(AssertionError):
    """The learner has not replaced the #error stub yet."""


def backend(requested: str = "auto") -> str:
    """Where kernels run: `requested`, or for "auto" the GPU where CuPy sees one, else the CPU."""
    if requested != "auto":
        return requested
    return "cpu" if gpu.unavailable_reason() else "gpu"


def setup() -> None:
    """One line on where kernels will run."""
    reason = gpu.unavailable_reason()
    if reason is None:
        info = gpu.device_info()
        print(f"Kernels run on the {info.name} ({info.arch}). All checks and timings are on.")
    else:
        print(
            f"No GPU here ({reason}). Kernels are checked on the CPU, with the same messages; "
            "timings need a GPU (on Colab: Runtime > Change runtime type > T4 GPU)."
        )


def _report(spec: KernelSpec, shapes, backend_name=None, case_timeout_s=CASE_TIMEOUT_S):
    try:
        return sandbox.check(
            spec, shapes=shapes, case_timeout_s=case_timeout_s, backend=backend_name or backend()
        )
    except CompileError as e:
        if NOT_IMPLEMENTED in e.log:
            raise NotImplementedYet(
                f"{NOT_IMPLEMENTED}: replace the #error line in {e.filename} with your code"
            ) from None
        raise


def check(path, quick: bool = False):
    """Run the kernel in `path` on the suite and print the report (what `check` prints)."""
    shapes = SMALL if quick else SMALL + MEDIUM + LARGE
    try:
        report = _report(from_file(path), shapes)
    except (NotImplementedYet, CompileError) as e:
        print(e)
        return None
    print(report)
    return report


def correctness_problems(
    spec: KernelSpec, suites, backend_name=None, case_timeout_s=CASE_TIMEOUT_S
) -> dict[str, str | None]:
    """For each suite ('whole tiles', 'odd'): None if the kernel is right on every
    shape of it, else what is wrong. One run covers them all (one compilation, and a
    hang costs one time limit). Raises CompileError or NotImplementedYet."""
    shapes = list(dict.fromkeys(shape for suite in suites for shape in SUITES[suite]))
    report = _report(spec, shapes, backend_name, case_timeout_s)
    ran = {c.shape for c in report.cases}
    problems = {}
    for suite in suites:
        failures = [f"{c.label}: {c.message}" for c in report.failures if c.shape in SUITES[suite]]
        if report.error and not ran.issuperset(SUITES[suite]):  # the run stopped before its end
            failures.append(report.error)
        problems[suite] = (
            f"{len(failures)} failing: " + "\n".join(failures[:5]) if failures else None
        )
    return problems


def correctness_problem(spec: KernelSpec, suite: str, **options) -> str | None:
    return correctness_problems(spec, [suite], **options)[suite]


def assert_correct(path, suite: str) -> None:
    """A grade cell: the kernel is right on every shape of `suite` ('whole tiles' or 'odd')."""
    problem = correctness_problem(from_file(path), suite)
    if problem:
        raise AssertionError(problem)


def _grading() -> dict:
    return json.loads(GRADING.read_text())


def threshold(
    step: registry.Step, gpu_name: str, reference_gflops: float, config: dict | None = None
) -> tuple[float, str]:
    """The GFLOP/s a kernel must reach, and where that number comes from (config:
    grading.json, read here unless given)."""
    config = config or _grading()
    absolute = config.get("absolute_gflops", {}).get(gpu_name, {})
    if step.id in absolute:
        return float(absolute[step.id]), f"set for the {gpu_name} in {GRADING.name}"
    fraction = config["fraction_of_reference"]
    return fraction * reference_gflops, (
        f"{fraction:.0%} of the reference kernel's {reference_gflops:.0f} GFLOP/s, "
        f"timed just now on this {gpu_name}"
    )


@dataclass(frozen=True)
class Timing:
    """One timing of a kernel beside its step's reference, and the verdict."""

    gpu: str
    size: tuple[int, int, int]
    gflops: float
    reference_gflops: float
    minimum: float
    source: str  # where the minimum comes from

    @property
    def fast_enough(self) -> bool:
        return self.gflops >= self.minimum

    def __str__(self) -> str:
        M, N, K = self.size
        relation = "at least" if self.fast_enough else "the minimum is"
        verdict = f"{relation} {self.minimum:.0f} ({self.source})"
        return f"{self.gflops:.0f} GFLOP/s at {M}x{N}x{K}: {verdict}"


def _require_gpu() -> None:
    reason = gpu.unavailable_reason()
    if reason:
        raise AssertionError(f"the performance test needs a GPU ({reason}): it scores zero here")


def timing(spec: KernelSpec) -> Timing:
    """Time the kernel and its step's reference in one child process on this GPU.
    Raises AssertionError when it cannot be timed (no GPU, a compile error, a crash)."""
    _require_gpu()
    step = _step_of(spec)
    config = _grading()
    size = tuple(config["size"])
    try:
        gpu_name, gflops = sandbox.measure(
            {"yours": spec, "reference": KernelSpec.from_step(step)}, size
        )
    except CompileError as e:
        raise AssertionError(str(e)) from None
    except RuntimeError as e:
        raise AssertionError(f"timing failed: {e}") from None
    minimum, source = threshold(step, gpu_name, gflops["reference"], config)
    return Timing(gpu_name, size, gflops["yours"], gflops["reference"], minimum, source)


def not_timed(wrong: str) -> str:
    """The speed test's verdict on a kernel that is wrong on whole tiles: a wrong
    kernel can be arbitrarily fast, so it is not timed."""
    return "not timed, because it is not right on whole tiles: " + wrong.split("\n")[0]


def assert_fast_enough(path) -> None:
    """A grade cell: the kernel is right on whole tiles and reaches the step's minimum
    GFLOP/s on this GPU."""
    _require_gpu()
    spec = from_file(path)
    wrong = correctness_problem(spec, "whole tiles")
    if wrong:
        raise AssertionError(not_timed(wrong))
    measured = timing(spec)
    if not measured.fast_enough:
        raise AssertionError(str(measured))
    print(measured)


def _step_of(spec: KernelSpec) -> registry.Step:
    for s in registry.STEPS:
        if spec.filename.startswith(s.id + "_") or spec.name_expression.startswith(s.kernel):
            return s
    raise ValueError(f"{spec.filename} is not named after a step (e.g. 03_smem_tiling.cu)")


# Step 00: Python functions, checked in the notebook's own process.
PY_SHAPES = {
    "small": ((2, 3, 4), (8, 8, 8), (16, 12, 10)),
    "odd": ((1, 1, 1), (1, 7, 5), (7, 1, 3), (13, 17, 3), (31, 29, 37)),
}


def _refuse_stub(fn) -> None:
    import inspect

    if NOT_IMPLEMENTED in inspect.getsource(fn):
        raise NotImplementedYet(
            f"{NOT_IMPLEMENTED}: write {fn.__name__} where the #error comment stands"
        )


def _matmul_problem(fn, M: int, N: int, K: int) -> str | None:
    import numpy as np

    rng = np.random.default_rng()
    A, B = rng.standard_normal((M, K)), rng.standard_normal((K, N))
    got = fn(A.tolist(), B.tolist())
    try:
        got = np.asarray(got, dtype=np.float64)
    except (TypeError, ValueError):
        return f"{M}x{N}x{K}: returned {type(got).__name__}, not an M x N list of rows"
    if got.shape != (M, N):
        return f"{M}x{N}x{K}: the result is {got.shape}, should be ({M}, {N})"
    expected = A @ B
    wrong = ~np.isclose(got, expected, rtol=1e-9, atol=1e-9)
    if wrong.any():
        i, j = (int(v) for v in np.argwhere(wrong)[0])
        return (
            f"{M}x{N}x{K}: {int(wrong.sum())} of {M * N} elements wrong, first C[{i}][{j}] = "
            f"{got[i, j]:.6g}, should be {expected[i, j]:.6g}"
        )
    return None


def assert_matmul(fn, suite: str) -> None:
    """A grade cell for step 00: fn(A, B) is the product on every shape of the suite."""
    _refuse_stub(fn)
    problems = [p for shape in PY_SHAPES[suite] if (p := _matmul_problem(fn, *shape))]
    if problems:
        raise AssertionError("; ".join(problems))


def assert_gflops(fn) -> None:
    _refuse_stub(fn)
    for M, N, K, seconds in ((1000, 1000, 1000, 2.0), (3, 5, 7, 1e-6)):
        got, expected = fn(M, N, K, seconds), 2 * M * N * K / seconds / 1e9
        if got is None or abs(got - expected) > 1e-9 * expected:
            raise AssertionError(
                f"gflops({M}, {N}, {K}, {seconds}) is {got}, should be "
                f"{expected:g}: count 2 FLOPs per multiply-add"
            )


def check_python(matmul, matmul_ikj, gflops) -> None:
    """Step 00's check cell: right or wrong, and how fast against NumPy."""
    import time

    import numpy as np

    for fn in (matmul, matmul_ikj):
        try:
            _refuse_stub(fn)
            problems = [
                p for s in PY_SHAPES["small"] + PY_SHAPES["odd"] if (p := _matmul_problem(fn, *s))
            ]
        except NotImplementedYet as e:
            print(e)
            continue
        print(f"{fn.__name__}: " + ("; ".join(problems) if problems else "right on every shape"))
    n = 96
    A = np.random.default_rng().standard_normal((n, n))
    rows = []
    for name, run in (
        ("matmul (i-j-k)", lambda: matmul(A.tolist(), A.tolist())),
        ("matmul_ikj (i-k-j)", lambda: matmul_ikj(A.tolist(), A.tolist())),
        ("NumPy (BLAS)", lambda: A @ A),
    ):
        start = time.perf_counter()
        run()
        seconds = time.perf_counter() - start
        rows.append((name, seconds))
    for name, seconds in rows:
        rate = gflops(n, n, n, seconds) if gflops(1, 1, 1, 1.0) is not None else None
        shown = f"{rate:.4f} GFLOP/s" if rate is not None else "(write gflops to see GFLOP/s)"
        print(f"{name:<20} {seconds * 1e3:9.2f} ms  {shown}")
