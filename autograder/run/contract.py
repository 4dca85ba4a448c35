"""The course's contracts: the parameters a kernel takes, as the grader calls it.

Every step's kernel takes the GEMM contract, but step 09's split-K reduction,
which takes the reduction's, and the Hopper steps 12 and 13, which take tensor
maps of A and B too (TMA). A kernel declared otherwise (no alpha, C before A,
a double) would be called with arguments it does not expect: on a GPU that
reads garbage or crashes, on the CPU it does not link. Both backends check the
declaration first (autograder.run.backends) and say where it differs from the contract.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from .device_only import code_only

# The "compiler" a contract mismatch is reported by (compiler.CompileError.compiler).
CHECKER = "the course's contract"


class Mismatch(ValueError):
    """The kernel's parameters are not the course's contract; str() says where they differ."""


@dataclass(frozen=True)
class Parameter:
    name: str
    # The types a kernel may declare for it, the contract's own first (A and B
    # as float*, as most published kernels have them, run as well).
    types: tuple[str, ...]
    # For a pointer: how many floats it points to, as a C++ expression of the
    # scalar parameters and `layers` (gridDim.z); the CPU backend checks every
    # access against it.
    extent: str = ""


@dataclass(frozen=True)
class Contract:
    name: str  # what the kernel computes, in a few words
    parameters: tuple[Parameter, ...]

    def declaration(self, kernel: str) -> str:
        own = ", ".join(f"{p.types[0]} {p.name}" for p in self.parameters)
        return f'extern "C" __global__ void {kernel}({own})'

    @property
    def pointers(self) -> tuple[Parameter, ...]:
        return tuple(p for p in self.parameters if p.extent)


_INT = ("int", "unsigned int", "unsigned")
# C = alpha * A * B + beta * C: what every step's kernel takes. A grid of
# `layers` > 1 (step 09's split-K) multiplies one run of K per layer into
# `layers` matrices of M x N, one after the other in C.
GEMM = Contract(
    "C = alpha * A * B + beta * C",
    (
        Parameter("M", _INT),
        Parameter("N", _INT),
        Parameter("K", _INT),
        Parameter("alpha", ("float",)),
        Parameter("A", ("const float*", "float*"), "M * K"),
        Parameter("B", ("const float*", "float*"), "K * N"),
        Parameter("beta", ("float",)),
        Parameter("C", ("float*",), "M * N * layers"),
    ),
)
# C = alpha * (the sum of `splits` partial products) + beta * C: step 09's
# split-K reduction.
REDUCE = Contract(
    "C = alpha * (partial[0] + ... + partial[splits - 1]) + beta * C",
    (
        Parameter("M", _INT),
        Parameter("N", _INT),
        Parameter("splits", _INT),
        Parameter("alpha", ("float",)),
        Parameter("partial", ("const float*", "float*"), "M * N * splits"),
        Parameter("beta", ("float",)),
        Parameter("C", ("float*",), "M * N"),
    ),
)
# The GEMM, with A and B also described for Hopper's bulk tensor copy engine
# (TMA): step 12's. The maps (autograder.run.tensor_maps) are made on the host,
# per launch, and passed by value as `const __grid_constant__ TensorMap`; a map
# the engine cannot describe (rows not 16-byte multiples) is passed as zeros.
TMA = Contract(
    "C = alpha * A * B + beta * C, with tensor maps of A and B",
    (
        *GEMM.parameters,
        Parameter("mapA", ("TensorMap",)),
        Parameter("mapB", ("TensorMap",)),
    ),
)
CONTRACTS = {"gemm": GEMM, "reduce": REDUCE, "tma": TMA}
# The GEMM contract's declaration, with NAME for the kernel's name.
CONTRACT = GEMM.declaration("NAME")


def _parameter_type(declaration: str) -> str:
    """A parameter's type as the contract writes it: 'const float* __restrict__ A' ->
    'const float*'; top-level const (const int M, float* const C) is dropped."""
    for qualifier in ("__restrict__", "__grid_constant__"):
        declaration = declaration.replace(qualifier, " ")
    words = re.findall(r"\w+|\*", declaration)
    if words and words[-1] not in ("*", "int", "float", "unsigned", "const", "double", "long"):
        words = words[:-1]  # the parameter's name
    if "*" not in words:
        return " ".join(w for w in words if w not in ("const", "volatile"))
    star = words.index("*")
    pointee = words[:star]
    base = " ".join(w for w in pointee if w not in ("const", "volatile"))
    stars = "*" * words.count("*")
    return ("const " if "const" in pointee else "") + base + stars


def check(source: str, name_expression: str, filename: str, contract: Contract = GEMM) -> None:
    """Raise Mismatch, saying where, when the kernel named by name_expression
    does not take the contract's parameters. A kernel not found is left to the compiler."""
    expected = tuple((p.name, p.types) for p in contract.parameters)
    name = name_expression.split("<", 1)[0].strip().split("::")[-1]
    code = code_only(source)
    for m in re.finditer(rf"\b{re.escape(name)}\s*\(([^()]*(?:\([^()]*\)[^()]*)*)\)", code):
        head = code[: m.start()]
        head = head[max(head.rfind(";"), head.rfind("}"), head.rfind("{")) + 1 :]
        if "__global__" not in head:
            continue
        parameters = [p.strip() for p in m.group(1).split(",") if p.strip()]
        line = code.count("\n", 0, m.start()) + 1
        differences = []
        names = {re.findall(r"\w+", p)[-1] for p in parameters}
        missing = [n for n, _ in expected if n not in names]
        if len(parameters) != len(expected) and missing:
            differences.append(f"it has no {' and no '.join(missing)}")
        for i, (expected_name, types) in enumerate([] if differences else expected):
            if i >= len(parameters):
                missing = ", ".join(f"{t[0]} {n}" for n, t in expected[i:])
                differences.append(f"it lacks {missing}")
                break
            if _parameter_type(parameters[i]) not in types:
                differences.append(
                    f"parameter {i + 1} is {' '.join(parameters[i].split())} "
                    f"where the contract has {types[0]} {expected_name}"
                )
        if len(parameters) > len(expected) and not missing:
            extra = ", ".join(parameters[len(expected) :])
            differences.append(f"it has more parameters than the contract ({extra})")
        if differences:
            own = ", ".join(" ".join(p.split()) for p in parameters)
            raise Mismatch(
                f"{name} at {filename}:{line} does not take the course's parameters; the "
                f"grader calls it as {contract.declaration(name)}, and it is declared "
                f"({own}): {'; '.join(differences)}"
            )
        return
