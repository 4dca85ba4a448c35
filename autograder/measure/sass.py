"""The compiler's evidence: what each step's main loop is made of, in machine code,
with no GPU.

For a step of the registry, `evidence(step, arch)` compiles the very kernel its
chapter shows (kernels/NN_slug.cu, instantiated with the registry's template
parameters) with NVRTC for `arch`, disassembles the cubin ptxas built with
nvdisasm, and counts the instructions of the kernel's main loop:
FFMA, HMMA, LDS / LDS.64 / LDS.128, LDG / LDG.64 / LDG.128, STS, LDGSTS
(cp.async), BAR and the rest. Beside the counts: registers, spills and shared
memory from ptxas, and the theoretical occupancy on that architecture
(autograder/ladder/hardware.py). nvdisasm comes from its pip wheel
(nvidia-cuda-nvdisasm, pinned in requirements.txt) or a CUDA toolkit; cuobjdump
is no substitute, as it runs nvdisasm itself (CUDA 13's says so when it is
missing).

How the main loop is found. A loop in SASS is a backward branch: a BRA whose
target lies at or before the branch itself, its body the instructions from the
target to the branch. The main loop is the backward branch whose body holds the
most multiply-adds (FFMA, or HMMA and HGMMA for tensor cores); among equals, the shortest
body, so that an inner loop wins over a loop around it. Loops the compiler
unrolled need no special care: an unrolled loop is one body with all its FFMAs
in it, which is why it wins (steps 01 and 02, whose k loop NVRTC unrolls 16
times beside a 4-times and a 1-time remainder loop, are counted in the 16-times
one). The counts are static: each instruction of the body once, which is what
one iteration executes when the body holds no other loop (`Loop.nested` says
when it does) and no branch skips part of it.

How many values of k one iteration covers, to count per k. The branch's
predicate is set by a comparison (ISETP) in the body; the register it compares
that the body also advances by a constant (IADD3 / UIADD3 / VIADD R, R, imm) is
the loop counter, and that constant is k per iteration. When the kernel has a
K-slice parameter (BK, or BS for the square tiles), its main loop advances k0 by
it, and the counter must agree; where no counter is found the parameter is used,
and where the kernel has none, FFMAs per iteration / elements of C per thread
(every value of k costs each element of C one FFMA). `Loop.k_source` says which.
"""

from __future__ import annotations

import functools
import importlib.metadata
import os
import re
import shutil
import subprocess
import tempfile
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from ..ladder import hardware, registry
from ..run import compiler

# The book and the CLI show these two: the T4 of Colab and the H100 of the measurements.
DEFAULT_ARCHS = ("sm_75", "sm_90")

# Instruction classes in the order the tables show them.
CLASSES = (
    "FFMA",
    "HMMA",
    "HGMMA",
    "LDS",
    "LDS.64",
    "LDS.128",
    "LDSM",
    "LDG",
    "LDG.64",
    "LDG.128",
    "LDGSTS",
    "UTMALDG",
    "STS",
    "STS.64",
    "STS.128",
    "BAR",
    "other",
)
# What multiplies: FP32 lanes, a warp's tensor-core instruction (mma.sync), a
# warpgroup's (wgmma, whose SASS name is HGMMA).
MATH = ("FFMA", "HMMA", "HGMMA")
# Multiply-adds one warp's instruction of each class does, at the least: an FFMA one a
# lane; the smallest TF32 mma.sync (m16n8k4) and wgmma (m64n8k8, a quarter a warp) more
# than an FFMA's 32 tenfold. A loop's math is the class that does most of its work.
MACS_PER_WARP = {"FFMA": 32, "HMMA": 16 * 8 * 4, "HGMMA": 64 * 8 * 8 // 4}
SHARED_LOADS = ("LDS", "LDS.64", "LDS.128", "LDSM")
GLOBAL_LOADS = ("LDG", "LDG.64", "LDG.128")
# The wheel that ships nvdisasm (version 13 puts it in nvidia/cu13/bin/, 12 elsewhere:
# its own file list says where).
WHEEL = "nvidia-cuda-nvdisasm"
INSTALL = f"pip install {WHEEL} (requirements-learner.txt pins the version CI uses)"


class DisassemblerUnavailable(RuntimeError):
    """nvdisasm was not found."""


class NoMainLoop(RuntimeError):
    """The kernel's SASS has no backward branch around an FFMA, HMMA or HGMMA."""


# ---- finding and running the disassembler --------------------------------------------------


@dataclass(frozen=True)
class Tool:
    name: str  # 'nvdisasm'
    path: Path
    where: str  # 'the nvidia-cuda-nvdisasm wheel', 'PATH', ...

    @functools.cached_property
    def version(self) -> str:
        out = subprocess.run(
            [str(self.path), "--version"], capture_output=True, text=True, timeout=60, check=False
        ).stdout
        m = re.search(r"release [\d.]+, V([\d.]+)", out)
        return m.group(1) if m else "unknown version"

    def __str__(self) -> str:
        return f"{self.name} {self.version}"


def _from_wheel(name: str, dist: str) -> Path | None:
    try:
        files = importlib.metadata.files(dist) or []
    except importlib.metadata.PackageNotFoundError:
        return None
    for f in files:
        if f.name in (name, f"{name}.exe"):
            path = Path(f.locate())
            if path.is_file():
                return path
    return None


def _from_toolkit(name: str) -> Path | None:
    found = shutil.which(name)
    if found:
        return Path(found)
    for home in (os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"), "/usr/local/cuda"):
        if home and (Path(home) / "bin" / name).is_file():
            return Path(home) / "bin" / name
    return None


@functools.cache
def find_tool() -> Tool:
    """nvdisasm from its pip wheel, else from a CUDA toolkit (PATH, CUDA_HOME)."""
    if path := _from_wheel("nvdisasm", WHEEL):
        return Tool("nvdisasm", path, f"the {WHEEL} wheel")
    if path := _from_toolkit("nvdisasm"):
        return Tool("nvdisasm", path, "a CUDA toolkit")
    raise DisassemblerUnavailable(
        "the SASS report needs NVIDIA's disassembler, nvdisasm, which is not installed: "
        f"{INSTALL}, or put a CUDA toolkit's bin/ on PATH"
    )


def disassemble(cubin: bytes, tool: Tool | None = None) -> str:
    """The SASS of every function in a cubin, as the tool prints it."""
    tool = tool or find_tool()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "kernel.cubin"
        path.write_bytes(cubin)
        result = subprocess.run(
            [str(tool.path), "-c", str(path)],
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )
    if result.returncode:
        raise RuntimeError(f"{tool} failed: {result.stderr.strip() or result.stdout[-500:]}")
    return result.stdout


# ---- parsing SASS ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Instruction:
    address: int
    predicate: str  # '@!P0', or '' for none
    opcode: str  # 'LDS.U.128'
    operands: tuple[str, ...]

    @property
    def base(self) -> str:
        return self.opcode.split(".")[0]

    @property
    def kind(self) -> str:
        """Its class in CLASSES: memory instructions by width, the rest by name."""
        base, modifiers = self.base, self.opcode.split(".")[1:]
        if base in ("LDS", "LDG", "STS"):
            width = "128" if "128" in modifiers else "64" if "64" in modifiers else ""
            return f"{base}.{width}" if width else base
        return base if base in CLASSES else "other"


_LINE = re.compile(r"^\s*/\*([0-9a-fA-F]+)\*/\s+(.*?)\s*;")
_LABEL = re.compile(r"^\s*(\.L\w*|`\(\.L\w*\)):\s*$")
_FUNCTION = re.compile(r"^\.text\.(\S+):\s*$")
_TARGET = re.compile(r"`?\(?(\.L\w+)\)?`?|^(0x[0-9a-fA-F]+)$")


def functions(sass: str) -> dict[str, tuple[list[Instruction], dict[str, int]]]:
    """Each function's instructions and labels (label -> address), by symbol, from
    nvdisasm's output."""
    found: dict[str, tuple[list[Instruction], dict[str, int]]] = {}
    current, pending = None, []
    for line in sass.splitlines():
        if m := _FUNCTION.match(line):
            current = m.group(1)
            found[current] = ([], {})
            pending = []
            continue
        if current is None:
            continue
        instructions, labels = found[current]
        if m := _LABEL.match(line):
            pending.append(m.group(1))
            continue
        if m := _LINE.match(line):
            address, text = int(m.group(1), 16), m.group(2).lstrip("{ ").strip()
            for label in pending:
                labels[label] = address
            pending = []
            predicate = ""
            if text.startswith("@"):
                predicate, _, text = text.partition(" ")
            opcode, _, rest = text.strip().partition(" ")
            operands = tuple(o.strip() for o in rest.split(",") if o.strip())
            instructions.append(Instruction(address, predicate, opcode, operands))
    return found


def _target(branch: Instruction, labels: dict[str, int]) -> int | None:
    for operand in branch.operands:
        if m := _TARGET.search(operand.strip()):
            if m.group(1):
                return labels.get(m.group(1))
            return int(m.group(2), 16)
    return None


@dataclass(frozen=True)
class Loop:
    """One iteration of a loop's body, counted."""

    start: int  # address of the first instruction (the branch's target)
    end: int  # address of the backward branch
    counts: Counter  # by class of CLASSES
    opcodes: Counter  # by opcode, all of them (what 'other' holds, among the rest)
    counter_step: int | None  # what the loop counter advances by, where one was found
    nested: bool  # another backward branch lies inside the body
    # Of counts, those a forward branch inside the body can jump over: one side of an
    # if (the scalar fallback of a float4 load, say), not run in every iteration.
    skippable: Counter = field(default_factory=Counter)

    @property
    def instructions(self) -> int:
        return sum(self.counts.values())

    @property
    def math(self) -> int:
        return sum(self.counts[c] for c in MATH)

    @property
    def math_name(self) -> str:
        """The class of MATH that does most of the loop's multiply-adds (MACS_PER_WARP):
        FFMAs beside a wgmma (step 13's promotion) are not its product."""
        return max(MATH, key=lambda k: (self.counts[k] * MACS_PER_WARP[k], MATH.index(k)))


_IMMEDIATE = re.compile(r"^-?0x[0-9a-fA-F]+$|^-?\d+$")


def _register(operand: str) -> str:
    """'R47.reuse' -> 'R47', '-UR4' -> 'UR4', '|R2|' -> 'R2'."""
    return operand.strip("-|! ").split(".")[0]


def _counter_step(body: list[Instruction], branch: Instruction) -> int | None:
    """What the loop counter advances by: the constant added, in the body, to a register
    that the comparison setting the branch's predicate reads."""
    predicate = _register(branch.predicate.lstrip("@"))
    if not predicate:
        return None
    compare = next(
        (
            i
            for i in reversed(body)
            if i.base in ("ISETP", "UISETP")
            and i.operands
            and _register(i.operands[0]) == predicate
        ),
        None,
    )
    if compare is None:
        return None
    read = {_register(o) for o in compare.operands[1:]} - {"PT", "RZ", "URZ", "UPT"}
    steps = set()
    for i in body:
        if i.base not in ("IADD3", "UIADD3", "VIADD", "IADD", "UIADD") or len(i.operands) < 3:
            continue
        destination, source = _register(i.operands[0]), _register(i.operands[1])
        constants = [o for o in i.operands[2:] if _IMMEDIATE.match(o)]
        if destination in read and source == destination and len(constants) == 1:
            steps.add(abs(int(constants[0], 0)))
    return steps.pop() if len(steps) == 1 else None


def loops(instructions: list[Instruction], labels: dict[str, int]) -> list[Loop]:
    """Every loop of a function: one per backward branch, counted."""
    branches = []
    for i in instructions:
        if i.base == "BRA":
            target = _target(i, labels)
            if target is not None and target <= i.address:
                branches.append((target, i))
    found = []
    for target, branch in branches:
        body = [i for i in instructions if target <= i.address <= branch.address]
        nested = any(
            target <= t
            and b.address < branch.address
            and (t, b.address) != (target, branch.address)
            for t, b in branches
            if b is not branch
        )
        found.append(
            Loop(
                target,
                branch.address,
                Counter(i.kind for i in body),
                Counter(i.opcode for i in body),
                _counter_step(body, branch),
                nested,
                Counter(i.kind for i in _skippable(body, labels, branch)),
            )
        )
    return found


def _skippable(
    body: list[Instruction], labels: dict[str, int], branch: Instruction
) -> list[Instruction]:
    """The instructions of a loop's body that a forward branch inside it jumps over."""
    spans = []
    for i in body:
        if i.base == "BRA" and i is not branch:
            target = _target(i, labels)
            if target is not None and i.address < target <= branch.address:
                spans.append((i.address, target))
    return [i for i in body if any(a < i.address < t for a, t in spans)]


def main_loop(instructions: list[Instruction], labels: dict[str, int]) -> Loop:
    """The loop whose body holds the most FFMAs (or HMMAs, HGMMAs); the innermost among
    equals. A backward branch whose body holds an EXIT is no loop of the kernel's: it is
    a block the compiler placed after the kernel's end (the retry of an mbarrier wait,
    say) jumping back into it."""
    candidates = [lp for lp in loops(instructions, labels) if lp.math and not lp.opcodes["EXIT"]]
    if not candidates:
        raise NoMainLoop("no loop of this kernel holds an FFMA, HMMA or HGMMA")
    return max(candidates, key=lambda lp: (lp.math, -lp.instructions))


def copying_loop(
    instructions: list[Instruction], labels: dict[str, int], main: Loop
) -> Loop | None:
    """Where the main loop issues no TMA copy (a kernel whose warps specialize, steps 12
    and 13: the consumers multiply, the producer copies), the loop that issues the most;
    the shortest among equals. None where the main loop copies, or nothing does."""
    if main.counts["UTMALDG"]:
        return None
    found = [lp for lp in loops(instructions, labels) if lp.counts["UTMALDG"]]
    found = [lp for lp in found if not lp.opcodes["EXIT"]]
    return max(found, key=lambda lp: (lp.counts["UTMALDG"], -lp.instructions), default=None)


# ---- the evidence for one step on one architecture --------------------------------------------


def _k_slice(step: registry.Step) -> tuple[int, str] | None:
    if step.geometry.tma_boxes:  # a box of A is a slice of K wide
        return step.geometry.tma_boxes[0][0], "BK"
    for name in ("BK", "BS"):
        if name in step.params:
            return step.params[name], name
    return None


@dataclass(frozen=True)
class Evidence:
    """One step's kernel on one architecture: its main loop's instruction mix and its
    resources, all from the compiler."""

    step: str  # '05_blocktiling_2d'
    kernel: str  # the name expression compiled
    arch: str
    compiler: str  # 'NVRTC 13.5'
    disassembler: str  # 'nvdisasm 13.5.37'
    resources: compiler.Resources
    threads: int
    dynamic_shared: int
    occupancy: hardware.Occupancy
    loop: Loop
    k_per_iteration: float
    k_source: str
    elements_per_thread: float  # of C, from the registry's launch geometry
    notes: tuple[str, ...] = field(default=())
    # The producer's loop, where another warp than the main loop's issues the TMA copies
    # (copying_loop): their counts come from it, one slice of K an iteration as well.
    copying: Loop | None = None

    def _counted(self, kind: str) -> Loop:
        return self.copying if kind == "UTMALDG" and self.copying else self.loop

    def per_iteration(self, kind: str) -> int:
        return self._counted(kind).counts[kind]

    def per_k(self, kind: str) -> float:
        return self._counted(kind).counts[kind] / self.k_per_iteration

    def per_math(self, kinds) -> float | None:
        """Instructions of these classes per FFMA (or HMMA): e.g. LDS.128 per FFMA."""
        kinds = (kinds,) if isinstance(kinds, str) else kinds
        math = self.loop.math
        return sum(self.per_iteration(k) for k in kinds) / math if math else None

    @property
    def math_name(self) -> str:
        """The class of MATH the main loop does most of."""
        return self.loop.math_name

    @property
    def shown(self) -> list[str]:
        """The classes present in the loop, in CLASSES order."""
        return [c for c in CLASSES if self.per_iteration(c)]

    def table(self) -> str:
        """The report `python -m autograder sass` prints."""
        r = self.resources
        spilled = r.spill_store_bytes + r.spill_load_bytes
        k = self.k_per_iteration
        head = [
            f"{self.kernel} on {self.arch} ({self.compiler}, {self.disassembler})",
            (
                f"main loop: 0x{self.loop.start:04x}-0x{self.loop.end:04x}, "
                f"{self.loop.instructions} instructions; one iteration covers {k:g} values "
                f"of k ({self.k_source})"
            ),
            *(
                [
                    f"the producer's loop: 0x{self.copying.start:04x}-0x{self.copying.end:04x}, "
                    f"{self.copying.instructions} instructions, one slice of K an iteration "
                    "too: its TMA copies (UTMALDG) are counted there"
                ]
                if self.copying
                else []
            ),
            "",
            (
                f"{'instruction':<12} {'per iteration':>14} {'per k':>9} "
                f"{'per ' + self.math_name:>9} {'behind a branch':>16}"
            ),
        ]
        rows = []
        for kind in self.shown:
            skippable = self._counted(kind).skippable[kind]
            rows.append(
                f"{kind:<12} {self.per_iteration(kind):>14} {self.per_k(kind):>9.3g} "
                f"{self.per_math(kind):>9.3f} {skippable or '':>16}"
            )
        others = ", ".join(
            f"{op} {n}"
            for op, n in self.loop.opcodes.most_common()
            if Instruction(0, "", op, ()).kind == "other"
        )
        shared = f"{r.shared_bytes} bytes static" + (
            f" + {self.dynamic_shared} dynamic" if self.dynamic_shared else ""
        )
        branches = (
            "behind a branch: instructions that a forward branch inside the loop can jump "
            "over (one side of an if), counted above all the same"
            if any(self.loop.skippable.values())
            else "no branch inside the loop: every instruction above runs in every iteration"
        )
        foot = [
            "",
            (
                f"shared-memory load instructions per {self.math_name}: "
                f"{self.per_math(SHARED_LOADS):.3f}; global loads per {self.math_name}: "
                f"{self.per_math(GLOBAL_LOADS):.3f}"
            ),
            f"other: {others}" if others else "other: none",
            (
                f"registers: {r.registers} per thread; spills: {spilled} bytes; stack: "
                f"{r.stack_bytes} bytes; shared memory: {shared}; {self.threads} threads "
                "per block"
            ),
            f"theoretical occupancy: {self.occupancy}",
            branches,
            *(f"note: {n}" for n in self.notes),
        ]
        return "\n".join(head + rows + foot)

    def __str__(self) -> str:
        return self.table()


@functools.cache
def _evidence(source: str, expr: str, filename: str, arch: str) -> tuple:
    compiled = compiler.compile_for_arch(source, [expr], arch, filename)
    if compiled.cubin is None:
        raise ValueError(f"{arch} is a virtual architecture: it has no machine code to count")
    tool = find_tool()
    symbol = compiled.symbols[expr]
    found = functions(disassemble(compiled.cubin, tool))
    if symbol not in found:
        raise RuntimeError(f"{tool} printed no function {symbol} for {expr}")
    instructions, labels = found[symbol]
    main = main_loop(instructions, labels)
    return compiled, str(tool), main, copying_loop(instructions, labels, main)


def evidence(step: registry.Step | str, arch: str = "sm_90") -> Evidence:
    """Compile a step's kernel for arch, disassemble it, and count its main loop."""
    step = registry.step(step) if isinstance(step, str) else step
    if not step.path.suffix == ".cu":
        raise ValueError(f"{step.name} is not a CUDA kernel")
    if not step.runs_on(arch):
        raise ValueError(f"{step.name} needs {step.needs}, not {arch}")
    source = step.source()
    compiled, tool, loop, copying = _evidence(source, step.name_expression, step.path.name, arch)
    geometry = step.geometry
    elements = geometry.tile[0] * geometry.tile[1] / geometry.threads
    notes = []
    slice_ = _k_slice(step)
    if slice_ and loop.counter_step == slice_[0]:
        k, k_source = slice_[0], f"the loop counter advances by {slice_[1]} = {slice_[0]}"
    elif slice_:
        k = slice_[0]
        k_source = f"{slice_[1]} = {k}: each iteration takes one {slice_[1]}-wide slice of K"
    elif loop.counter_step:
        k, k_source = loop.counter_step, f"the loop counter advances by {loop.counter_step}"
    else:
        k = loop.counts["FFMA"] / elements
        k_source = "inferred: FFMAs / elements of C per thread"
    if loop.nested:
        notes.append("the main loop holds another loop: its counts are of code, not executions")
    # An FP32 product on FFMA does one per element of C per k. A tensor-core loop's
    # few FFMAs (3xTF32's included) are not its product: nothing to compare there.
    if loop.math_name == "FFMA" and loop.counts["FFMA"] / k != elements:
        notes.append(
            f"the loop counted does {loop.counts['FFMA'] / k:g} FFMA per k, not one per "
            f"element of C: each thread computes {elements:g}"
        )
    resources = compiled.resources[step.name_expression]
    dynamic = geometry.shared_bytes
    return Evidence(
        step=step.name,
        kernel=step.name_expression,
        arch=arch,
        compiler=f"NVRTC {compiler.nvrtc_version()}",
        disassembler=tool,
        resources=resources,
        threads=geometry.threads,
        dynamic_shared=dynamic,
        occupancy=resources.occupancy(geometry.threads, dynamic),
        loop=loop,
        k_per_iteration=k,
        k_source=k_source,
        elements_per_thread=elements,
        notes=tuple(notes),
        copying=copying,
    )


def gemm_steps() -> list[registry.Step]:
    """Every step of the registry whose kernel is a GEMM with an FMA main loop, the
    ladder and beyond (not step 00, Python, nor step 09, split-K's reduction)."""
    return [s for s in registry.ALL_STEPS if s.is_cuda and s.contract in ("gemm", "tma")]


# ---- tables for the book ---------------------------------------------------------------------


def _number(x: float | None, digits: int = 3) -> str:
    if x is None:
        return ""
    return f"{x:.{digits}g}" if x != int(x) else f"{int(x)}"


def markdown(step: registry.Step | str, archs=DEFAULT_ARCHS) -> str:
    """One step's main loop on each architecture, as Markdown: a table of each class of
    instruction per iteration, per k and per FFMA (the ratios the chapters argue from),
    a table of the kernel's resources and occupancy, and where the numbers come from."""
    step = registry.step(step) if isinstance(step, str) else step
    shown = [evidence(step, a) for a in archs if step.runs_on(a)]
    if not shown:
        raise ValueError(f"{step.name} runs on none of {', '.join(archs)}")
    kinds = [c for c in CLASSES if any(e.loop.counts[c] for e in shown)]
    math = shown[0].math_name
    lines = [
        "| instruction | "
        + " | ".join(f"{e.arch}: per iteration | per k | per {math}" for e in shown)
        + " |",
        "|---|" + "---:|---:|---:|" * len(shown),
    ]
    rows = [(kind, (kind,)) for kind in kinds]
    if sum(k in kinds for k in SHARED_LOADS) > 1:
        rows.append(("shared-memory loads, all widths", SHARED_LOADS))
    if sum(k in kinds for k in GLOBAL_LOADS) > 1:
        rows.append(("global loads, all widths", GLOBAL_LOADS))
    for label, classes in rows:
        cells = []
        for e in shown:
            n = sum(e.loop.counts[c] for c in classes)
            cells.append(f"{n} | {_number(n / e.k_per_iteration)} | {_number(e.per_math(classes))}")
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    lines += ["", "| | " + " | ".join(e.arch for e in shown) + " |", "|---|" + "---:|" * len(shown)]
    for label, get in (
        ("registers per thread", lambda e: e.resources.registers),
        ("bytes spilled", lambda e: e.resources.spill_store_bytes + e.resources.spill_load_bytes),
        ("shared memory per block", lambda e: f"{e.resources.shared_bytes + e.dynamic_shared} B"),
        ("threads per block", lambda e: e.threads),
        ("blocks per SM", lambda e: e.occupancy.blocks),
        (
            "occupancy (warps per SM)",
            lambda e: (
                f"{e.occupancy.warps}/{e.occupancy.max_warps} "
                f"({e.occupancy.fraction:.0%}), {' and '.join(e.occupancy.limited_by)}"
            ),
        ),
    ):
        lines.append(f"| {label} | " + " | ".join(str(get(e)) for e in shown) + " |")
    first = shown[0]
    notes = sorted({f"on {e.arch}, {n}" for e in shown for n in e.notes})
    for e in shown:
        behind = ", ".join(f"{e.loop.skippable[k]} {k}" for k in kinds if e.loop.skippable[k])
        if behind:
            notes.append(
                f"on {e.arch}, a branch inside the loop can jump over {behind} (one side of an "
                "if, such as a scalar fallback); they are counted all the same"
            )
    caption = (
        f"The main loop of `{first.kernel}` in the SASS of `kernels/{step.path.name}`, "
        f"compiled with {first.compiler} for {' and '.join(e.arch for e in shown)} and "
        f"disassembled by {first.disassembler} as this page was built (`python -m "
        f"autograder sass {step.id}`). One iteration covers {_number(first.k_per_iteration)} "
        f"values of k ({first.k_source}). Occupancy is theoretical: blocks of this size, "
        "registers and shared memory per SM, by `autograder/ladder/hardware.py`."
        + "".join(f" {n[0].upper()}{n[1:]}." for n in notes)  # each 'on sm_XX, …'
    )
    return "\n".join(lines) + "\n\n" + caption


def ladder_markdown(arch: str = "sm_90", steps=None) -> str:
    """Every CUDA step on one architecture, one row each: the main loop per k."""
    steps = steps if steps is not None else [s for s in gemm_steps() if s.runs_on(arch)]
    shown = [evidence(s, arch) for s in steps]
    kinds = [c for c in CLASSES if any(e.loop.counts[c] for e in shown)]
    lines = [
        "| step | k per iteration | " + " | ".join(kinds) + " | shared loads per FMA "
        "| registers | occupancy |",
        "|---|---:|" + "---:|" * len(kinds) + "---:|---:|---:|",
    ]
    for e in shown:
        cells = " | ".join(
            _number(e.per_k(k)) + ("\\*" if e.loop.skippable[k] else "") if e.loop.counts[k] else ""
            for k in kinds
        )
        lines.append(
            f"| {e.step} | {_number(e.k_per_iteration)} | {cells} | "
            f"{_number(e.per_math(SHARED_LOADS))} | {e.resources.registers} | "
            f"{e.occupancy.warps}/{e.occupancy.max_warps} |"
        )
    first = shown[0]
    return (
        "\n".join(lines) + f"\n\nInstructions per value of k in each step's main loop, "
        f"compiled with {first.compiler} for {arch} and disassembled by {first.disassembler} "
        "as this page was built; shared loads per FMA count LDS of every width per FFMA "
        "(per HMMA for tensor cores). Occupancy: warps per SM / the most an SM holds."
        + (
            " \\* Some of these sit behind a branch inside the loop (one side of an if, such "
            "as a scalar fallback) and need not run in every iteration."
            if any(any(e.loop.skippable[k] for k in kinds) for e in shown)
            else ""
        )
    )
