"""The course's contract: the parameters every kernel takes, as the grader calls it.

A kernel declared otherwise (no alpha, C before A, a double) would be called with
arguments it does not expect: on a GPU that reads garbage or crashes, on the CPU
it does not link. Both backends check the declaration first (autograder.backends)
and say where it differs from the contract.
"""

from __future__ import annotations

import re

from .device_only import code_only

# The "compiler" a contract mismatch is reported by (compiler.CompileError.compiler).
CHECKER = "the course's contract"


class Mismatch(ValueError):
    """The kernel's parameters are not the course's contract; str() says where they differ."""


CONTRACT = (
    'extern "C" __global__ void NAME(int M, int N, int K, float alpha, const float* A, '
    "const float* B, float beta, float* C)"
)
# The contract's parameters: name, and the types a kernel may declare for it
# (A and B as float*, as most published kernels have them, run as well).
_CONTRACT_PARAMETERS = (
    ("M", ("int", "unsigned int", "unsigned")),
    ("N", ("int", "unsigned int", "unsigned")),
    ("K", ("int", "unsigned int", "unsigned")),
    ("alpha", ("float",)),
    ("A", ("const float*", "float*")),
    ("B", ("const float*", "float*")),
    ("beta", ("float",)),
    ("C", ("float*",)),
)


def _parameter_type(declaration: str) -> str:
    """A parameter's type as the contract writes it: 'const float* __restrict__ A' ->
    'const float*'; top-level const (const int M, float* const C) is dropped."""
    words = re.findall(r"\w+|\*", declaration.replace("__restrict__", " "))
    if words and words[-1] not in ("*", "int", "float", "unsigned", "const", "double", "long"):
        words = words[:-1]  # the parameter's name
    if "*" not in words:
        return " ".join(w for w in words if w not in ("const", "volatile"))
    star = words.index("*")
    pointee = words[:star]
    base = " ".join(w for w in pointee if w not in ("const", "volatile"))
    stars = "*" * words.count("*")
    return ("const " if "const" in pointee else "") + base + stars


def check(source: str, name_expression: str, filename: str) -> None:
    """Raise Mismatch, saying where, when the kernel named by name_expression
    does not take the course's parameters. A kernel not found is left to the compiler."""
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
        missing = [n for n, _ in _CONTRACT_PARAMETERS if n not in names]
        if len(parameters) != len(_CONTRACT_PARAMETERS) and missing:
            differences.append(f"it has no {' and no '.join(missing)}")
        for i, (expected_name, types) in enumerate([] if differences else _CONTRACT_PARAMETERS):
            if i >= len(parameters):
                missing = ", ".join(f"{t[0]} {n}" for n, t in _CONTRACT_PARAMETERS[i:])
                differences.append(f"it lacks {missing}")
                break
            if _parameter_type(parameters[i]) not in types:
                differences.append(
                    f"parameter {i + 1} is {' '.join(parameters[i].split())} "
                    f"where the contract has {types[0]} {expected_name}"
                )
        if len(parameters) > len(_CONTRACT_PARAMETERS) and not missing:
            extra = ", ".join(parameters[len(_CONTRACT_PARAMETERS) :])
            differences.append(f"it has more parameters than the contract ({extra})")
        if differences:
            own = ", ".join(" ".join(p.split()) for p in parameters)
            raise Mismatch(
                f"{name} at {filename}:{line} does not take the course's parameters; the "
                f"grader calls it as {CONTRACT.replace('NAME', name)}, and it is declared "
                f"({own}): {'; '.join(differences)}"
            )
        return
