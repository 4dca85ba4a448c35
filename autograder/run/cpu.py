"""Run a course kernel on the CPU: the learner's own source, checked as it runs.

The source is translated, line for line, into C++ for cpu_runtime.h (which
explains how threads, barriers and checked pointers work there), compiled
with the machine's C++ compiler into a shared library, and called through
ctypes. Nothing is re-typed: the translation only renames CUDA's built-ins
and pointer types, so a compile error or a fault points at the learner's line.

That library is native code from a submission. What is compiled is the
source as NVRTC sees it, checked to be device code only (device_only), and
the process that loads it confines itself first (isolation).
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

from ..isolate import isolation
from . import contract, device_only, syntax
from .compiler import CompileError
from .faults import BadAccess, KernelFault
from .kernel import KernelSpec

RUNTIME = Path(__file__).with_name("cpu_runtime.h")
# Hidden visibility: each library keeps its own runtime. A process loads several (the
# learner's kernel and the reference, the diagnostic build beside the normal one), and
# exported inline variables and functions would otherwise all bind to the first's.
# No _FORTIFY_SOURCE, which Ubuntu's g++ (Colab's, the GPU machines') defines unasked:
# glibc then checks each longjmp, and a fault leaves a thread's fiber stack for its
# worker's, which may lie below it: "longjmp causes uninitialized stack frame", and
# the process aborted where it should have named the access.
FLAGS = (
    "-std=c++17", "-O2", "-shared", "-fPIC", "-pthread", "-w", "-fno-strict-aliasing",
    "-fvisibility=hidden", "-fvisibility-inlines-hidden", "-U_FORTIFY_SOURCE",
)  # fmt: skip
# How each build is compiled (autograder.judge.localize uses the last two). "diagnose"
# checks more, to name what went wrong (cpu_runtime.h's CPU_DIAGNOSE); "variants" holds
# many versions of the kernel, one switched on at a time (CPU_VARIANTS). Both are built
# for a short compile rather than speed: they run small cases only.
_QUICK = tuple(f if f != "-O2" else "-O1" for f in FLAGS)
BUILDS = {
    "normal": FLAGS,
    "diagnose": (*_QUICK, "-DCPU_DIAGNOSE"),
    "variants": (*_QUICK, "-DCPU_VARIANTS"),
}


def workers() -> int:
    """How many OS threads share out a launch's blocks: the cores this process may use,
    or SGEMM_CPU_WORKERS (a test runs a 16-core machine's count on two cores). Read at
    each launch: a child process is forked from one that imported this module earlier."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return int(os.environ.get("SGEMM_CPU_WORKERS", 0)) or cores or 1


CACHE = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "sgemm-course" / "cpu"
# The dynamic shared memory a block gets here (dynamic_shared() in cpu_runtime.h).
DYNAMIC_SHARED_BYTES = 48 * 1024

# What the CPU backend cannot run, found by name so that a kernel using it gets
# a clear refusal instead of a wrong verdict.
UNSUPPORTED = (
    (r"__shfl\w*", "warp shuffles"),
    (r"\batomic[A-Z]\w*", "atomic operations"),
    (r"__ballot\w*|__any_sync|__all_sync|__activemask|__match_\w+|__reduce_\w+_sync", "warp votes"),
    (r"__syncthreads_(?:count|and|or)", "barrier reductions"),
    (r"\basm\b", "inline PTX assembly"),
    (r"\bwmma::|\bnvcuda::|\bmma_sync\b", "tensor-core instructions (WMMA/mma)"),
    (r"__pipeline_\w+|\bcp\.async|memcpy_async|cuda::barrier", "asynchronous copies"),
    (r"cooperative_groups", "cooperative groups"),
    (r"__threadfence\w*", "memory fences"),
    (r"\btex[123]D\w*|\btexture\s*<|cudaTextureObject_t", "textures"),
    (r"\bclock(?:64)?\s*\(", "clock()"),
    (r"__half\b|__nv_bfloat16\b|\bhalf2?\b", "half-precision types"),
)


class UnsupportedOnCpu(Exception):
    """The kernel uses a construct the CPU backend cannot run; log: the C++ compiler's
    own output, where it was the compiler that could not build it."""

    def __init__(self, message: str, log: str = ""):
        super().__init__(message)
        self.log = log


class NoCompiler(RuntimeError):
    """No C++ compiler on this machine."""


def _c_string(text: str) -> str:
    return text.replace("\\", "\\\\").replace('"', '\\"')


def refuse_unsupported(source: str, filename: str) -> None:
    """Refuse, by name and line, what the CPU backend will not run: constructs
    it lacks (UnsupportedOnCpu), and directives that read files or hide code
    from NVRTC (device_only.HostCode), before any compiler reads the source."""
    code = device_only.code_only(source)
    for pattern, what in UNSUPPORTED:
        if m := re.search(pattern, code):
            line = code.count("\n", 0, m.start()) + 1
            raise UnsupportedOnCpu(
                f"the CPU backend cannot run {what} ({m.group(0).strip()} at {filename}:{line}): "
                "check this kernel on a GPU (--backend gpu)"
            )
    device_only.refuse_directives(source, filename)


_TYPES = r"unsigned\s+int|unsigned|float[24]?|int[24]?|double|char|short|long|size_t"
_QUALIFIERS = r"(?:\s*\b(?:const|volatile)\b)*"
# The types a kernel names itself: a template's type parameters, aliases.
_NAMED_TYPES = re.compile(
    r"\btemplate\s*<([^<>]*)>|\busing\s+(\w+)\s*=[^;]+;|\btypedef\s[^;]*?(\w+)\s*;"
)
_VOID_POINTER = re.compile(r"\b(?:const\s+|volatile\s+)*void\s*\*")
_DECLARATOR = r"\w+(?:\s*\[[^\];]+\])*"
_SHARED = re.compile(
    rf"(?<!extern )__shared__\s+((?:__align__\(\d+\)\s+)*)([\w:]+)\s+"
    rf"({_DECLARATOR}(?:\s*,\s*{_DECLARATOR})*)\s*;"
)
_NAME_AND_DIMS = re.compile(r"(\w+)((?:\s*\[[^\];]+\])*)")
_EXTERN_SHARED = re.compile(
    r"extern\s+__shared__\s+(?:__align__\(\d+\)\s+)*([\w:]+)\s+(\w+)"
    r"\s*\[\s*\]\s*;"
)


def _pointers(code: str) -> re.Pattern:
    """Pointer types to check (`const float*`, `T const*`): to the types CUDA spells, and
    to those the kernel names (whatever a template's T becomes, it is checked)."""
    named = set()
    for parameters, alias, typedef in _NAMED_TYPES.findall(code):
        named |= set(re.findall(r"\b(?:typename|class)\s+(\w+)", parameters)) | {alias, typedef}
    types = "|".join([_TYPES, *sorted(n for n in named if n)])
    return re.compile(rf"\b((?:(?:const|volatile)\s+)*(?:{types}){_QUALIFIERS})\s*\*")


def _shared_arrays(m: re.Match) -> str:
    """Each array of a __shared__ declaration (`__shared__ float As[8], Bs[8];`), one copy
    a worker; cpu_runtime.h's shared_of decides, once a template's types are known,
    which are checked element by element (a read of an element no thread has written
    stops the launch)."""
    align, kind, declarators = m.groups()
    return " ".join(
        f"static {align}__cpu::shared_of<{kind}{dims}> __cpu_{name}[__cpu::MAX_WORKERS]; "
        f'decltype(auto) {name} = __cpu_{name}[__cpu::worker_id()].fresh("{name}");'
        for name, dims in (d.groups() for d in _NAME_AND_DIMS.finditer(declarators))
    )


def _arrays(source: str, build: str) -> str:
    """A thread's own floats made safe to run and visible when misused, lines kept:
    every array checked on every index (cpu_runtime.h's bounded: an index past its end
    would overwrite the thread's other values), and what is declared without a value
    filled with NaN (which C then shows), or, in the diagnostic build, checked on every
    read and named (local_array, local_scalar). A parameter declared as an array takes
    the checked array it is passed (a ptr, or cpu_runtime.h's rows)."""
    parsed = syntax.Source.parse(source)
    edits = [
        (p.start, p.end, f"__cpu::ptr<{p.kind}> {p.name}" if p.dims.count("[") == 1
         else f"__cpu::rows<{p.kind}{p.dims}> {p.name}")
        for p in syntax.array_parameters(parsed)
    ]  # fmt: skip
    for declaration in syntax.own_floats(parsed):
        text = []
        for v in declaration.locals:
            named = f'"{v.name}", __FILE__, {v.line}'
            if not v.dims:  # a scalar without a value
                text.append(
                    f"__cpu::local_scalar<{v.kind}> {v.name}({named});"
                    if build == "diagnose"
                    else f"{v.kind} {v.name}; __cpu::poison_local({v.name});"
                )
                continue
            checked = "local_array" if build == "diagnose" and v.value is None else "bounded"
            value = f", {v.value}" if v.value is not None else ""
            text.append(
                f"__cpu::{checked}<{v.kind}{v.dims}> __cpu_{v.name}({named}{value}); "
                f"auto {v.name} = __cpu_{v.name}.view();"
            )
        edits.append((declaration.start, declaration.end, " ".join(text)))
    return parsed.edited(edits) if edits else source


def translate(
    source: str,
    name_expression: str,
    filename: str = "kernel.cu",
    kind: str = "gemm",
    build: str = "normal",
) -> str:
    """C++ for cpu_runtime.h, with the learner's line numbers (in `filename`, so that a
    fault names the learner's file and line), plus an entry point, cpu_launch, that
    takes the `kind` contract's arguments and, after each of its pointers, the padded
    buffer it lies in and that buffer's size. build: one of BUILDS.

    Raises contract.Mismatch when the kernel's parameters are not the contract's."""
    terms = contract.CONTRACTS[kind]
    contract.check(source, name_expression, filename, terms)
    code = _arrays(source, build)
    code = code.replace("reinterpret_cast<", "__cpu::cast<")
    code = _EXTERN_SHARED.sub(r"__cpu::ptr<\1> \2 = __cpu::dynamic_shared<\1>();", code)
    code = _SHARED.sub(_shared_arrays, code)
    code = _VOID_POINTER.sub("__cpu::vptr ", code)
    code = _pointers(code).sub(lambda m: f"__cpu::ptr<{m.group(1)}> ", code)
    parameters, arguments, checked = [], [], []
    for p in terms.parameters:
        if not p.extent:
            parameters.append(f"{p.types[0]} {p.name}")
            arguments.append(p.name)
            continue
        # Non-const, so that a kernel declaring A and B float* (as most published
        # ones do) gets them; const float* converts from these.
        parameters += [f"float* {p.name}", f"float* {p.name}_buffer", f"size_t {p.name}_size"]
        arguments.append(f"checked_{p.name}")
        checked.append(
            f"  __cpu::ptr<float> checked_{p.name}({p.name}, (size_t)({p.extent}), "
            f'{p.name}_buffer, {p.name}_size, "{p.name}");\n'
            f"  __cpu::matrices[{len(checked)}] = {{checked_{p.name}.name, checked_{p.name}.base, "
            f"checked_{p.name}.end, checked_{p.name}.lo, checked_{p.name}.hi}};"
        )
    checks = "\n".join(checked)
    return f'''#include "{RUNTIME.name}"
#line 1 "{_c_string(filename)}"
{code}
#line 1 "cpu_entry.cpp"
extern "C" CPU_EXPORT int cpu_launch({", ".join(parameters)},
                          unsigned gx, unsigned gy, unsigned layers, unsigned bx, unsigned by,
                          int reverse, unsigned workers, char* message, int message_size) {{
{checks}
  return __cpu::launch(dim3(gx, gy, layers), dim3(bx, by), reverse, workers,
                       [&] {{ {name_expression}({", ".join(arguments)}); }},
                       message, message_size);
}}
'''


def compiler() -> str:
    for name in (os.environ.get("CXX"), "g++", "c++", "clang++"):
        if name and shutil.which(name):
            return name
    raise NoCompiler(
        "the CPU backend needs a C++ compiler: install g++ (Debian/Ubuntu: "
        "apt install g++; Fedora: dnf install gcc-c++; macOS: xcode-select --install)"
    )


def preprocessed(spec: KernelSpec) -> str:
    """spec's source as the CPU backend builds it: checked to be device code only, and
    preprocessed as NVRTC would (device_only). Raises UnsupportedOnCpu, HostCode,
    NoCompiler or CompileError."""
    refuse_unsupported(spec.source, spec.filename)
    return device_only.preprocess(spec.source, spec.filename, compiler())


def build(spec: KernelSpec, kind: str = "normal", source: str | None = None) -> Path:
    """Compile spec for the CPU (cached by content) and return the shared library.
    kind: which build (BUILDS); source: what to build instead of preprocessed(spec),
    made from it by the grader (autograder.judge.localize)."""
    refuse_unsupported(spec.source, spec.filename)
    if spec.geometry.shared_bytes > DYNAMIC_SHARED_BYTES:
        raise UnsupportedOnCpu(
            f"the CPU backend gives a block {DYNAMIC_SHARED_BYTES} bytes of dynamic shared "
            f"memory, not the {spec.geometry.shared_bytes} this launch asks for: check this "
            "kernel on a GPU (--backend gpu)"
        )
    cxx = compiler()
    flags = BUILDS[kind]
    source = source or device_only.preprocess(spec.source, spec.filename, cxx)
    cpp = translate(source, spec.name_expression, spec.filename, spec.contract, kind)
    key = hashlib.sha256("\0".join([cpp, RUNTIME.read_text(), cxx, *flags]).encode())
    library = CACHE / f"{key.hexdigest()[:24]}.so"
    if library.exists():
        return library
    CACHE.mkdir(parents=True, exist_ok=True)
    # A name of its own for each build, the source as well as the library: two builds of
    # one kernel at once (a class graded on several workers, or two threads of one
    # process: the localizer's and a check run again) must not touch each other's files.
    fd, name = tempfile.mkstemp(suffix=".cpp", prefix=library.stem + ".", dir=CACHE)
    source_path = Path(name)
    with os.fdopen(fd, "w") as f:
        f.write(cpp)
    fd, name = tempfile.mkstemp(suffix=".tmp", prefix=library.stem + ".", dir=CACHE)
    os.close(fd)
    partial = Path(name)
    try:
        result = subprocess.run(
            [cxx, *flags, "-I", str(RUNTIME.parent), str(source_path), "-o", str(partial)],
            capture_output=True,
            text=True,
            check=False,
        )
    finally:
        source_path.unlink(missing_ok=True)
    if result.returncode:
        partial.unlink(missing_ok=True)
        _too_large_for_a_thread(result.stderr, spec.filename)
        raise UnsupportedOnCpu(_untranslatable(result.stderr, spec.filename), result.stderr)
    partial.chmod(0o755)  # mkstemp's file is its owner's alone; the confined child loads it
    # Linked, not moved, into place: atomic (no build sees half a library), and a library
    # once there is never replaced by a twin built alongside it. A confined process may
    # read the file it was allowed (Landlock allows an inode, not a name): one replaced
    # between its confinement and its dlopen failed the load with EACCES.
    try:
        os.link(partial, library)
    except FileExistsError:
        pass
    finally:
        partial.unlink()
    return library


def _too_large_for_a_thread(stderr: str, filename: str) -> None:
    """Where the compiler refused a thread's own array for its size (cpu_runtime.h's
    fits_a_thread), say so at the learner's line: past what a GPU thread's local memory
    holds it is the kernel's mistake (CompileError: a GPU refuses to launch it), past
    what a fiber's stack holds here, a gap in the CPU backend (UnsupportedOnCpu)."""
    if "a thread's own array over" not in stderr:
        return
    at = re.search(rf"^{re.escape(filename)}:(\d+):(\d+):\s+required from", stderr, re.M)
    if "a thread's own array over 512 KB" in stderr:
        where = f"{filename}:{at.group(1)}:{at.group(2)}: " if at else ""
        raise CompileError(filename, f"{where}error: a thread's own array takes more than "
                           "512 KB, the most local memory a GPU thread has",
                           "the CPU backend's C++ compiler")  # fmt: skip
    where = f" (at {filename}:{at.group(1)})" if at else ""
    raise UnsupportedOnCpu(
        f"the CPU backend cannot run a thread's own array of more than 32 KB{where}: it runs "
        "each CUDA thread on a stack of 128 KB. A GPU thread may hold up to 512 KB: check "
        "this kernel on a GPU (--backend gpu)",
        stderr,
    )


def _untranslatable(stderr: str, filename: str) -> str:
    """What the CPU backend could not build, by name and the learner's line, from the
    C++ compiler's first error there ("01_naive.cu:24:14: error: '__fdividef' was not
    declared in this scope")."""
    first = re.search(rf"^{re.escape(filename)}:(\d+):\d+: error: (.*)$", stderr, re.MULTILINE)
    if not first:
        where, what = "", "this kernel"
    else:
        named = re.search(r"[‘'`]([^’'`]+)[’'`]", first.group(2))
        where = f" at {filename}:{first.group(1)}"
        what = named.group(1) if named else first.group(2)
    return (
        f"the CPU backend cannot run {what}{where} (the C++ compiler said: "
        f"{first.group(2) if first else stderr.strip()[-500:]}). The kernel compiles for "
        "the GPU, so this is a gap in the CPU backend, not a mistake in your kernel: write "
        "that line another way to check it here, or check it on a GPU (--backend gpu)"
    )


_own_seconds = 0.0  # the own time of every launch in this process, summed (own_clock)

# Each library keeps its threads' stacks from one launch to the next (cpu_runtime.h's
# stack_pool): STACK_BYTES a thread of a block, for each of MAX_WORKERS workers at most.
# Step 09's GEMM runs the 17 libraries of its tile shapes in turn, and with 8 workers their
# stacks together passed the 4 GiB a confined child may map (isolation.Limits): "ran out
# of memory for the stacks". Past STACKS_KEPT_BYTES, the libraries launched longest ago
# give theirs back.
STACK_BYTES, MAX_WORKERS = 128 * 1024, 8
STACKS_KEPT_BYTES = 1 << 30
_stacks: dict[Path, tuple[int, Callable[[], None]]] = {}  # by library, the latest last


def _keep_stacks(path: Path, threads: int, release: Callable[[], None]) -> None:
    """Before a launch of `path`'s blocks of `threads`: what it may keep, counted, and
    the stacks of the libraries launched longest ago given back where all together
    would pass STACKS_KEPT_BYTES."""
    held = _stacks.pop(path, (0, release))[0]
    mine = max(held, min(workers(), MAX_WORKERS) * (threads + 1) * STACK_BYTES)
    while _stacks and sum(kept for kept, _ in _stacks.values()) + mine > STACKS_KEPT_BYTES:
        oldest = next(iter(_stacks))
        _stacks.pop(oldest)[1]()
    _stacks[path] = (mine, release)


def own_clock() -> float:
    """The kernels' own time in this process so far, in seconds: each launch's busiest
    worker's CPU time, summed. A launch takes about as long on an idle machine's clock;
    on a busy one the clock also counts the time other work had the CPUs, which is
    not the kernel's."""
    return _own_seconds


def launchers(specs: list[KernelSpec], scratch: Path) -> list:
    """Build every spec for the CPU, confine this process (isolation.enter: for good,
    with `scratch` its one writable directory: nothing is built after that), then
    load the libraries; return a launch for each (see _launcher).

    Successive launches alternate the order in which threads run between
    barriers, so a race changes the result from one launch to the next. The builds run
    side by side, one compiler a core (workers): step 09 builds step 08's kernel at
    every tile shape it may choose, and the compiler takes seconds for each.
    """
    with ThreadPoolExecutor(workers()) as pool:
        paths = list(pool.map(build, specs))
    isolation.enter(scratch, readable=paths)
    return [_launcher(spec, path) for spec, path in zip(specs, paths)]


def _launcher(spec: KernelSpec, path: Path):
    """launch(*arguments, layers=1): the kernel over a grid `layers` deep, with the
    arguments of its contract (NumPy arrays for the pointers); raises KernelFault where
    the runtime stopped it."""
    terms = contract.CONTRACTS[spec.contract]
    library = ctypes.CDLL(str(path))
    entry, own = library.cpu_launch, library.cpu_launch_seconds
    own.restype = ctypes.c_double
    floats = np.ctypeslib.ndpointer(np.float32, flags="C_CONTIGUOUS")
    kinds = {"float": ctypes.c_float}
    entry.argtypes = [
        *(
            t
            for p in terms.parameters
            for t in (
                (floats, floats, ctypes.c_size_t)
                if p.extent
                else (kinds.get(p.types[0], ctypes.c_int),)
            )
        ),
        *[ctypes.c_uint] * 5,
        ctypes.c_int,
        ctypes.c_uint,
        ctypes.c_char_p,
        ctypes.c_int,
    ]
    message = ctypes.create_string_buffer(512)
    launches = 0
    library.cpu_release_stacks.restype = None

    def launch(*arguments, layers: int = 1):
        nonlocal launches
        global _own_seconds
        M, N = arguments[:2]
        launches += 1
        _keep_stacks(path, spec.geometry.threads, library.cpu_release_stacks)
        status = entry(
            *(
                a
                for p, value in zip(terms.parameters, arguments)
                for a in ((value, *_buffer_of(value)) if p.extent else (value,))
            ),
            *spec.geometry.grid(M, N),
            layers,
            *spec.geometry.block,
            launches % 2 == 0,
            workers(),
            message,
            len(message),
        )
        _own_seconds += own()
        if status:
            raise _fault(message.value.decode(), spec)

    return launch


def device() -> str:
    """The CPU backend, as a report names it: the compiler, and whether it is confined
    (isolation.state says how)."""
    return f"the CPU ({compiler()}, no timings; {isolation.status()})"


def _buffer_of(matrix: np.ndarray):
    """The padded buffer a matrix view lies in (the matrix itself if it is no view)."""
    buffer = matrix.base if isinstance(matrix.base, np.ndarray) else matrix
    return buffer, buffer.size


# How the runtime words a bad access to a matrix (cpu_runtime.h's ptr::outside and
# ptr::misaligned): "thread (3, 0, 0) of block (0, 1, 0) read A[8255], 2 floats past the
# end of A, at 05_blocktiling_2d.cu:41", "... made a misaligned 16-byte access to B at
# an address that is not a multiple of 16 bytes, at 06_vectorized.cu:29".
_BAD_ACCESS = re.compile(
    r"thread \((\d+), (\d+), (\d+)\) of block \((\d+), (\d+), (\d+)\) "
    r"(?:(?:read|accessed) (\w+)\[(-?\d+)\], \d+ floats? (?:past the end|before the start) of \w+"
    r"|made a misaligned \d+-byte access to (\w+) at an address that is not a multiple of "
    r"\d+ bytes)(?:, at (.+?):(\d+))?"
)


def _fault(message: str, spec: KernelSpec) -> KernelFault:
    """The runtime's message as a KernelFault, with each bad access to a matrix it names
    as data, and the learner's line of source it was at."""
    lines = spec.source.splitlines()
    accesses = []
    for m in _BAD_ACCESS.finditer(message):
        *who, outside, index, misaligned, _, line = m.groups()
        thread, block = tuple(map(int, who[:3])), tuple(map(int, who[3:]))
        number = int(line) if line else None
        code = lines[number - 1] if number and number <= len(lines) else ""
        kind = "outside" if outside else "misaligned"
        index = int(index) if outside else None
        accesses.append(BadAccess(kind, outside or misaligned, index, thread, block, number, code))
    return KernelFault(message, tuple(accesses), spec.contract)
