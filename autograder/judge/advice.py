"""What a learner should look at, for what the run layer saw: each piece of advice
written once, here, and added to the facts by the judge.

The run layer states facts (a KernelFault and its bad accesses, a CUDA error); the
messages built from them (autograder.judge.checker, diagnose, sanitizer, timing,
localize) take their advice from this module.
"""

from __future__ import annotations

import re

from ..run.faults import KernelFault

# Where a kernel reads outside A or B, and where it writes outside C.
_STORES = "on M and N before every store"
LOADS = "check the bounds on M, N and K in the loads"
STORES = f"check the bounds {_STORES}"
LOADS_AND_STORES = f"{LOADS}, and {_STORES}"
# Where the wrong elements of C are its last rows and its last columns.
ROWS_AND_COLUMNS = "check the bounds on M and N"
# Where step 09's reduction reads outside its layers of partial sums.
LAYERS = (
    f"{ROWS_AND_COLUMNS}, and that partial s of element (row, col) is "
    "partial[s * M * N + row * N + col]"
)
# Where a float4 access was misaligned.
SCALAR = "use scalar accesses where K or N is not a multiple of 4"

# What a CUDA error means for an SGEMM kernel, by the error's name without prefix,
# case or underscores (CuPy reports runtime and driver spellings): what happened, and
# where the mistake most often is (left out where its line is known).
_CUDA_ERRORS = {
    "illegaladdress": (
        "the kernel accessed memory outside what it was given",
        "check the bounds on M, N and K in its loads and stores",
    ),
    "misalignedaddress": (
        "a float4 access at an address that is not a multiple of 16 bytes",
        SCALAR,
    ),
    "launchoutofresources": (
        "too many registers x threads per block for this GPU",
        "use fewer threads per block, or fewer registers",
    ),
    # A thread's own arrays past what local memory holds are refused so too (an H200,
    # 2026-11-28: 5 MB of acc[][] a thread).
    "invalidvalue": (
        "the launch was refused",
        (
            "too many threads per block, too much shared memory, or a thread's own arrays "
            "too large for local memory"
        ),
    ),
    "invalidconfiguration": (
        "the launch was refused",
        "too many threads per block, or too much shared memory",
    ),
    "assert": ("a device-side assert() failed", ""),
    "launchfailure": ("the kernel crashed", ""),
}


def explain_cuda_error(error: Exception, advice: bool = True) -> str:
    """What a CUDA error means; advice=False: without where the mistake most often is
    (for a kernel whose mistake has been found on its line)."""
    text = str(error)
    if type(error).__name__ == "OutOfMemoryError":
        return f"ran out of GPU memory ({text}): is another program using this GPU?"
    name = text.split(":")[0].strip()
    key = name.lower().replace("_", "").replace("cudaerror", "")
    if key not in _CUDA_ERRORS:
        return f"crashed: {text}"
    meaning, where = _CUDA_ERRORS[key]
    return f"crashed with {name}: {meaning}" + (f": {where}" if advice and where else "")


# Each matrix's row stride, and the sizes that are not (the contract: A is M x K,
# B is K x N, C is M x N, all row-major).
_ROW_STRIDE = {"A": ("K", "NM"), "B": ("N", "KM"), "C": ("N", "KM")}


def explain_fault(fault: KernelFault) -> str:
    """The fault with what to look at, where the fault alone does not say it: an access
    outside A, B or C (or the reduction's partial sums) names the bounds to check, or
    the stride its line steps by; a misaligned one, the scalar accesses to use."""
    text = str(fault)
    accesses = fault.accesses
    stride = _stride(fault)
    if stride:
        return text + stride
    if any(a.kind == "misaligned" for a in accesses):
        return f"{text}: {SCALAR}"
    matrices = {a.matrix for a in accesses if a.kind == "outside"}
    if not matrices:
        return text  # a race, an unwritten element, an array's bound: said in full
    if fault.contract == "reduce":
        return f"{text}: {LAYERS}"
    if "C" not in matrices:
        return f"{text}: {LOADS}"
    return f"{text}: {LOADS_AND_STORES if matrices & {'A', 'B'} else STORES}"


def _stride(fault: KernelFault) -> str:
    """Where the first access outside A, B or C is at a line whose index into that
    matrix steps by another matrix's size from row to row (B[k * K + col]): that
    stride, said."""
    outside = (a for a in fault.accesses if a.kind == "outside" and a.matrix in _ROW_STRIDE)
    first = next((a for a in outside if a.index >= 0), None)
    if first is None:
        return ""
    matrix = first.matrix
    right, wrong = _ROW_STRIDE[matrix]
    for index in re.findall(rf"\b{matrix}\s*\[([^\]]*)\]", first.code):
        stride = re.search(rf"\*\s*([{wrong}])\b|\b([{wrong}])\s*\*", index)
        if stride:
            used = stride.group(1) or stride.group(2)
            return (
                f"; {matrix}[{index.strip()}] steps {used} floats from row to row, but "
                f"{matrix}'s rows are {right} floats apart (row-major, {right} columns)"
            )
    return ""
