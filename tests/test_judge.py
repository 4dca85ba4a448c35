"""What a job in a child process costs whom (autograder/judge/job.py, autograder/isolate/child.py):
a flood of output is capped and counted, a slow kernel is told it is slow, a
stuck one that it may loop forever, and a grader that cannot start is the
grader's fault, never the student's."""

import contextlib

import pytest
from planted import planted
from test_cold_start import slow_compiler

from autograder import KernelSpec, judge
from autograder.isolate.child import OUTPUT_KEPT, Hung
from autograder.judge import job, mapping
from autograder.judge.checker import SMALL, CaseResult, Ran, Skipped, Started
from autograder.ladder import registry
from autograder.run.kernel import from_source

PRINTS = planted(
    "02",
    "acc += A[row * K + k] * B[k * N + col];",
    'acc += A[row * K + k] * B[k * N + col]; printf("row %d col %d k %d\\n", row, col, k);',
)


def test_a_flood_of_printf_is_capped_and_counted_and_the_verdict_stands():
    report = judge.check(PRINTS, shapes=SMALL[:4], backend="cpu", case_timeout_s=10)
    assert report.ok, str(report)
    (note,) = report.notes
    printed = int(note.split("the kernel printed ")[1].split(" bytes")[0])
    assert printed > OUTPUT_KEPT and f"the first {OUTPUT_KEPT} were kept" in note
    assert "    | row 0 col 0 k 0" in note and len(note.splitlines()) <= 11


def test_a_kernel_that_prints_nothing_gets_no_note():
    report = judge.check(KernelSpec.from_step(registry.step("02")), SMALL[:2], backend="cpu")
    assert report.ok and report.notes == []


def test_a_hang_after_fast_cases_is_called_a_possible_endless_loop():
    started = Started("1001x777x513, beta=0", 2 * 1001 * 777 * 513)
    message = judge.job._hung(Hung(started.label, 10.0), started, 1e-12, False)
    assert message.startswith("1001x777x513, beta=0: did not finish within 10 s")
    assert "an endless loop?" in message


def test_a_hang_of_a_kernel_that_waits_on_mbarriers_points_at_its_waits():
    """Steps 12 and 13 hang when a wait's phase never completes (a wrong parity, a
    thread that never arrives): the message says that, not "an endless loop"."""
    started = Started("1001x777x513, beta=0", 2 * 1001 * 777 * 513)
    spec = KernelSpec.from_step(registry.step("12"))
    assert (
        spec.waits_on_mbarriers and not KernelSpec.from_step(registry.step("08")).waits_on_mbarriers
    )
    message = judge.job._hung(Hung(started.label, 10.0), started, 1e-12, spec.waits_on_mbarriers)
    assert "a wait on an mbarrier that never completes? check each wait's parity" in message
    assert "endless loop" not in message
    assert mapping.clues_for(spec).mbarriers  # and a race it shows says so (checker._RACE)


def test_a_kernel_too_slow_for_the_limit_is_told_it_is_slow_with_its_speed():
    started = Started("1001x777x513, beta=0", 2 * 1001 * 777 * 513)
    message = judge.job._hung(Hung(started.label, 10.0), started, 1e-7, False)
    assert "it needs about 80 s here: it is too slow, not stuck" in message
    assert "(0.01 GFLOP/s)" in message and "endless" not in message


def test_a_grader_that_cannot_start_in_time_is_a_grader_fault(tmp_path, monkeypatch):
    monkeypatch.setenv("CXX", slow_compiler(tmp_path))
    monkeypatch.setattr(judge.job, "SETUP_TIMEOUT_S", 1.0)
    with pytest.raises(judge.GraderFault, match="the grader got stuck starting the CPU"):
        judge.check(KernelSpec.from_step(registry.step("02")), SMALL[:1], backend="cpu")


def test_a_block_no_gpu_can_run_is_refused_before_running():
    spec = from_source(
        registry.step("02").source(), "mine.cu", block=(2048, 2048), tile=(2048, 2048)
    )
    report = judge.check(spec, shapes=SMALL[:1], backend="cpu", case_timeout_s=30)
    assert not report.ok and not report.cases
    assert report.error == (
        "not run: the launch asks for 4194304 threads per block (block 2048x2048); "
        "this device runs at most 1024 per block"
    )


def test_a_case_is_announced_in_the_turn_that_launches_it_and_its_device_work_ends_there():
    """The parent's clock for a launch starts at Started: a wait for a turn on the GPU
    (behind another process's timing) must come before it, not between it and the
    launch; and a step's queued device work must not run on into a timing."""
    log = []

    class Turns:
        @contextlib.contextmanager
        def shared(self):
            log.append("turn")
            yield
            log.append("end of turn")

        def sync(self):
            log.append("sync")

    def events():
        log.append("draw")
        yield Started("17x17x17", 1)
        log.append("launch")
        yield Ran(0.1)
        log.append("judge")
        yield Skipped(SMALL[0], "stands in for the verdict", costs=False)

    turns = Turns()
    for event in job._in_turns(turns.shared, turns.sync, events()):
        log.append(f"sent {type(event).__name__}")
    assert log == [
        *("turn", "draw", "sent Started", "launch", "sync", "end of turn", "sent Ran"),
        *("turn", "judge", "sync", "end of turn", "sent Skipped"),
        *("turn", "sync", "end of turn"),
    ]


@pytest.mark.parametrize("crashes_alone", [False, True])
def test_a_crash_on_a_shared_gpu_counts_only_if_it_happens_again_with_the_gpu_alone(
    monkeypatch, crashes_alone
):
    """Another process's fault can end a correct kernel's launch on a shared GPU: the
    job runs again, alone, and that run's verdicts count, saying why."""
    runs = []

    def child(the_job, timeout, outcome, scratch):
        runs.append(the_job.alone)
        if the_job.alone and not crashes_alone:
            outcome.report.cases.append(CaseResult(SMALL[0], 0.0, True))
        else:
            outcome.report.error = "at 4095x4097x4093: cudaErrorLaunchFailure"
            outcome.crashed = True
        return ""

    monkeypatch.setattr(job, "_run_child", child)
    monkeypatch.setattr(job.gpu, "require", lambda doing: None)
    spec = KernelSpec.from_step(registry.step("05"))
    report = job.run(job.Job(spec, "gpu", (job.Check((SMALL[0],)),), seed=1)).report
    assert runs == [False, True]
    assert report.ok != crashes_alone
    assert "second run, with the GPU to itself" in report.notes[0]
    assert "the first run stopped (at 4095x4097x4093: cudaErrorLaunchFailure)" in report.notes[0]
    # On the CPU nothing is shared: a crash there is the kernel's at once.
    runs.clear()
    report = job.run(job.Job(spec, "cpu", (job.Check((SMALL[0],)),), seed=1)).report
    assert runs == [False] and not report.ok


# Reads 256 GB past the start of A: no GPU has memory mapped there, so every launch faults.
WILD_READ = planted(
    "02",
    "acc += A[row * K + k] * B[k * N + col];",
    "acc += A[row * K + k + (1ll << 36)] * B[k * N + col];",
)


@pytest.mark.gpu
def test_a_kernel_that_crashes_with_the_gpu_to_itself_too_keeps_its_crash():
    """The second run of a crash (see the CPU test above) gives back nothing to a kernel
    that really crashes: it crashes again, alone, and says so. (An honest job run alone
    keeps its points: test_gpu_lock.)"""
    report = job.run(job.Job(WILD_READ, "gpu", (job.Check(SMALL[:2]),), seed=1)).report
    assert not report.ok and "cudaErrorIllegalAddress" in report.error, report.error
    assert "these verdicts are from a second run, with the GPU to itself" in report.notes[0]
