"""Host-only code in a submission is refused before anything is built, naming its line.

NVRTC compiles only device code, and a block under `#ifndef __CUDA_ARCH__` is
invisible to it; the CPU backend compiles the same file into a library whose
constructors would run in the grader's process. autograder.run.device_only checks
the text that is then built. Each planted escape sits beside honest device
code that must still pass.
"""

import pytest
from planted import planted

from autograder import judge
from autograder.judge.checker import SMALL
from autograder.ladder import registry
from autograder.run import cpu, device_only
from autograder.run.compiler import CompileError

KERNEL = 'extern "C" __global__ void k(int M, float* C) {\n  if (M) C[0] = 1;\n}\n'


def refusal(source: str) -> str:
    with pytest.raises(device_only.HostCode) as caught:
        device_only.preprocess(source, "05_mine.cu", cpu.compiler())
    return caught.value.log


# The escape from the issue: invisible to NVRTC, which defines __CUDA_ARCH__;
# a constructor that g++ would run when the library is loaded.
ESCAPE = """#ifndef __CUDA_ARCH__
__attribute__((constructor)) static void escape() {{ std::system("touch {marker}"); }}
#endif
"""


def test_the_escape_from_the_issue_is_refused_before_anything_is_built(tmp_path):
    marker = tmp_path / "escaped"
    kernel = 'extern "C" __global__'
    spec = planted("02", kernel, ESCAPE.format(marker=marker) + kernel)
    line = 1 + spec.source.split("#ifndef __CUDA_ARCH__")[0].count("\n")
    with pytest.raises(
        CompileError, match=rf"02_coalescing.cu:{line}: __CUDA_ARCH__: .* host-only code"
    ):
        judge.check(spec, shapes=SMALL[:1], backend="cpu")
    assert not marker.exists()


@pytest.mark.parametrize(
    ("planted_code", "line", "says"),
    [
        # Token pasting builds __attribute__ after any textual scan: the check
        # reads the preprocessed text, which is also what gets built.
        (
            "#define GLUE(a, b) a##b\n"
            'GLUE(__attri, bute__)((constructor)) void f() { system("x"); }',
            2,
            "__attribute__ is host-only code",
        ),
        ("int helper(int a) { return a; }", 1, "host-only code (int helper"),
        ('extern "C" int system(const char*);', 1, "host-only code"),
        ('extern "C" __device__ int system(const char*);', 1, "the host's system would be called"),
        ("struct Evil { Evil() {} } evil;", 1, "host-only code (Evil ( ))"),
        ("#include <cstdlib>", 1, "#include: a course kernel includes nothing"),
        ("#\\\ninclude </etc/passwd>", 1, "#include"),  # a directive split over two lines
        ("#define HASH #\nHASH include <cstdlib>", 2, "# include <cstdlib>: not allowed"),
        ("[[gnu::constructor]] __device__ void f() {}", 1, "the attribute [[gnu"),
        ('__asm__(".section .init_array");', 1, "__asm__ is host-only code"),
        ('_Pragma("weak system")', 1, "_Pragma: write #pragma unroll"),
    ],
    ids=lambda value: value if isinstance(value, str) and len(value) < 30 else None,
)
def test_host_only_code_is_refused_with_its_line(planted_code, line, says):
    message = refusal(planted_code + "\n" + KERNEL)
    assert message.startswith(f"05_mine.cu:{line}: "), message
    assert says in message, message


@pytest.mark.parametrize(
    "honest",
    [
        "const int TILE = 32;\nconstexpr int HALF = TILE / 2;",
        "#define IDX(r, c, ld) ((r) * (ld) + (c))\n#pragma unroll",
        "struct Pair { float a, b; __device__ float sum() const { return a + b; } };",
        "namespace detail { __device__ inline float sq(float x) { return x * x; } }",
        "template <int N = 3> __device__ float times(float x) { return N * x; }",
        "__constant__ float weights[4] = {1, 2, 3, 4};\n__device__ float scale = 2.0f;",
        "enum { TILE = 32 };\ntypedef float real;\nusing vec = float4;",
    ],
)
def test_device_code_passes_the_check(honest):
    device_only.preprocess(honest + "\n" + KERNEL, "05_mine.cu", cpu.compiler())


@pytest.mark.parametrize("step", registry.STEPS, ids=lambda s: s.name)
def test_every_graded_step_is_device_code_only(step):
    device_only.preprocess(step.source(), step.path.name, cpu.compiler())
