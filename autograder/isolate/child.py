"""One child process per job, reporting typed messages over a pipe (the isolate layer).

A kernel that reads out of bounds can kill its CUDA context, one that never
finishes blocks the process that launched it, and native code built for the
CPU backend runs with the rights of its process. So every kernel runs in a
child process that the parent kills when it overruns, and whose death costs
only the job it was doing. What the child may do to the machine is limited
by autograder.isolate.isolation; how long it may take is the caller's business
(`receive` waits as long as it is told to, on the clock or in the child's own time).

Children are forked from a fork server that has imported NumPy and CuPy once,
without touching CUDA (a CUDA context cannot survive a fork): starting one takes
milliseconds instead of the second or two a fresh interpreter needs to import
them, which was most of the cost of grading a class. Where there is no fork
server (Windows), children are spawned.
"""

from __future__ import annotations

import multiprocessing
import os
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from . import isolation

_PRELOAD = ["numpy", "cupy", "autograder.judge.job"]  # a module that is missing is skipped
OUTPUT_KEPT = 16 * 1024  # bytes of a child's printed output that are kept; the rest is counted
# A limit in the child's own time ends at the latest this many times the limit on the
# clock: a child that never finishes is stopped even on a machine too busy to run it,
# and one that gets a sixth of a CPU still has its limit (a grading machine's two
# cores, with a measurement of ours and a busy loop on each, gave a kernel 16%).
OWN_TIME_CAP = 6


def _context():
    if "forkserver" not in multiprocessing.get_all_start_methods():
        return multiprocessing.get_context("spawn")
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(_PRELOAD)
    return context


@dataclass(frozen=True)
class Hung:
    """The child sent nothing within the time it was given: `seconds` of its own
    (see Child.receive), which took `wall_s` on the clock, `held_back_s` of them
    spent waiting for a CPU that other work had. starved: stopped at the cap before
    it had had its limit's worth: the machine was too busy to tell slow from stuck."""

    doing: str
    seconds: float
    wall_s: float = 0.0
    held_back_s: float = 0.0
    starved: bool = False


@dataclass(frozen=True)
class Died:
    """The child's process ended without a word."""

    doing: str
    exitcode: int | None

    @property
    def why(self) -> str:
        return isolation.why_died(self.exitcode)


@dataclass(frozen=True)
class Forged:
    """The child sent something that is none of its messages."""

    doing: str
    why: str


class Child:
    """A child process running target(conn, *args), which reports over conn; killed
    on leaving the `with` block, whatever happened.

    The child starts with the parent's environment as it is now (a fork server
    started earlier would otherwise hand down its own), so CUDA_VISIBLE_DEVICES
    or CXX set by the caller reach the kernel's process.
    """

    def __init__(self, target, *args, messages: tuple[type, ...] = ()):
        # What may come back: the child may run native code that writes to its
        # end of the pipe, so anything but these classes is refused unread.
        self._classes = frozenset((kind.__module__, kind.__qualname__) for kind in messages)
        context = _context()
        self._receive, send = context.Pipe(duplex=False)
        printed, self._print = context.Pipe(duplex=False)
        with isolation.child_environment():
            environment = dict(os.environ)
        self._process = context.Process(
            target=_with_environment,
            args=(environment, self._print, target, send, *args),
            daemon=True,
        )
        self._process.start()
        send.close()
        self._print.close()
        self.output = Output()
        self._reader = threading.Thread(target=self.output.drain, args=(printed,), daemon=True)
        self._reader.start()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        if self._process.is_alive():
            self._process.kill()
        self._process.join()
        self._receive.close()
        self._reader.join(5)  # a process the child started may still hold the pipe

    def receive(self, timeout_s: float, doing: str, own_time: bool = False):
        """The child's next message, or Hung, Died or Forged.

        own_time: timeout_s counts the child's own time, not the clock's: the time
        that its most held-back thread waited for a CPU that other work had (the
        kernel's scheduler counts it, /proc/PID/task/*/schedstat) is added to the
        limit, up to OWN_TIME_CAP times it on the clock. On a busy machine a child
        that needs the whole limit then still gets it; where the kernel does not
        count (not Linux), the limit is the clock's.
        """
        queued = _RunQueue(self._process.pid) if own_time else None
        start, wait = time.monotonic(), timeout_s
        while not self._receive.poll(wait):
            wall = time.monotonic() - start
            held_back = queued.held_back() if queued else 0.0
            starved = timeout_s + held_back > OWN_TIME_CAP * timeout_s
            wait = min(timeout_s + held_back, OWN_TIME_CAP * timeout_s) - wall
            if wait <= 0.01 * timeout_s:  # what is left is less than a poll is worth
                return Hung(doing, timeout_s, wall, held_back, starved)
        try:
            return isolation.receive(self._receive, self._classes)
        except isolation.Forged as e:
            return Forged(doing, str(e))
        except EOFError:
            self._process.join(5)
            return Died(doing, self._process.exitcode)


class _RunQueue:
    """How long a process's threads have waited for a CPU (run-queue time, which
    counts nothing while a thread sleeps or blocks) since this was made."""

    def __init__(self, pid: int):
        self._tasks = Path(f"/proc/{pid}/task")
        self._before = self._waits()

    def _waits(self) -> dict[str, int]:
        waits = {}
        try:
            tasks = list(self._tasks.iterdir())
        except OSError:  # no /proc, or the process has ended
            return waits
        for task in tasks:
            try:  # "time on a CPU, time waiting for one, timeslices", in ns
                waits[task.name] = int((task / "schedstat").read_text().split()[1])
            except (OSError, ValueError, IndexError):  # a thread that ended meanwhile
                continue
        return waits

    def held_back(self) -> float:
        """Seconds the most held-back thread waited for a CPU: a thread started since
        waited all its life since; one that ended no longer counts. The most held
        back, since the threads of a launch run side by side and it ends with its
        last."""
        now = self._waits()
        return max((n - self._before.get(t, 0) for t, n in now.items()), default=0) / 1e9


class Output:
    """What a child printed (a kernel's printf, on the GPU or the CPU): the first
    OUTPUT_KEPT bytes, and how many there were, however many that is."""

    def __init__(self):
        self.head, self.total = b"", 0

    def drain(self, connection) -> None:
        fd = connection.fileno()
        while chunk := os.read(fd, 1 << 16):
            self.total += len(chunk)
            if len(self.head) < OUTPUT_KEPT:
                self.head += chunk[: OUTPUT_KEPT - len(self.head)]
        connection.close()

    def summary(self, lines: int = 10) -> str:
        """'' if nothing was printed, else a line on how much, and the first lines."""
        if not self.total:
            return ""
        shown = self.head.decode(errors="replace").splitlines()[:lines]
        more = (
            ""
            if self.total <= len(self.head)
            else f", of which the first {len(self.head)} were kept"
        )
        return f"the kernel printed {self.total} bytes{more}; the first lines:\n" + "\n".join(
            f"    | {line}" for line in shown
        )


def _with_environment(environment: dict, printed, target, conn, *args) -> None:
    os.environ.clear()
    os.environ.update(environment)
    # What the kernel prints goes to the parent, which keeps a bounded part of it:
    # a printf in an inner loop can write gigabytes.
    for stream in (1, 2):
        os.dup2(printed.fileno(), stream)
    printed.close()
    target(conn, *args)
