"""Turns on a GPU (autograder.run.gpu_lock): checks side by side, a timing alone and first.

The turns are flock(2) locks on files, so threads of one process holding their own
open files contend exactly as processes do; the tests use threads for speed and one
process to show that a dead process gives its turn back.
"""

import multiprocessing
import threading
import time

import pytest

from autograder.run import gpu_lock

GPU = "stand-in-0000-00-00-0"
HOLD_S = 0.5
MACHINES_LOCKS = gpu_lock.LOCK_DIR  # where every process of the machine takes turns


@pytest.fixture(autouse=True)
def lock_dir(tmp_path, monkeypatch):
    monkeypatch.setattr(gpu_lock, "LOCK_DIR", tmp_path / "locks")


def _hold(turn, log: list, name: str, seconds: float = HOLD_S):
    def body():
        with turn(GPU):
            log.append((time.monotonic(), name, "in"))
            time.sleep(seconds)
            log.append((time.monotonic(), name, "out"))

    thread = threading.Thread(target=body)
    thread.start()
    return thread


def _when(log, name, what):
    return next(t for t, n, w in log if n == name and w == what)


def test_checks_share_the_gpu():
    log = []
    threads = [_hold(gpu_lock.shared, log, f"check {i}") for i in range(3)]
    for t in threads:
        t.join()
    # All three were in before any came out.
    last_in = max(_when(log, f"check {i}", "in") for i in range(3))
    first_out = min(_when(log, f"check {i}", "out") for i in range(3))
    assert last_in < first_out, log


def test_a_timing_waits_for_the_checks_running_and_goes_before_those_that_come_after():
    log = []
    early = _hold(gpu_lock.shared, log, "early check")
    time.sleep(0.1)
    timing = _hold(gpu_lock.alone, log, "timing")
    time.sleep(0.1)
    late = _hold(gpu_lock.shared, log, "late check")
    for t in (early, timing, late):
        t.join()
    assert _when(log, "timing", "in") >= _when(log, "early check", "out"), log
    # The late check came while the timing waited: it waited for the timing to end.
    assert _when(log, "late check", "in") >= _when(log, "timing", "out"), log


def test_timings_take_turns():
    log = []
    threads = [_hold(gpu_lock.alone, log, f"timing {i}", 0.2) for i in range(3)]
    for t in threads:
        t.join()
    spans = sorted(
        (_when(log, f"timing {i}", "in"), _when(log, f"timing {i}", "out")) for i in range(3)
    )
    assert all(out <= next_in for (_, out), (next_in, _) in zip(spans, spans[1:])), spans


def _die_holding(lock_dir, ready):
    gpu_lock.LOCK_DIR = lock_dir
    with gpu_lock.shared(GPU):
        ready.set()
        time.sleep(60)


def test_a_process_that_dies_gives_its_turn_back(tmp_path):
    context = multiprocessing.get_context("fork")
    ready = context.Event()
    holder = context.Process(target=_die_holding, args=(gpu_lock.LOCK_DIR, ready))
    holder.start()
    assert ready.wait(10)
    log = []
    timing = _hold(gpu_lock.alone, log, "timing", 0.0)
    time.sleep(0.3)
    assert not log, "the timing ran beside a process holding a shared turn"
    holder.kill()
    holder.join()
    timing.join(10)
    assert log, "the dead process's turn was not given back"


def test_the_lock_folder_is_everyones(tmp_path):
    with gpu_lock.shared(GPU):
        pass
    assert gpu_lock.LOCK_DIR.stat().st_mode & 0o7777 == 0o1777


@pytest.mark.gpu
@pytest.mark.parametrize("alone", [False, True], ids=["a timing", "a job run alone"])
def test_a_graded_timing_waits_while_another_process_checks_on_its_gpu(monkeypatch, alone):
    """A job that times step 05 beside its reference (and, run alone as a crash's second
    run is, checks it first) while this process holds a shared turn on the same GPU,
    as another worker's check would: its timing begins only when the turn is given
    back, and a job holding the GPU alone takes no turn inside its own."""
    import numpy as np

    from autograder import KernelSpec
    from autograder.judge import checker, job
    from autograder.ladder import registry

    held_s = 6.0
    spec = KernelSpec.from_step(registry.step("05"))
    stages = (job.Check(checker.SMALL[:3]),) if alone else ()
    stages += (job.Time((512, 512, 512), spec),)
    timed = job.Job(spec, "gpu", stages, seed=1, alone=alone)
    # The machine's own turns: the job's child, started afresh, takes its turn there.
    monkeypatch.setattr(gpu_lock, "LOCK_DIR", MACHINES_LOCKS)
    took, given_back, holding = [], [], threading.Event()

    def other_worker():
        with gpu_lock.shared(gpu_lock.identity()):
            took.append(time.monotonic())
            holding.set()
            time.sleep(held_s)
            given_back.append(time.monotonic())

    holder = threading.Thread(target=other_worker)
    holder.start()
    # The job starts once the turn is held: before, its child could take the GPU
    # first (the holder's first CUDA call takes a while) and the test timed nothing.
    assert holding.wait(60)
    started = time.monotonic()
    outcome = job.run(timed)
    finished = time.monotonic()
    holder.join()
    assert outcome.measurements and not outcome.report.error, outcome.report.error
    assert all(case.ok for case in outcome.report.cases)
    assert len(outcome.report.cases) == (6 if alone else 0)
    assert np.isfinite(outcome.measurements[0]["yours"].gflops)
    # The turn was held from before the job started until after, and the job finished only
    # once it was given back. (Not given_back >= started + held_s: the holder's sleep began
    # before this thread woke to take `started`, by however long waking took.)
    assert took[0] <= started < given_back[0] < finished, (took, started, given_back, finished)
