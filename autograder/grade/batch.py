"""Grade a class: every submission of a directory, a few workers per GPU.

Each worker grades one submission at a time on its GPU. Most of that time is the
CPU's (compiling, starting processes, compute-sanitizer) or checks whose verdict
speed cannot change, so several workers share a GPU; each timing takes the GPU to
itself (autograder.run.gpu_lock), also from other `grade` runs on the same machine
(two assignments graded at once, or two Slurm tasks placed on one node). The
submission's kernel runs in children of the worker (autograder.judge.job), so
a crash or a hang costs that student's test and nothing else.

Grades are saved per student as they arrive (autograder.grade.gradebook); a rerun
skips the students whose grade is current (the same kernel, the same grader),
so a run that is interrupted, by Ctrl-C or a dead machine, continues where it
stopped. A run refuses, before it changes anything, what would lose or mix
grades: a folder with no submissions, a class written for another step, a second
run of the same class, a CSV or feedback folder of something else, GPU grades
replaced by CPU ones.
"""

from __future__ import annotations

import multiprocessing
import os
import queue
import signal
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from ..judge import verdicts
from ..ladder import registry
from ..ladder.registry import Step
from . import grading, rubric
from .gradebook import Gradebook, Refused
from .grading import GRADER_ERROR
from .submissions import Submission, find, students_folder

# Workers per GPU, at most, and the CPU cores each keeps busy at its peak: itself,
# the child running the kernel, then compute-sanitizer's memcheck and racecheck side
# by side (though rarely all at once). On an H100 with 16 cores, a step-05 class of 40
# unique submissions graded at 38.4 a minute with 4 workers, 40.9 with 6 and 37.2 to
# 46.4 with 8 (median 40.3 of seven classes; 2026-11-24); one worker graded 14.0.
MAX_WORKERS_PER_GPU = 8
CORES_PER_WORKER = 2


def workers_per_gpu(gpus: int) -> int:
    """As many workers as the cores this process may use keep busy, up to
    MAX_WORKERS_PER_GPU on each GPU (a Slurm task's share of a node, not the node)."""
    cores = len(os.sched_getaffinity(0))
    return max(1, min(MAX_WORKERS_PER_GPU, cores // (CORES_PER_WORKER * max(gpus, 1))))


@dataclass
class Summary:
    graded: list[grading.Grade] = field(default_factory=list)
    skipped: int = 0  # their grade is current (Gradebook.is_current)
    kept: list[str] = field(default_factory=list)  # graded earlier, hand nothing in now
    not_graded: list[str] = field(default_factory=list)  # interrupted, or their worker died
    seconds: float = 0.0
    workers: int = 1
    gpus: int = 0  # 0 on the CPU backend
    backend: str = "gpu"

    def __str__(self) -> str:
        rate = len(self.graded) / self.seconds * 60 if self.seconds else 0.0
        where = f" on {self.gpus} GPU{'s' * (self.gpus > 1)}" if self.gpus else ""
        per_gpu = f", {rate / self.gpus:.1f} per GPU" if self.gpus > 1 else ""
        first = (
            f"graded {len(self.graded)} in {self.seconds:.0f} s with {self.workers} "
            f"worker{'s' * (self.workers > 1)}{where} ({rate:.1f} submissions per "
            f"minute{per_gpu})"
        )
        if self.graded:
            # Full marks are what this backend can give: on the CPU, speed scores zero.
            full = sum(g.total == rubric.possible(self.backend) for g in self.graded)
            short = rubric.short_of_max(self.backend)
            statuses = Counter(g.status for g in self.graded)
            first += f"; {full} with full marks" + (f" ({short})" if short else "") + "; "
            first += ", ".join(f"{status}: {n}" for status, n in sorted(statuses.items()))
        lines = [
            first,
            f"skipped {self.skipped} whose grade is current: the same kernel, graded by the "
            + "same grader (--force regrades them)",
        ]
        if self.kept:
            lines.append(
                f"kept the grades of {len(self.kept)} who hand in nothing now "
                f"({_names(self.kept)}): graded earlier, their rows stay in the CSV"
            )
        if self.not_graded:
            lines.append(
                f"NOT graded: {len(self.not_graded)} ({_names(self.not_graded)}): "
                "run the same command again to grade them"
            )
        errors = [g.student for g in self.graded if g.status == grading.GRADER_ERROR]
        if errors:
            lines.append(
                f"grader errors (ours, not the students'; regraded on the next run): "
                f"{', '.join(errors)}"
            )
        flips = [g for g in self.graded if len(g.gflops) > 1]
        if flips:
            lines.append(_stability(flips))
        return "\n".join(lines)


def _names(students: list[str]) -> str:
    return ", ".join(students[:8]) + (", ..." if len(students) > 8 else "")


def _stability(grades: list[grading.Grade]) -> str:
    """How much repeated timings of one kernel differ, and whether a verdict would flip."""
    spreads, flipped = [], []
    for g in grades:
        low, high = min(g.gflops), max(g.gflops)
        spreads.append((high - low) / high * 100 if high else 0.0)
        if g.minimum_gflops is not None and low < g.minimum_gflops <= high:
            flipped.append(g.student)
    return (
        f"timing spread over repeated timings: median {sorted(spreads)[len(spreads) // 2]:.1f}%, "
        f"largest {max(spreads):.1f}% of the fastest; verdicts that a single timing could "
        f"have flipped: {len(flipped)}" + (f" ({', '.join(flipped)})" if flipped else "")
    )


def shard(submissions: list[Submission], which: tuple[int, int]) -> list[Submission]:
    """The k-th of n interleaved shares (k from 1), for a Slurm job array."""
    k, n = which
    return submissions[k - 1 :: n]


def roster(root: Path, step: Step, book: Gradebook) -> list[Submission]:
    """The class's submissions for `step`. Refuses a folder where no student has one
    (a wrong directory or --assignment, which would otherwise write a gradebook of
    nobody) or where most define another step's kernel (a wrong --assignment, which
    would otherwise zero the class), and a feedback folder inside the students' folder
    (find() would take it for a student)."""
    found = find(root, step)
    folder = students_folder(root)
    if not any(s.path for s in found):
        why = f" (student folders: {len(found)}, none with a file for {step.name})" if found else ""
        raise Refused(f"no submissions found in {folder}{why}")
    _refuse_another_assignment(found, step)
    if folder.resolve() in book.feedback_dir.resolve().parents:
        raise Refused(
            f"the feedback folder {book.feedback_dir} is inside {folder}, where it would be "
            "taken for a student: give a --json outside it"
        )
    return found


def _refuse_another_assignment(found: list[Submission], step: Step) -> None:
    """Refuse a class most of whose submissions define kernels, none of them the step's:
    graded as this step, each would score zero as "unreadable". Such a class was written
    for another step (a wrong --assignment); the kernels it does define name that step.
    A submission that defines no kernel at all says nothing of which step it is for."""
    handed_in = [s for s in found if s.path]
    strays = [k for s in handed_in if (k := s.kernels()) and step.kernel not in k]
    if 2 * len(strays) <= len(handed_in):
        return
    steps = {s.kernel: s for s in registry.STEPS}
    counts = Counter(name for kernels in strays for name in kernels)
    # The course's kernel defined most often, else the kernel defined most often.
    name, count = max(counts.items(), key=lambda item: (item[0] in steps, item[1]))
    likely = steps.get(name)
    advice = (
        f"grade them with --assignment {likely.name}, whose kernel that is"
        if likely
        else "check the folder and --assignment"
    )
    raise Refused(
        f"{len(strays)} of the {len(handed_in)} submissions define no kernel {step.kernel} (the "
        f"kernel of {step.name}), so each would score zero; {count} define {name}: {advice}"
    )


def merge(root: Path, step: Step, book: Gradebook) -> tuple[int, list[str]]:
    """Write the CSV of the class under root from the feedback files (after the
    shards of a job array); returns its rows and the students not graded yet."""
    students = [s.student for s in roster(root, step, book)]
    if not book.students():
        raise Refused(f"no feedback files in {book.feedback_dir}: nothing to merge")
    with book.locked():
        return book.write_csv(students), [s for s in students if book.get(s) is None]


def run(
    root: Path,
    step: Step,
    book: Gradebook,
    options: grading.Options,
    gpus: list[str] | None = None,
    force: bool = False,
    part: tuple[int, int] | None = None,
    write_csv: bool = True,
    progress: bool = True,
    workers: int | None = None,
) -> Summary:
    """Grade every submission for `step` under root whose grade is not current.

    gpus: the GPUs to use (CUDA device numbers), `workers` each (None: as many as the
    cores keep busy, workers_per_gpu); None on the CPU backend, which runs one worker
    (the CPU backend spreads a kernel over all cores).
    part: (K, N), grade only the K-th of N shares; the shards of one job array
    share the gradebook's lock.
    """
    started = time.perf_counter()
    if why := verdicts.out_of_reach(step, options.backend):  # every grade would be zero
        raise Refused(f"{why}: grade this class on one")
    per_gpu = workers or workers_per_gpu(len(gpus or []))
    places = [gpu for gpu in gpus for _ in range(per_gpu)] if gpus else [None]
    everyone = roster(root, step, book)
    with book.locked(shared=part is not None):
        mine = shard(everyone, part) if part else everyone
        todo = [s for s in mine if force or not book.is_current(s, options.backend)]
        if options.backend == "cpu" and not force:
            _refuse_to_downgrade(book, todo)
        summary = Summary(
            skipped=len(mine) - len(todo),
            kept=book.gone(everyone),
            workers=len(places),
            gpus=len(gpus or []),
            backend=options.backend,
        )
        students = [s.student for s in everyone] if write_csv else None
        _grade_all(todo, step, book, options, places, students, progress, summary)
    summary.seconds = time.perf_counter() - started
    return summary


def _refuse_to_downgrade(book: Gradebook, todo: list[Submission]) -> None:
    """On the CPU the speed test scores zero, so a CPU grade in place of a GPU one
    takes points away. It would happen to a whole class if a GPU node's driver
    failed, so that --backend auto fell back to the CPU, just after a change to
    the grader made every grade stale."""
    on_gpu = [
        s.student
        for s in todo
        if (old := book.get(s.student)) and old.backend == "gpu" and old.status != GRADER_ERROR
    ]
    if on_gpu:
        raise Refused(
            f"students graded on a GPU would be graded again on the CPU ({_names(on_gpu)}), "
            "where the speed test scores zero: grade on a GPU, or give --force to replace "
            "their grades"
        )


def _grade_all(todo, step, book, options, places, students, progress, summary) -> None:
    """Grade `todo` with a worker on each of places (a GPU, or None for the CPU), saving
    each grade as it comes, and the CSV of `students` after each (None: no CSV, for a
    shard)."""
    from tqdm import tqdm

    context = multiprocessing.get_context("spawn")
    jobs, results = context.Queue(), context.Queue()
    for s in todo:
        jobs.put(s)
    workers = [
        context.Process(target=_worker, args=(gpu, step, options, jobs, results)) for gpu in places
    ]
    for w in workers:
        jobs.put(None)  # one "no more work" per worker
        w.start()
    waiting = {s.student for s in todo}
    bar = tqdm(total=len(todo), unit="student", disable=not progress or not todo)
    try:
        while waiting:
            try:
                grade = results.get(timeout=1.0)
            except queue.Empty:
                if any(w.is_alive() for w in workers):
                    continue
                break  # every worker is gone: what they sent has been read
            book.put(grade)
            if students is not None:
                book.write_csv(students)
            waiting.discard(grade.student)
            summary.graded.append(grade)
            bar.set_postfix_str(f"{grade.student}: {grade.total}/{rubric.MAX_POINTS}")
            bar.update()
    except KeyboardInterrupt:
        print(
            "\ninterrupted: stopping the workers; every grade saved so far is kept", file=sys.stderr
        )
    finally:
        bar.close()
        _stop(workers)
        if students is not None:
            book.write_csv(students)
    summary.not_graded = sorted(waiting)


def _stop(workers) -> None:
    for w in workers:
        if w.is_alive():
            w.terminate()  # SIGTERM: the worker kills the child running a kernel, then exits
    for w in workers:
        w.join(10)
        if w.is_alive():
            w.kill()
            w.join()


def _worker(gpu: str | None, step: Step, options, jobs, results) -> None:
    # Ctrl-C reaches every process of the terminal: the parent alone decides,
    # and stops the workers with SIGTERM, which unwinds through the child process's
    # cleanup (killing the kernel's process) instead of dying on the spot.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))
    if gpu is not None:
        os.environ["CUDA_VISIBLE_DEVICES"] = gpu
    while (submission := jobs.get()) is not None:
        results.put(grading.grade(submission, step, options))


def visible_gpus(wanted: str | None) -> list[str]:
    """The CUDA device numbers to run workers on: 'all' (or None) or '0,2,3'."""
    parent = os.environ.get("CUDA_VISIBLE_DEVICES")
    import cupy

    count = cupy.cuda.runtime.getDeviceCount()
    if wanted in (None, "all"):
        indices = list(range(count))
    else:
        try:
            indices = [int(i) for i in wanted.split(",")]
        except ValueError:
            raise ValueError(f"--gpus takes 'all' or numbers like 0,1,3, not {wanted!r}") from None
        bad = [i for i in indices if not 0 <= i < count]
        if bad:
            raise ValueError(f"no GPU {bad[0]}: this machine has {count} (0 to {count - 1})")
    # Workers set CUDA_VISIBLE_DEVICES themselves; keep the parent's own numbering.
    if parent:
        names = parent.split(",")
        return [names[i] for i in indices]
    return [str(i) for i in indices]
