"""What to run: a kernel's source, the name to instantiate, and how to launch it.

A `KernelSpec` is plain data (picklable), so the checker can hand it to the
child process that runs the kernel.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from pathlib import Path

from ..ladder import registry
from ..ladder.registry import Geometry, Step


class SpecError(ValueError):
    """The kernel or its launch geometry could not be worked out from what was given."""


def _require_cuda(step: Step) -> None:
    if not step.is_cuda:
        raise SpecError(
            f"{step.name} is a {step.language} step: its notebook runs it, and there is "
            "no kernel to compile, launch or time"
        )


class NotOnce(ValueError):
    """A substitution whose text does not occur exactly once in the source."""


def substituted(spec: "KernelSpec", substitutions) -> "KernelSpec":
    """spec with each (old, new) applied to its source; each old must occur exactly
    once, so that a change to the kernel cannot leave a substitution that silently
    changes nothing (tests/planted.py's bugs, autograder/measure/ablation.py's variants)."""
    source = spec.source
    for old, new in substitutions:
        if source.count(old) != 1:
            raise NotOnce(f"{old!r} occurs {source.count(old)} times in {spec.filename}, not once")
        source = source.replace(old, new)
    every = spec.every_term and replace(spec.every_term, source=source)
    return replace(spec, source=source, every_term=every)


@dataclass(frozen=True)
class KernelSpec:
    source: str
    filename: str
    name_expression: str
    geometry: Geometry
    input_roundoff: float = 0.0  # see registry.Step: for the checker's tolerance
    launch_by_hand: bool = False  # the geometry came from --block/--tile, not from a step
    # The contract the kernel takes (contract.CONTRACTS). A "reduce" kernel is
    # step 09's split-K reduction: what runs, is checked and is timed is the
    # GEMM that autograder.run.by_shape builds around it.
    contract: str = "gemm"
    # For a "reduce" kernel: split K on every shape (composed.graded_splits), so
    # that the reduction runs in every case; False: as the dispatcher chooses,
    # as `bench` runs it.
    split_every_case: bool = False
    # The same kernel at its step's every_term parameters (registry.Step), which
    # the checker runs too; None where there are none.
    every_term: "KernelSpec | None" = None
    # The architecture-specific target to build for ('sm_90a'), from the step
    # (registry.Step.target); None: the GPU's own architecture.
    target: str | None = None
    # The shapes (M, N, K) the kernel is written for, where it assumes multiples of
    # its tile (a kernel by others): the checker runs these, and the localizer shrinks
    # and confirms a case within them. None: every shape, as the course's steps are.
    shapes: tuple[tuple[int, int, int], ...] | None = None
    # Whether the kernel must leave C unread where beta = 0 (registry.Step): the
    # checker then gives it a C it cannot read without harm (checker.unread_c).
    leaves_c_unread: bool = False

    @classmethod
    def from_step(cls, step: Step) -> "KernelSpec":
        _require_cuda(step)
        every = step.at_every_term()
        return cls(
            step.source(),
            step.path.name,
            step.name_expression,
            step.geometry,
            step.input_roundoff,
            contract=step.contract,
            split_every_case=step.contract == "reduce",
            every_term=cls.from_step(every) if every else None,
            target=step.target,
            leaves_c_unread=step.leaves_c_unread,
        )

    @property
    def label(self) -> str:
        return f"{self.name_expression} from {self.filename}"

    @property
    def waits_on_mbarriers(self) -> bool:
        """Whether the kernel hands its buffers over with mbarriers (steps 12 and 13)
        rather than __syncthreads(): a hang or a race in it most likely lies there."""
        return "mbarrier." in self.source


_GLOBAL = re.compile(r"(template\s*<[^>]*>\s*)?__global__\s+void\s+(\w+)\s*\(")


def global_kernels(source: str) -> dict[str, bool]:
    """The __global__ functions a source defines, each with whether it is a template."""
    found = {}
    for m in _GLOBAL.finditer(_strip_attributes(_strip_comments(source))):
        found[m.group(2)] = m.group(1) is not None
    return found


def template_arguments(source: str, name_expression: str) -> dict[str, int]:
    """The integer template parameters of the kernel a name expression instantiates,
    by name: {"BM": 128, ...} for "sgemm_x<128, ...>"; {} for a kernel that is no
    template, or whose parameters are not plain ints."""
    name, _, args = name_expression.partition("<")
    code = _strip_attributes(_strip_comments(source))
    declared = rf"template\s*<([^>]*)>\s*__global__\s+void\s+{re.escape(name.strip())}\s*\("
    m = re.search(declared, code)
    if not m or not args:
        return {}
    # "int SLIDE = 0": a parameter with a default, which the expression may leave out.
    declared = [p.split("=") for p in m.group(1).split(",")]
    if not all(set(d[0].split()[:-1]) - {"const"} <= _INTEGERS for d in declared):
        return {}
    names = [d[0].split()[-1] for d in declared]
    defaults = [d[1].strip() if len(d) > 1 else None for d in declared]
    values = [a.strip() for a in args.rstrip("> ").split(",")]
    values += defaults[len(values) :]
    if len(names) != len(values) or not all(v and v.lstrip("-").isdigit() for v in values):
        return {}
    return {n: int(v) for n, v in zip(names, values, strict=True)}


# The types of a template's integer parameters (`const int BM`, `uint TM`).
_INTEGERS = {"int", "unsigned", "uint", "long", "short", "size_t", "int32_t", "uint32_t"}


def _strip_comments(source: str) -> str:
    return re.sub(r"//[^\n]*|/\*.*?\*/", " ", source, flags=re.DOTALL)


# A kernel's attributes between `__global__ void` and its name.
_ATTRIBUTES = re.compile(r"__launch_bounds__|__cluster_dims__")


def _strip_attributes(source: str) -> str:
    """Drop `__launch_bounds__(...)` and `__cluster_dims__(...)`, whose arguments may hold
    nested parentheses."""
    out, i = [], 0
    while m := _ATTRIBUTES.search(source, i):
        out.append(source[i : m.start()])
        k = source.find("(", m.start())
        depth = 0
        while k < len(source):
            depth += {"(": 1, ")": -1}.get(source[k], 0)
            k += 1
            if depth == 0:
                break
        i = k
    out.append(source[i:])
    return "".join(out)


def resolve(
    source: str, filename: str, kernel: str | None = None, like: str | None = None
) -> tuple[str, Step | None]:
    """Which kernel of the source to run, as a name expression, and the step it is like.

    The step comes from --like, or else from a step whose file or kernel name
    matches; a template kernel is instantiated with that step's parameters
    unless `kernel` spells out its own template arguments.
    """
    kernels = global_kernels(source)
    if not kernels:
        raise SpecError(f"{filename} defines no __global__ kernel")
    name = kernel.split("<")[0].strip() if kernel else None
    if name is None:
        if len(kernels) > 1:
            raise SpecError(
                f"{filename} defines {len(kernels)} kernels "
                f"({', '.join(kernels)}): choose one with --kernel"
            )
        name = next(iter(kernels))
    elif name not in kernels:
        raise SpecError(
            f"{filename} defines no __global__ kernel {name!r}; it defines {', '.join(kernels)}"
        )
    step = _guess_step(filename, name, like)
    if kernel and "<" in kernel:
        return kernel.strip(), step
    if not kernels[name]:
        return name, step
    if not (step and step.params):
        raise SpecError(
            f"{name} is a template: give --like STEP to instantiate it with "
            f"that step's parameters, or --kernel '{name}<...>'"
        )
    return _instance(name, step), step


def from_file(path: str | Path, **options) -> KernelSpec:
    """Resolve a learner's .cu file into a KernelSpec (options: see from_source)."""
    path = Path(path)
    return from_source(path.read_text(), path.name, **options)


def from_source(
    source: str,
    filename: str,
    kernel: str | None = None,
    like: str | None = None,
    block: tuple[int, int] | None = None,
    tile: tuple[int, int] | None = None,
    rows_on: str | None = None,
) -> KernelSpec:
    """Resolve a kernel's source into a KernelSpec.

    The geometry comes from explicit --block/--tile/--rows-on, or else from
    the step that `resolve` finds.
    """
    expression, step = resolve(source, filename, kernel, like)
    if block or tile:
        if not (block and tile):
            raise SpecError("give --block and --tile together (or --like STEP)")
        geometry = Geometry(block=block, tile=tile, rows_on=rows_on or "y")
    elif step:
        geometry = step.geometry
        if rows_on:
            geometry = replace(geometry, rows_on=rows_on)
    else:
        raise SpecError(
            f"how should {expression} be launched? Give --like STEP to borrow a "
            "step's geometry, or --block BXxBY --tile BMxBN [--rows-on x|y]"
        )
    # The tolerance is the step's only when the kernel is judged as that step: a
    # geometry given by hand judges it as plain FP32, whatever the file is called.
    judged_as_step = step and (like or not (block or tile))
    roundoff = step.input_roundoff if judged_as_step else 0.0
    unread = bool(judged_as_step and step.leaves_c_unread)
    kind = step.contract if step else "gemm"
    # A template instantiated at the step's parameters is checked at its every-term
    # parameters too; one whose arguments were given is checked as given.
    every = step.at_every_term() if step and judged_as_step else None
    name = expression.split("<")[0]
    every_term = None
    if every and "<" in expression and expression == _instance(name, step):
        every_term = KernelSpec(
            source,
            filename,
            _instance(name, every),
            every.geometry,
            roundoff,
            contract=kind,
            leaves_c_unread=unread,
        )
    return KernelSpec(
        source,
        filename,
        expression,
        geometry,
        roundoff,
        bool(block or tile),
        kind,
        kind == "reduce",
        every_term,
        step.target if step else None,
        leaves_c_unread=unread,
    )


def _instance(name: str, step: Step) -> str:
    return f"{name}<{', '.join(str(v) for v in step.params.values())}>"


def _guess_step(filename: str, kernel: str, like: str | None) -> Step | None:
    if like:
        try:
            step = registry.step(like)
        except KeyError as e:
            raise SpecError(e.args[0]) from None
        _require_cuda(step)
        return step
    for s in registry.KERNELS:
        if filename.startswith(s.id + "_") or kernel == s.kernel:
            return s
    return None
