"""The SGEMM course's autograder: compile, check and time CUDA SGEMM kernels.

from autograder import registry, compile_for_arch, check, KernelSpec
step = registry.step("05")
print(check(KernelSpec.from_step(step)))       # needs a GPU
"""

from .checker import Report
from .compiler import CompileError, compile_for_arch
from .gpu import NoGPU
from .judge import check
from .kernel import KernelSpec, from_file
from .registry import STEPS, step

__all__ = [
    "CompileError",
    "KernelSpec",
    "NoGPU",
    "Report",
    "STEPS",
    "check",
    "compile_for_arch",
    "from_file",
    "step",
]
