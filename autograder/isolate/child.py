"""One child process per job, reporting typed messages over a pipe (the isolate layer).

A kernel that reads out of bounds can kill its CUDA context, one that never
finishes blocks the process that launched it, and native code built for the
CPU backend runs with the rights of its process. So every kernel runs in a
child process that the parent kills when it overruns, and whose death costs
only the job it was doing. What the child may do to the machine is limited
by autograder.isolate.isolation; how long it may take is the caller's business
(`receive` waits as long as it is told to).

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
from dataclasses import dataclass

from . import isolation

_PRELOAD = ["numpy", "cupy", "autograder.judge.job"]  # a module that is missing is skipped
OUTPUT_KEPT = 16 * 1024  # bytes of a child's printed output that are kept; the rest is counted


def _context():
    if "forkserver" not in multiprocessing.get_all_start_methods():
        return multiprocessing.get_context("spawn")
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(_PRELOAD)
    return context


@dataclass(frozen=True)
class Hung:
    """The child sent nothing within the time it was given."""

    doing: str
    seconds: float


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

    def receive(self, timeout_s: float, doing: str):
        """The child's next message, or Hung, Died or Forged."""
        if not self._receive.poll(timeout_s):
            return Hung(doing, timeout_s)
        try:
            return isolation.receive(self._receive, self._classes)
        except isolation.Forged as e:
            return Forged(doing, str(e))
        except EOFError:
            self._process.join(5)
            return Died(doing, self._process.exitcode)


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
