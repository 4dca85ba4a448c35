"""Accesses outside A, B and C, and races on shared memory, found on a GPU by
compute-sanitizer.

The checker surrounds A and B with NaN, so a read outside them shows in C only
when its value is used; a kernel that reads past the end of A and then throws
the value away passes every case on a GPU, yet on exact-size buffers it reads
other data or crashes. Likewise a missing __syncthreads() may happen not to
show. The CPU backend checks every access and every read of shared memory; on
a GPU, compute-sanitizer does:

- the kernel runs once, at one small odd shape, in a separate process started
  under compute-sanitizer, compiled with -lineinfo so that each report names
  the learner's line: under memcheck and (for a kernel with shared memory)
  under racecheck, the two processes side by side;
- CuPy's memory pool is off, so each matrix is its own allocation, which
  memcheck bounds exactly, and `--padding` puts unallocated memory after
  each, so that a read a few rows past A is reported rather than landing in B;
- that process writes where A, B and C lie; the parent maps each reported
  address to the matrix, the element and how far outside it is, in the words
  the CPU backend uses.

autograder.judge.job runs this after a GPU run's cases and adds what it finds as
one more case.
"""

from __future__ import annotations

import itertools
import json
import pickle
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from ..isolate import isolation
from ..run import cuda_tools, gpu_lock
from ..run.kernel import KernelSpec
from .advice import SCALAR
from .checker import ALPHA, Shape, beta_of

TIMEOUT_S = 180.0  # per tool: starting CUDA under the sanitizer, compiling, one small launch
PADDING_BYTES = 1 << 20  # after each matrix: more than 256 rows of the shape's longest row
PRINT_LIMIT = 4  # reports kept per run: the first says what to fix
_LOG_KEPT = 64 * 1024


def find() -> str | None:
    """The compute-sanitizer executable: on PATH, or in the CUDA toolkit (Colab's too)."""
    return cuda_tools.find("compute-sanitizer")


class SanitizerFailed(RuntimeError):
    """compute-sanitizer could not run here (not the kernel's fault); str() says why."""


class SanitizerTimedOut(RuntimeError):
    """The kernel ran its cases, yet not one launch under compute-sanitizer: the kernel's
    doing, since the launch had begun (the target writes placed.json just before it)."""


def tools_for(spec: KernelSpec) -> tuple[str, ...]:
    """memcheck always; racecheck for a kernel with shared memory, the only kind it can race on."""
    return ("memcheck", "racecheck") if "__shared__" in spec.source else ("memcheck",)


def sanitize(spec: KernelSpec, shape: Shape, scratch: Path, executable: str) -> str:
    """Run spec once at `shape` under each of its tools (tools_for), side by side; what
    the first tool in that order found, in the CPU backend's words, or "" when none did.
    Raises SanitizerFailed when the sanitizer itself could not run the kernel."""
    runs = {
        tool: _start(tool, spec, shape, Path(scratch) / tool, executable)
        for tool in tools_for(spec)
    }
    try:
        for tool, process in runs.items():
            try:
                process.wait(timeout=TIMEOUT_S)
            except subprocess.TimeoutExpired:
                if not (Path(scratch) / tool / "placed.json").exists():  # not launched yet
                    raise SanitizerFailed(
                        f"compute-sanitizer's {tool} did not start the kernel within "
                        f"{TIMEOUT_S:.0f} s"
                    ) from None
                raise SanitizerTimedOut(
                    f"under compute-sanitizer's {tool} the kernel did not finish one launch at "
                    f"{shape} within {TIMEOUT_S:.0f} s, though it ran the cases without it: "
                    "a kernel that behaves differently when it is checked fails the check"
                ) from None
    finally:
        for process in runs.values():
            process.kill()
            process.wait()
    for tool in runs:
        found = _found(tool, Path(scratch) / tool, spec)
        if found:
            return found
    return ""


def _start(tool: str, spec: KernelSpec, shape: Shape, work: Path, executable: str):
    """compute-sanitizer's `tool` around one launch of spec at shape, in its own directory."""
    work.mkdir()
    (work / "job.pickle").write_bytes(pickle.dumps((spec, shape)))
    command = [
        executable,
        f"--tool={tool}",
        f"--print-limit={PRINT_LIMIT}",
        "--show-backtrace=no",
        f"--log-file={work / 'log.txt'}",
        *([f"--padding={PADDING_BYTES}"] if tool == "memcheck" else []),
        sys.executable,
        "-m",
        "autograder.judge.sanitizer",
        str(work),
    ]
    return subprocess.Popen(
        command,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,  # the kernel's printf: the cases have shown it
        stderr=subprocess.DEVNULL,
        cwd=work,
        env={**cuda_tools.environment(), **isolation.child_variables()},
    )


def _found(tool: str, work: Path, spec: KernelSpec) -> str:
    """What `tool`'s log in work says, in words; "" for nothing."""
    filename = spec.filename
    log, placed = work / "log.txt", work / "placed.json"
    text = log.read_text(errors="replace")[:_LOG_KEPT] if log.exists() else ""
    if not placed.exists():
        raise SanitizerFailed(f"compute-sanitizer's {tool} did not run the kernel: {_tail(text)}")
    if tool == "memcheck":
        return explain(parse(text), json.loads(placed.read_text()), filename, errors(text))
    return explain_races(parse_races(text), filename, spec.waits_on_mbarriers)


def _tail(text: str) -> str:
    lines = [line.strip("= ").strip() for line in text.splitlines() if line.strip("= ").strip()]
    return "; ".join(lines[-3:]) or "no output"


# ---- reading memcheck's reports -----------------------------------------------------------

_REPORT = re.compile(r"^=+ (Invalid __global__ (read|write) of size (\d+) bytes?.*)$", re.MULTILINE)
_AT = re.compile(r"at .*? in (\S+?):(\d+)")
_THREAD = re.compile(r"by thread \((\d+),(\d+),(\d+)\) in block \((\d+),(\d+),(\d+)\)")
# "Access to 0x... is out of bounds" (compute-sanitizer 2025), "Address 0x..." (earlier).
_ADDRESS = re.compile(r"(?:Address|Access to|Access at) (0x[0-9a-fA-F]+)")


@dataclass(frozen=True)
class Access:
    """One invalid access as memcheck reports it."""

    kind: str  # "read" or "write"
    size: int  # bytes
    address: int
    misaligned: bool
    thread: tuple[int, int, int]
    block: tuple[int, int, int]
    line: int | None


def errors(log: str) -> int:
    """How many errors the log's summary counts (more than it prints)."""
    m = re.search(r"ERROR SUMMARY: (\d+) errors?", log)
    return int(m.group(1)) if m else 0


def parse(log: str) -> list[Access]:
    """Every invalid global access in a memcheck log, in the order reported."""
    found = []
    starts = [m.start() for m in _REPORT.finditer(log)] + [len(log)]
    for start, end in itertools.pairwise(starts):
        record = log[start:end]
        head = _REPORT.search(record)
        thread, address = _THREAD.search(record), _ADDRESS.search(record)
        if not (thread and address):
            continue
        at = _AT.search(record)
        numbers = [int(g) for g in thread.groups()]
        found.append(
            Access(
                kind=head.group(2),
                size=int(head.group(3)),
                address=int(address.group(1), 16),
                misaligned="misaligned" in record,
                thread=tuple(numbers[:3]),
                block=tuple(numbers[3:]),
                line=int(at.group(2)) if at else None,
            )
        )
    return found


@dataclass(frozen=True)
class Place:
    """Where an address lies relative to the nearest matrix."""

    matrix: str
    element: int  # index into the matrix, as floats (negative before its start)
    distance: int  # floats outside it; 0 inside

    @classmethod
    def of(cls, address: int, matrices: dict[str, list[int]]) -> Place:
        name, (base, size) = min(matrices.items(), key=lambda m: _gap(address, *m[1]))
        element, floats = (address - base) // 4, size // 4
        distance = element - floats + 1 if element >= floats else max(0, -element)
        return cls(name, element, distance)

    def __str__(self) -> str:
        side = "past the end of" if self.element >= 0 else "before the start of"
        plural = "s" if self.distance != 1 else ""
        return f"{self.matrix}[{self.element}], {self.distance} float{plural} {side} {self.matrix}"


def _gap(address: int, base: int, size: int) -> int:
    if address < base:
        return base - address
    return max(0, address - (base + size - 1))


def explain(
    accesses: list[Access], matrices: dict[str, list[int]], filename: str, total: int = 0
) -> str:
    """The first bad access in the CPU backend's words ("thread (3, 0, 0) of block (0, 1, 0)
    read A[8255], 2 floats past the end of A, at 05_blocktiling_2d.cu:41: ..."), and what
    to check; "" when there was none."""
    if not accesses:
        return ""
    first = accesses[0]
    place = Place.of(first.address, matrices)
    who = "thread ({}, {}, {}) of block ({}, {}, {})".format(*first.thread, *first.block)
    at = f", at {filename}:{first.line}" if first.line else ""
    total = max(total, len(accesses))
    more = f" ({total} bad accesses in all)" if total > 1 else ""
    if first.misaligned:
        return (
            f"{who} made a misaligned {first.size}-byte access to {place.matrix} at an address "
            f"that is not a multiple of {first.size} bytes{at}: {SCALAR}{more}"
        )
    verb = "read" if first.kind == "read" else "wrote"
    named = {Place.of(a.address, matrices).matrix for a in accesses if not a.misaligned}
    inputs = " and ".join(sorted(named - {"C"}))
    outside = " and ".join(
        ([f"read outside {inputs}"] if inputs else [])
        + (["accessed memory outside C"] if "C" in named else [])
    )
    return (
        f"{who} {verb} {place}{at}{more}: the kernel {outside}, which fails even where the "
        "value is never used (on exact-size buffers it reads or corrupts other data, or "
        "crashes)"
    )


# ---- reading racecheck's reports ----------------------------------------------------------

_RACE = re.compile(
    r"Race reported between (Write|Read) access at [^\n]*? in \S+?:(\d+)\n"
    r"=+\s+and (Write|Read) access at [^\n]*? in \S+?:(\d+)(?: \[(\d+) hazards?\])?"
)


@dataclass(frozen=True)
class Race:
    """Two accesses to the same shared-memory word, not ordered by a barrier."""

    first: tuple[str, int]  # ("Write", line)
    second: tuple[str, int]
    hazards: int


def parse_races(log: str) -> list[Race]:
    """Every race a racecheck log reports, with how many hazards each pair of lines had."""
    return [
        Race((m.group(1), int(m.group(2))), (m.group(3), int(m.group(4))), int(m.group(5) or 1))
        for m in _RACE.finditer(log)
    ]


# What most likely orders a kernel's accesses to shared memory, and what is missing
# when two race: __syncthreads(), or in a kernel whose buffers are handed over by
# mbarriers (steps 12 and 13) a thread's arrival before the buffer is refilled.
_ORDER = {
    False: (
        "a __syncthreads()",
        "a missing __syncthreads() after the loads or after the inner loop",
    ),
    True: (
        "a barrier",
        "a buffer refilled while a thread still reads it: check that every thread that reads "
        "a buffer arrives on the mbarrier that releases it, after its last read",
    ),
}


def explain_races(races: list[Race], filename: str, mbarriers: bool = False) -> str:
    """The first pair of racing lines, in words; "" when there was none. mbarriers: the
    kernel hands its buffers over with mbarriers rather than __syncthreads()."""
    if not races:
        return ""
    (kind1, line1), (kind2, line2) = races[0].first, races[0].second
    total = sum(r.hazards for r in races)
    barrier, likely = _ORDER[mbarriers]
    return (
        f"threads of a block race on shared memory: the {kind1.lower()} at {filename}:{line1} "
        f"and the {kind2.lower()} at {filename}:{line2} are not separated by {barrier} "
        f"(compute-sanitizer's racecheck found {total} hazards), so what a thread reads depends "
        f"on timing: {likely}"
    )


# ---- the process compute-sanitizer starts ---------------------------------------------------


def _target(work: Path) -> None:
    """Launch the kernel once per shape on exact-size buffers; say where they lie."""
    import cupy
    import numpy as np

    from ..run.backends import judged_launcher

    cupy.cuda.set_allocator(None)  # one allocation per array, which memcheck bounds exactly
    spec, shape = pickle.loads((work / "job.pickle").read_bytes())
    # With line numbers, as every GPU build: the checks' own launch (GpuBackend._load).
    launch = judged_launcher(spec)
    rng = np.random.default_rng(0)
    M, N, K = shape.M, shape.N, shape.K
    # A check's launch: beside other checks, never during a timing; the turn is taken
    # once everything but the GPU's own work is done, to hold it as little as can be.
    with gpu_lock.shared(gpu_lock.identity()):
        matrices = {
            name: cupy.asarray(rng.standard_normal((rows, cols), dtype=np.float32))
            for name, rows, cols in (("A", M, K), ("B", K, N), ("C", M, N))
        }
        placed = {n: [m.data.ptr, m.nbytes] for n, m in matrices.items()}
        (work / "placed.json").write_text(json.dumps(placed))
        try:
            launch(M, N, K, ALPHA, matrices["A"], matrices["B"], beta_of(shape), matrices["C"])
            cupy.cuda.Device().synchronize()
        finally:  # step 09's GEMM: where its workspace of layers lay, once it had one
            partial = getattr(launch, "workspace", lambda: None)()
            if partial is not None:
                placed["partial"] = [partial.data.ptr, partial.nbytes]
                (work / "placed.json").write_text(json.dumps(placed))


if __name__ == "__main__":
    _target(Path(sys.argv[1]))
