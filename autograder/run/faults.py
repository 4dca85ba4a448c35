"""What a backend raises when it caught a kernel making a bad access: its own module,
so that the backends (autograder.run.backends) and the CPU backend they load
(autograder.run.cpu) both import it downward, neither from the other.

A fault states what happened, as data as well as in words; what the learner should
look at is the judge's to say (autograder.judge.advice)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class BadAccess:
    """One access to a matrix the backend caught: outside it, or misaligned."""

    kind: str  # "outside" or "misaligned"
    matrix: str  # the contract's name for it: "A", "B", "C", "partial"
    index: int | None  # the element asked for (None for a misaligned access)
    thread: tuple[int, int, int]
    block: tuple[int, int, int]
    line: int | None  # the learner's line, where the backend knows it
    code: str = ""  # the text of that line


class KernelFault(Exception):
    """A backend caught the kernel making a bad memory access; str() says which, in the
    backend's words. accesses: the bad accesses to the matrices it names, in its order
    (none for a fault of another kind: a race, a read of what nobody wrote, an array's
    bound); contract: the kernel's (autograder.run.contract.CONTRACTS)."""

    def __init__(self, text: str, accesses: tuple[BadAccess, ...] = (), contract: str = "gemm"):
        super().__init__(text)
        self.accesses = accesses
        self.contract = contract
