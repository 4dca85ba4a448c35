"""Taking turns on a GPU: any number of correctness runs at once, or one timing alone.

Processes on one GPU without MPS share it by time slices, so a kernel timed while
another process's kernel runs is charged for both. Checking a kernel needs no such
care: its verdict is the same however slowly it runs. So several submissions may be
checked on one GPU at once, and each timing waits until it has the GPU alone:

- `shared()` around work whose result does not depend on speed (a case of the
  checker, a compute-sanitizer run);
- `alone()` around a timing (both kernels of it, their inputs and their checks),
  and around each shape's samples in `bench` and each candidate's in `tune`.

The turns are kept with flock(2) on files named after the GPU's PCI bus id, so they
hold between any processes of the machine (the workers of one `grade`, two `grade`
runs, Slurm tasks placed on one node, a learner's `check`), whatever each numbers
the GPU, and a process that dies gives its turn back with its files. A timing goes
first: once it waits, no new shared turn starts (the gate file), so a steady stream
of checks cannot keep it waiting; it waits only for those already running, each of
which is one step of one case.

The CPU backend's jobs take turns on the machine's CPUs the same way (the identity
CPU), each from its parent for a whole run of a job: any number at once, or a job
run again alone because a launch of it ran out beside the others (judge.job).
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import tempfile
from pathlib import Path

LOCK_DIR = Path(tempfile.gettempdir()) / "sgemm-course-gpu-locks"
CPU = "cpu"  # the machine's CPUs, as the CPU backend uses them (no PCI bus id is named so)


def identity() -> str:
    """This process's current GPU, by its PCI bus id: the same whatever
    CUDA_VISIBLE_DEVICES numbers it as."""
    import cupy

    bus = cupy.cuda.runtime.deviceGetPCIBusId(cupy.cuda.runtime.getDevice())
    return bus.replace(":", "-").replace(".", "-")


@contextlib.contextmanager
def shared(gpu: str):
    """Use `gpu` beside other shared users, after any timing that waits or runs."""
    with _opened(gpu, "gate") as gate, _opened(gpu, "use") as use:
        fcntl.flock(gate, fcntl.LOCK_SH)  # blocks while a timing holds the gate
        fcntl.flock(use, fcntl.LOCK_SH)
        fcntl.flock(gate, fcntl.LOCK_UN)
        yield


@contextlib.contextmanager
def alone(gpu: str):
    """Use `gpu` with nothing else of ours on it."""
    with _opened(gpu, "gate") as gate, _opened(gpu, "use") as use:
        fcntl.flock(gate, fcntl.LOCK_EX)  # no new shared user from here on
        fcntl.flock(use, fcntl.LOCK_EX)  # and those already in finish
        yield


@contextlib.contextmanager
def _opened(gpu: str, role: str):
    """The lock file, open for reading: flock needs no more, and a file another user
    created (read-only to us) can be locked too. Closing it releases the lock."""
    if not LOCK_DIR.exists():
        with contextlib.suppress(FileExistsError):
            LOCK_DIR.mkdir()
            LOCK_DIR.chmod(0o1777)  # every user's turns in one place, as in /tmp
    fd = os.open(LOCK_DIR / f"{gpu}.{role}", os.O_RDONLY | os.O_CREAT, 0o444)
    try:
        yield fd
    finally:
        os.close(fd)
