"""Compiling kernels with NVRTC: readable compile errors and a resource report.

Two routes lead to NVRTC. `compile_for_arch` uses its official Python bindings
(cuda-bindings) and needs neither a GPU nor a driver, so it works on a laptop
and in CI, for any architecture. `load` goes through CuPy's RawModule, which
compiles for the GPU at hand and hands back a launchable function. Both report
errors the same way: the compiler's own message, against the learner's file
name and line numbers (nothing is ever prepended to their source).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field, replace

from ..ladder import hardware

# With a driver present, NVRTC 13 answers a repeated compilation from the
# driver's compute cache (~/.nv/ComputeCache) without running ptxas, and then
# prints no resource report (seen on an H100, CUDA 13.0). The report is the
# point of compiling here, so the cache stays off in this process; CuPy
# builds cubins for the GPU at hand and never needed it.
os.environ["CUDA_CACHE_DISABLE"] = "1"

# The smallest GPU the course targets (a T4, sm_75), from autograder/ladder/hardware.py,
# the one table of limits; kept here under these names for their callers.
_T4 = hardware.arch(hardware.SMALLEST)
REGISTERS_PER_SM = _T4.registers_per_sm
MAX_REGISTERS_PER_THREAD = _T4.max_registers_per_thread
MAX_THREADS_PER_BLOCK = _T4.max_threads_per_block
MAX_STATIC_SHARED_BYTES = _T4.shared_per_block_static

DEFAULT_OPTIONS = ("-std=c++17",)


class CompileError(Exception):
    """The kernel did not compile; str() is the compiler's errors (errors_only), log
    all it said, both against the learner's file name."""

    def __init__(self, filename: str, log: str, compiler: str):
        self.filename = filename
        self.log = _relabel(log, filename).strip()
        self.compiler = compiler
        self.errors = errors_only(self.log)
        super().__init__(f"{filename} did not compile ({compiler}):\n{self.errors}")


class NvrtcUnavailable(RuntimeError):
    """NVRTC's Python bindings are not installed."""


def _relabel(log: str, filename: str) -> str:
    # CuPy names the program after a temporary file; show the learner's name.
    return re.sub(r"^\S*?\.cu(?=\(\d+\))", filename, log, flags=re.MULTILINE)


# The first line of one of NVRTC's diagnostics: 'mine.cu(7): error: expected a ";"'.
_DIAGNOSTIC = re.compile(r"^(.*)\((\d+)\): (catastrophic error|error|warning|remark)\b")


def errors_only(log: str) -> str:
    """NVRTC's errors, without its warnings, remarks ("Remark: The warnings can be
    suppressed ...") and closing count, which bury them; the whole log where it names
    no error (another compiler's, or warnings alone)."""
    diagnostics = log.split("\n\n")
    errors = [d for d in diagnostics if (m := _DIAGNOSTIC.match(d)) and "error" in m.group(3)]
    return "\n\n".join(errors) if errors else log


# A statement NVRTC finds unfinished at the next line's first token, and what it wanted.
_EXPECTED = re.compile(r'^.*\((\d+)\): error: expected a "([;)\]])"\n(.*)\n( *)\^', re.M)
# How a line may end where the statement goes on (or is whole) on the next line.
_GOES_ON = tuple(";{},([:\\")


def _with_hints(log: str, source: str, filename: str) -> str:
    """log with a hint under each 'expected a ";"' (or ")", "]") that NVRTC reports at
    the first token of a line: the mistake is most likely at the end of the line of
    code before, which it names when that line does not end as a finished one does."""
    lines = source.split("\n")

    def hint(m: re.Match) -> str:
        number, wanted, echoed, caret = int(m.group(1)), m.group(2), m.group(3), m.group(4)
        if len(caret) != len(echoed) - len(echoed.lstrip()):  # not the line's first token
            return m.group(0)
        before = number - 1
        while before > 0 and not _code(lines[before - 1]):
            before -= 1
        code = _code(lines[before - 1]) if before else ""
        if not code or code.startswith("#") or code.endswith(_GOES_ON):
            return m.group(0)
        return (
            f'{m.group(0)}\n  probably the line before, {filename}({before}): a missing "{wanted}"'
        )

    return _EXPECTED.sub(hint, log)


def _code(line: str) -> str:
    """A line without its // comment or surrounding blanks."""
    return line.split("//")[0].strip()


@dataclass(frozen=True)
class Resources:
    """What ptxas reports for one kernel on one architecture."""

    kernel: str
    arch: str
    registers: int
    shared_bytes: int
    stack_bytes: int
    spill_store_bytes: int
    spill_load_bytes: int

    def problems(self, threads: int) -> list[str]:
        """What would make this kernel slow or unlaunchable with `threads` per block."""
        found = []
        spilled = self.spill_store_bytes + self.spill_load_bytes
        if spilled:
            found.append(
                f"spills registers to local memory ({self.spill_store_bytes} bytes "
                f"stored, {self.spill_load_bytes} loaded per thread)"
            )
        if self.stack_bytes:
            found.append(
                f"uses a {self.stack_bytes}-byte stack frame (an array indexed at run "
                "time lives in slow local memory)"
            )
        found += hardware.launch_problems(
            self.limits_arch, threads, self.registers, static_shared=self.shared_bytes
        )
        return found

    @property
    def limits_arch(self) -> str:
        """The architecture whose limits apply: the one compiled for, or the T4's
        where hardware.py does not know it."""
        try:
            return hardware.arch(self.arch).name
        except KeyError:
            return hardware.SMALLEST

    def occupancy(self, threads: int, dynamic_shared: int = 0) -> hardware.Occupancy:
        """Theoretical occupancy on the architecture compiled for, with `threads` per block."""
        return hardware.occupancy(
            self.limits_arch, threads, self.registers, self.shared_bytes + dynamic_shared
        )

    def __str__(self) -> str:
        return (
            f"{self.kernel} on {self.arch}: {self.registers} registers, "
            f"{self.shared_bytes} bytes shared memory, {self.stack_bytes} bytes stack, "
            f"{self.spill_store_bytes + self.spill_load_bytes} bytes spilled"
        )


@dataclass(frozen=True)
class Compiled:
    arch: str
    ptx: str
    resources: dict[str, Resources]  # by name expression
    log: str
    # The machine code ptxas built for arch (an ELF file, what nvdisasm reads);
    # None when arch names a virtual architecture (compute_XX), which has none.
    cubin: bytes | None = None
    # Each name expression's symbol in the cubin ('sgemm_vectorized<...>' -> '_Z16...').
    symbols: dict[str, str] = field(default_factory=dict)


def _nvrtc():
    try:
        from cuda.bindings import nvrtc
    except ImportError as e:
        raise NvrtcUnavailable(
            "compiling without a GPU needs NVRTC's Python bindings: "
            "pip install cuda-bindings nvidia-cuda-nvrtc"
        ) from e
    return nvrtc


def nvrtc_version() -> str:
    nvrtc = _nvrtc()
    _, major, minor = nvrtc.nvrtcVersion()
    return f"{major}.{minor}"


def compile_for_arch(
    source: str,
    name_expressions: list[str],
    arch: str = "sm_90",
    filename: str = "kernel.cu",
    options: tuple[str, ...] = DEFAULT_OPTIONS,
) -> Compiled:
    """Compile with NVRTC for `arch` (no GPU needed) and report each kernel's resources."""
    nvrtc = _nvrtc()
    compiler = f"NVRTC {nvrtc_version()}, {arch}"

    def check(result, what):
        err = result[0]
        if err != nvrtc.nvrtcResult.NVRTC_SUCCESS:
            raise RuntimeError(f"NVRTC {what} failed: {nvrtc.nvrtcGetErrorString(err)[1].decode()}")
        return result[1:]

    (prog,) = check(
        nvrtc.nvrtcCreateProgram(source.encode(), filename.encode(), 0, [], []), "program creation"
    )
    try:
        for expr in name_expressions:
            check(nvrtc.nvrtcAddNameExpression(prog, expr.encode()), "name expression")
        opts = [*options, f"--gpu-architecture={arch}", "--ptxas-options=-v"]
        (err,) = nvrtc.nvrtcCompileProgram(prog, len(opts), [o.encode() for o in opts])
        log = _text(
            nvrtc.nvrtcGetProgramLog,
            check(nvrtc.nvrtcGetProgramLogSize(prog), "log")[0],
            prog,
            check,
        )
        if err != nvrtc.nvrtcResult.NVRTC_SUCCESS:
            raise CompileError(filename, _with_hints(log, source, filename), compiler)
        lowered = {}
        for expr in name_expressions:
            (name,) = check(nvrtc.nvrtcGetLoweredName(prog, expr.encode()), "lowered name")
            lowered[name.decode()] = expr
        ptx = _text(nvrtc.nvrtcGetPTX, check(nvrtc.nvrtcGetPTXSize(prog), "PTX")[0], prog, check)
        cubin = None
        if arch.startswith("sm_"):
            cubin = bytearray(check(nvrtc.nvrtcGetCUBINSize(prog), "cubin size")[0])
            check(nvrtc.nvrtcGetCUBIN(prog, cubin), "cubin")
            cubin = bytes(cubin)
    finally:
        nvrtc.nvrtcDestroyProgram(prog)
    resources = {
        lowered[k]: replace(r, kernel=lowered[k])
        for k, r in _parse_ptxas(log, arch).items()
        if k in lowered
    }
    missing = [expr for expr in name_expressions if expr not in resources]
    if missing:
        raise RuntimeError(
            f"ptxas printed no resource report for {', '.join(missing)}; "
            "is a compilation cache answering? (CUDA_CACHE_DISABLE=1 turns it off)"
        )
    symbols = {expr: name for name, expr in lowered.items()}
    return Compiled(arch, ptx, resources, log, cubin, symbols)


def _text(get, size: int, prog, check) -> str:
    """A string NVRTC writes into a buffer we provide. The buffer must be a
    bytearray: NVRTC writes into it in place, and writing into a bytes object
    (as in the bindings' examples) corrupts Python's cached one-byte strings
    when the text is empty, seen on cuda-bindings 13.3."""
    buffer = bytearray(size)
    check(get(prog, buffer), "text")
    return bytes(buffer).rstrip(b"\x00").decode(errors="replace")


_ENTRY = re.compile(r"Compiling entry function '(\S+)'")
_FRAME = re.compile(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads")
_USED = re.compile(r"Used (\d+) registers(?:.*?(\d+) bytes smem)?")


def _parse_ptxas(log: str, arch: str) -> dict[str, Resources]:
    """ptxas -v prints, per kernel: the entry line, its frame, then registers and smem."""
    found, name, frame = {}, None, (0, 0, 0)
    for line in log.splitlines():
        if m := _ENTRY.search(line):
            name, frame = m.group(1), (0, 0, 0)
        elif (m := _FRAME.search(line)) and name:
            frame = tuple(int(g) for g in m.groups())
        elif (m := _USED.search(line)) and name:
            found[name] = Resources(
                kernel=name,
                arch=arch,
                registers=int(m.group(1)),
                shared_bytes=int(m.group(2) or 0),
                stack_bytes=frame[0],
                spill_store_bytes=frame[1],
                spill_load_bytes=frame[2],
            )
            name = None
    return found


def load(
    source: str,
    name_expression: str,
    filename: str = "kernel.cu",
    options: tuple[str, ...] = DEFAULT_OPTIONS,
    target: str | None = None,
):
    """Compile for the current GPU through CuPy and return the launchable function;
    for an architecture-specific target ('sm_90a', which CuPy does not build for),
    through NVRTC's bindings for that target, loaded by CuPy."""
    import cupy

    if target:
        compiled = compile_for_arch(source, [name_expression], target, filename, options)
        module = cupy.cuda.function.Module()
        module.load(compiled.cubin)
        return LoadedCubin(module.get_function(compiled.symbols[name_expression]))
    module = cupy.RawModule(code=source, options=options, name_expressions=[name_expression])
    try:
        return module.get_function(name_expression)
    except cupy.cuda.compiler.CompileException as e:
        from cupy.cuda import nvrtc

        major, minor = nvrtc.getVersion()
        log = _with_hints(e.get_message(), source, filename)
        raise CompileError(filename, log, f"NVRTC {major}.{minor} via CuPy") from None


class LoadedCubin:
    """A kernel CuPy loaded from a cubin (cupy.cuda.function.Function), with the
    attributes of CuPy's RawKernel that the backends read and set."""

    def __init__(self, function):
        self._function = function

    def __call__(self, *args, **kwargs):
        return self._function(*args, **kwargs)

    @staticmethod
    def _which(name: str) -> int:
        """The driver's number for CU_FUNC_ATTRIBUTE_<name>."""
        from cuda.bindings.driver import CUfunction_attribute

        return int(getattr(CUfunction_attribute, f"CU_FUNC_ATTRIBUTE_{name}"))

    def _get(self, name: str) -> int:
        from cupy.cuda import driver

        return driver.funcGetAttribute(self._which(name), self._function.ptr)

    max_threads_per_block = property(lambda self: self._get("MAX_THREADS_PER_BLOCK"))
    num_regs = property(lambda self: self._get("NUM_REGS"))
    shared_size_bytes = property(lambda self: self._get("SHARED_SIZE_BYTES"))

    @property
    def max_dynamic_shared_size_bytes(self) -> int:
        return self._get("MAX_DYNAMIC_SHARED_SIZE_BYTES")

    @max_dynamic_shared_size_bytes.setter
    def max_dynamic_shared_size_bytes(self, size: int) -> None:
        from cupy.cuda import driver

        which = self._which("MAX_DYNAMIC_SHARED_SIZE_BYTES")
        driver.funcSetAttribute(self._function.ptr, which, size)
