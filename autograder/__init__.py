"""The SGEMM course's autograder: compile, check and time CUDA SGEMM kernels.

from autograder import registry, compile_for_arch, check, KernelSpec
step = registry.step("05")
print(check(KernelSpec.from_step(step)))       # needs a GPU
"""

from .judge.checker import Report
from .judge.job import check
from .ladder import registry
from .ladder.registry import STEPS, step
from .run.compiler import CompileError, compile_for_arch
from .run.gpu import NoGPU
from .run.kernel import KernelSpec, from_file

__all__ = [
    "CompileError",
    "KernelSpec",
    "NoGPU",
    "Report",
    "STEPS",
    "check",
    "compile_for_arch",
    "from_file",
    "registry",
    "step",
]
