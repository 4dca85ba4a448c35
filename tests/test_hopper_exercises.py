"""The exercises of steps 12 and 13, graded where they run (an sm_90a GPU: an H100 or
H200): the course's own kernel handed in as a student's earns every point, and each
planted mistake in the learner's part (the consumer's loop of 12; the split and the
three products of 13) loses what it must, with a message that says why.

Elsewhere the whole grade is out of reach, which tests/test_grade.py and
tests/test_notebooks_execute.py check without a GPU."""

import subprocess
import sys
from pathlib import Path

import pytest

from autograder.grade import grading, rubric
from autograder.grade.gradebook import read_csv
from autograder.grade.submissions import Submission
from autograder.ladder import registry
from autograder.run import gpu

pytestmark = pytest.mark.gpu
ROOT = Path(__file__).resolve().parent.parent

EVERY_POINT = {t.id: t.points for t in rubric.CUDA_TESTS}
NOTHING = {t.id: 0 for t in rubric.CUDA_TESTS}

# (step, what the learner got wrong, the changes in the course's kernel (old, new, old,
# new, ...), the points it keeps, what the first test it loses says)
PLANTED = [
    ("12", "the course's kernel", None, EVERY_POINT, ""),
    (
        "12",
        "waits for the wrong phase: reads buffers before they land",
        ("bar_wait(&full[s], (t / STAGES) & 1);", "bar_wait(&full[s], ((t / STAGES) & 1) ^ 1);"),
        NOTHING,
        "a wait on an mbarrier that never completes? check each wait's parity",
    ),
    (
        "12",
        "B's fragments from the wrong k",
        ("const int k = 8 * kk + q + 4 * (i >> 1);", "const int k = 8 * kk + q;"),
        NOTHING,
        "wrong",
    ),
    (  # Whole tiles (2 and 4 slices) never reuse one of its 4 buffers: they pass.
        "12",
        "never releases a buffer: the producer waits forever",
        ("    bar_arrive(&empty[s]);\n  }\n  // [docs:mainloop-end]", "  }\n"),
        {**NOTHING, "test_whole_tiles": 3},
        "did not finish within 10 s (a wait on an mbarrier that never completes?",
    ),
    (  # Right by luck on every case: only racecheck, on a K that refills a buffer, sees
        # lane 0 release it for a warp whose other lanes may still be reading it. Whole
        # tiles and the timing have no racecheck: their points stand.
        "12",
        "one lane per warp releases the buffer",
        (
            "    bar_arrive(&empty[s]);\n  }\n  // [docs:mainloop-end]",
            "    if (lane == 0) bar_arrive(&empty[s]);\n  }\n",
            "bar_init(&empty[s], 128 * CONSUMERS);",
            "bar_init(&empty[s], 4 * CONSUMERS);",
        ),
        {**EVERY_POINT, "test_odd_shapes": 0},
        "arrives on the mbarrier that releases it, after its last read",
    ),
    (  # The tensor cores still read the buffer when the producer refills it. racecheck
        # does not see wgmma's reads; the odd shapes do, and so does the timing.
        "12",
        "releases the buffer before waiting for the wgmmas",
        (
            "    wgmma_wait<0>();\n    // Every thread",
            "    // Every thread",
            "    bar_arrive(&empty[s]);\n  }\n  // [docs:mainloop-end]",
            "    bar_arrive(&empty[s]);\n    wgmma_wait<0>();\n  }\n",
        ),
        {**NOTHING, "test_whole_tiles": 3},
        "release it after waiting for the wgmmas that read it",
    ),
    ("13", "the course's kernel", None, EVERY_POINT, ""),
    (
        "13",
        "one cross product left out: TF32 accuracy, not FP32",
        ("      wgmma_64xNx8<BM, true>(part, big[kk], descriptor(asSmall + 8 * kk));\n", ""),
        NOTHING,
        "wrong",
    ),
    (
        "13",
        "the small parts left out",
        ("small = to_tf32(x - rounded);", "small = 0u;"),
        NOTHING,
        "wrong",
    ),
    (  # part keeps the slices before it: acc adds each slice's sums again and again
        "13",
        "a slice's sum not started afresh",
        (
            "wgmma_64xNx8<BM, false>(part, small[0], descriptor(as));",
            "wgmma_64xNx8<BM, true>(part, small[0], descriptor(as));",
        ),
        NOTHING,
        "wrong",
    ),
]


def _here() -> str | None:
    reason = gpu.unavailable_reason()
    if reason is None and not registry.step("12").runs_on_gpu(gpu.device_info().arch):
        reason = "steps 12 and 13 run on an sm_90a GPU (an H100 or H200) alone"
    return reason


@pytest.mark.parametrize(
    "step_id, what, change, keeps, says", PLANTED, ids=[f"{p[0]}: {p[1]}" for p in PLANTED]
)
def test_a_hopper_exercise_grades_to_the_points_it_must_score(
    step_id, what, change, keeps, says, tmp_path
):
    if reason := _here():
        pytest.skip(reason)
    step = registry.step(step_id)
    source = step.source()
    for old, new in zip(change[::2], change[1::2]) if change else ():
        assert old in source, old
        source = source.replace(old, new)
    path = tmp_path / "ada" / step.path.name
    path.parent.mkdir()
    path.write_text(source)
    made = grading.grade(Submission("ada", path), step, grading.Options("gpu"))
    got = {t.id: t.earned for t in made.tests}
    assert made.status == grading.GRADED, made.tests
    assert got == keeps, made.tests
    lost = [t for t in made.tests if t.earned < t.points]
    if lost:
        assert says in lost[0].message, lost[0].message
    else:
        assert made.gflops and made.gflops[0] >= made.minimum_gflops


def test_a_class_of_step_13_is_graded_by_grade_on_the_gpu_it_runs_on(tmp_path):
    """The instructor's path: `python -m autograder grade` over a class folder, the
    course's kernel and a planted mistake side by side."""
    if reason := _here():
        pytest.skip(reason)
    step = registry.step("13")
    root = tmp_path / "class"
    root.mkdir()
    (root / "ada.cu").write_text(step.source())
    old, new, *_ = PLANTED[-1][2]  # a slice's sum not started afresh
    (root / "bob.cu").write_text(step.source().replace(old, new))
    out = tmp_path / "grades.csv"
    result = subprocess.run(
        [sys.executable, "-m", "autograder", "grade", root, "--assignment", "13"]
        + ["--gpus", "0", "--out", out, "--quiet"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    rows = {r["student"]: r for r in read_csv(out)}
    assert int(rows["ada"]["total"]) == rubric.MAX_POINTS, rows["ada"]
    assert int(rows["bob"]["total"]) == 0, rows["bob"]
