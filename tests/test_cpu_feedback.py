"""The CPU backend's feedback names the real bug: the access, the thread, the line.

Each planted kernel is a reference kernel with one substitution (or two, for a
bug that needs both its loads changed), as in tests/planted.py; each test
checks the verdict and that the message names the real cause.
"""

import re
from dataclasses import replace

import numpy as np
import pytest
from planted import (
    BOUNDS,
    GUARD_ON_THREADIDX,
    HALF_A_TILE,
    LATE_BOUND,
    MISSING_ROW_BOUND,
    RACES,
    TRANSPOSED,
    planted,
    planted_all,
)

from autograder import KernelSpec, judge
from autograder.judge.causes import by_cause
from autograder.judge.checker import SMALL, Shape
from autograder.ladder import registry
from autograder.run import contract, cpu
from autograder.run.backends import BackendUnavailable
from autograder.run.faults import KernelFault


def check(spec, **kwargs):
    return judge.check(spec, backend="cpu", **kwargs)


def messages(report) -> str:
    return " / ".join([c.message for c in report.failures] + [report.error])


# The matrix, the element, how far outside, the thread, the block, the line, and what to check.
READS_OUTSIDE = {
    "A's row bound missing": (
        MISSING_ROW_BOUND,
        r"thread \(\d+, \d+, 0\) of block \(\d+, \d+, 0\) read A\[\d+\], \d+ floats? past "
        r"the end of A, at [\w.]+\.cu:41: the kernel read outside A",
        "even where the value is never used",
    ),
    "reduction's bounds after its loads": (
        LATE_BOUND,
        r"thread \(\d+, \d+, 0\) of block \(\d+, \d+, 0\) read partial\[\d+\], \d+ floats? "
        r"past the end of partial, at 09_by_shape\.cu:\d+: the kernel read outside partial",
        "partial s of element (row, col) is partial[s * M * N + row * N + col]",
    ),
}


@pytest.mark.parametrize("name", READS_OUTSIDE)
@pytest.mark.slow
def test_a_read_outside_whose_value_is_never_used_fails_and_says_where(name):
    kernel, where, hint = READS_OUTSIDE[name]
    report = check(kernel, shapes=SMALL)
    assert not report.ok, str(report)
    text = messages(report)
    assert re.search(where, text), text
    assert hint in text, text


@pytest.mark.slow
def test_load_guards_on_threadidx_fail_naming_the_access():
    report = check(GUARD_ON_THREADIDX, shapes=SMALL)
    assert not report.ok, str(report)
    text = messages(report)
    assert re.search(
        r"read [AB]\[\d+\], \d+ floats? past the end of [AB], at [\w.]+\.cu:3[01]", text
    ), text


def test_a_store_outside_c_is_named_after_a_read_outside_b():
    # Step 02 without its bound on N reads past B first, then writes past C: both are named.
    spec = planted("02", "if (row < M && col < N) {", "if (row < M) {")
    text = messages(check(spec, shapes=SMALL[:1]))
    assert "past the end of B" in text and "past the end of C" in text, text
    assert "the kernel read outside B and accessed memory outside C" in text, text


def test_each_bad_access_reaches_the_judge_as_data_with_its_line():
    # Step 02 without its bound on N reads past B (line 24) and writes past C (line 26),
    # all inside the padding: the runtime names each matrix's first, and the judge words
    # its advice from these facts (autograder.judge.advice), not from the message.
    spec = planted("02", BOUNDS, "if (row < M) {")
    launch = cpu._launcher(spec, cpu.build(spec))
    pad = 1024
    A, B, C = (np.full(1 + 2 * pad, np.nan, dtype=np.float32)[pad : pad + 1] for _ in "ABC")
    with pytest.raises(KernelFault) as caught:
        launch(1, 1, 1, 1.5, A, B, 0.0, C)
    fault, lines = caught.value, spec.source.splitlines()
    assert [(a.kind, a.matrix, a.line, a.code) for a in fault.accesses] == [
        ("outside", "B", 24, lines[23]),
        ("outside", "C", 26, lines[25]),
    ], str(fault)
    assert all(a.index >= 1 and a.block == (0, 0, 0) for a in fault.accesses), str(fault)
    assert fault.contract == "gemm"


def test_the_translation_names_the_learners_file():
    step = registry.step("03")
    translated = cpu.translate(step.source(), step.name_expression, "03_smem_tiling.cu")
    assert '#line 1 "03_smem_tiling.cu"' in translated


@pytest.mark.slow
def test_a_misaligned_float4_read_through_a_raw_pointer_names_the_matrix():
    spec = planted_all(
        "06",
        ("const bool vecB = N % 4 == 0 && aligned16(B);", "const bool vecB = true;"),
        (
            "return *reinterpret_cast<const float4*>(p);",
            "return *reinterpret_cast<const float4*>(&p[0]);",
        ),
    )
    text = messages(check(spec, shapes=SMALL[:4]))
    assert "misaligned 16-byte access to B" in text, text
    assert re.search(r"at [\w.]+\.cu:29", text), text


def test_a_kernel_off_the_contract_is_told_the_contract():
    spec = planted_all(
        "01",
        (
            "(int M, int N, int K, float alpha,\n"
            + " " * 39
            + "const float* A, const float* B,\n"
            + " " * 39
            + "float beta, float* C)",
            "(int M, int N, int K, const float* A, const float* B, float* C)",
        ),
        ("alpha * acc + beta * C[row * N + col]", "acc"),
    )
    with pytest.raises(contract.Mismatch) as raised:
        cpu.translate(spec.source, spec.name_expression, spec.filename)
    text = str(raised.value)
    assert text.startswith("sgemm_naive at 01_naive.cu:11 does not take the course's"), text
    assert contract.CONTRACT.replace("NAME", "sgemm_naive") in text, text
    assert "(int M, int N, int K, const float* A, const float* B, float* C)" in text, text
    assert text.endswith("it has no alpha and no beta"), text


def test_a_parameter_of_the_wrong_type_is_named():
    spec = planted("01", "float beta, float* C)", "double beta, float* C)")
    with pytest.raises(
        contract.Mismatch, match="parameter 7 is double beta where the contract has float beta"
    ):
        cpu.translate(spec.source, spec.name_expression, spec.filename)


@pytest.mark.parametrize("step", registry.STEPS, ids=lambda s: s.name)
def test_every_reference_kernel_meets_its_contract(step):
    terms = contract.CONTRACTS[step.contract]
    contract.check(step.source(), step.name_expression, step.path.name, terms)


# A correct kernel in the spelling of published teaching kernels: A and B as
# float*, unsigned and unsigned int (NVRTC has no uint), size_t indices, assert() with no include,
# float4 through reinterpret_cast of &A[i], __ldg, fmaf and min.
PUBLISHED_STYLE = """
#define TILE 16
extern "C" __global__ void sgemm_published(int M, int N, int K, float alpha, float *A,
                                           float *B, float beta, float *C) {
  __shared__ float As[TILE][TILE];
  __shared__ float Bs[TILE][TILE];
  assert(blockDim.x == TILE);
  const unsigned tx = threadIdx.x;
  const unsigned int ty = threadIdx.y;
  const size_t row = blockIdx.y * TILE + ty, col = blockIdx.x * TILE + tx;
  float acc = 0.0f;
  for (int k0 = 0; k0 < K; k0 += TILE) {
    As[ty][tx] = (row < M && k0 + tx < K) ? __ldg(&A[row * K + k0 + tx]) : 0.0f;
    Bs[ty][tx] = (k0 + ty < K && col < N) ? B[(k0 + ty) * N + col] : 0.0f;
    __syncthreads();
#pragma unroll
    for (int k = 0; k < min(TILE, K - k0); ++k) acc = fmaf(As[ty][k], Bs[k][tx], acc);
    __syncthreads();
  }
  if (row < M && col < N) {
    if (K % 4 == 0 && tx == 0 && row * K % 4 == 0) {  // a float4 read of A, unused
      const float4 a = reinterpret_cast<float4*>(&A[row * K])[0];
      (void)a;
    }
    C[row * N + col] = alpha * acc + beta * C[row * N + col];
  }
}
"""


def published(source=PUBLISHED_STYLE):
    return KernelSpec(
        source,
        "published.cu",
        "sgemm_published",
        registry.Geometry(block=(16, 16), tile=(16, 16)),
    )


def test_a_kernel_in_the_published_style_runs():
    report = check(published(), shapes=SMALL)
    assert report.ok, str(report)


@pytest.mark.slow
def test_a_failed_assert_names_the_line():
    report = check(published(PUBLISHED_STYLE.replace("TILE);", "TILE + 1);")), shapes=SMALL[:1])
    assert "failed assert(blockDim.x == 16 + 1), at published.cu:" in messages(report), str(report)
    assert re.search(r"\.cu:7\b", messages(report)), str(report)


# Step 03 with only the top half of each A tile loaded.
@pytest.mark.parametrize(
    "spec",
    [RACES["missing first __syncthreads"], HALF_A_TILE],
    ids=["missing first __syncthreads", "half the A tile loaded"],
)
@pytest.mark.slow
def test_a_read_of_unwritten_shared_memory_is_named_as_such_not_as_bounds(spec):
    report = check(spec, shapes=SMALL)
    assert not report.ok, str(report)
    text = messages(report)
    assert re.search(
        r"thread \(\d+, \d+, 0\) of block \(\d+, \d+, 0\) read As\[\d+\]\[\d+\] before any "
        r"thread of the block wrote it, at [\w.]+\.cu:36: a missing __syncthreads\(\) after "
        r"the loads, or a tile not fully loaded",
        text,
    ), text
    assert "outside A or B" not in text and "check the bounds" not in text, text


@pytest.mark.slow
def test_nan_from_unwritten_shared_memory_is_not_blamed_on_bounds():
    # Shared memory reached through a pointer is not checked element by element;
    # its NaN bits still tell the checker where the NaN in C came from.
    spec = planted(
        "03",
        "acc += As[ty][k] * Bs[k][tx];",
        "acc += (&As[ty][0])[k] * (&Bs[k][0])[tx];",
    )
    text = messages(check(RACES_WITHOUT_FIRST_BARRIER(spec), shapes=SMALL[:2]))
    assert "NaN from shared memory that was read before any thread wrote it" in text, text
    assert "outside A or B" not in text, text


def RACES_WITHOUT_FIRST_BARRIER(spec):
    old = "__syncthreads();  // the tiles are complete"
    assert spec.source.count(old) == 1
    return replace(spec, source=spec.source.replace(old, "// the tiles are complete"))


@pytest.mark.slow
def test_an_access_through_a_raw_pointer_into_a_is_checked_against_a():
    # &A[i] is a plain pointer; __ldg and a pointer declared from it are still checked.
    spec = planted_all(
        "03",
        ("(row < M && k0 + tx < K)", "(k0 + tx < K)"),
        ("A[row * K + k0 + tx]", "__ldg(&A[row * K + k0 + tx])"),
    )
    text = messages(check(spec, shapes=SMALL[:1]))
    assert re.search(r"read A\[\d+\], \d+ floats? past the end of A, at [\w.]+\.cu:30", text), text


# The products never reach C (the accumulation dropped): C is beta times its old value,
# zeros where beta = 0. It read as two causes, the second "every element of each tile
# holds the same sum" (a sum of nothing is one value a tile) with threadIdx exchanged.
NOTHING_SUMMED = [
    ("04", "acc[m] += As[threadRow * TM + m][k] * b;"),
    ("05", "acc[m][n] += regM[m] * regN[n];"),
]


@pytest.mark.parametrize("step, old", NOTHING_SUMMED)
def test_a_sum_that_never_reaches_c_is_one_cause_that_says_so(step, old):
    report = check(planted(step, old, ";"), shapes=SMALL)
    causes = by_cause(report.cases)
    assert len(causes) == 1 and "without alpha*A*B" in str(causes[0]), str(report)


@pytest.mark.slow
def test_a_row_of_one_value_is_no_sign_of_an_exchanged_thread_index():
    # Each product lacks its B factor: on C of 1 x 300 every column holds the row's sum
    # of A, one value a tile, which is no sign of threadIdx.x and threadIdx.y exchanged.
    report = check(planted("05", "regM[m] * regN[n]", "regM[m]"), shapes=SMALL)
    assert not report.ok and "the same sum" not in messages(report), messages(report)


# A tile passed to a function is a plain pointer: a store past its end landed in the CPU
# runtime's own memory and crashed the process (or hung it), naming nothing.
TILE_LOAD = "As[ty][tx] = (row < M && k0 + tx < K) ? A[row * K + k0 + tx] : 0.0f;"
STORES_PAST_A_TILE = {
    "an element's address": [(TILE_LOAD, "(&As[0][0])[BS * BS + ty * BS + tx] = 1.0f;")],
    "a row passed to a function": [
        ("// [docs:kernel]\n", "__device__ void put(float* t, int i) { t[i] = 1.0f; }\n"),
        (TILE_LOAD, "put(As[0], BS * BS + ty * BS + tx);"),
    ],
    # Declared `float t[S][S]`, the parameter is a pointer to rows of the array it is passed.
    "an array parameter": [
        ("// [docs:kernel]\n", "template <int S>\n"
         "__device__ void put(float t[S][S], int r, int c) { t[r][c] = 1.0f; }\n"),
        (TILE_LOAD, "put<BS>(As, BS + ty, tx);"),
    ],
    # A type the compiler resolves (a template's T, an alias) is checked as float is.
    "a tile of a type the kernel names": [
        ("// [docs:kernel]\n", "using real = float;\n"),
        ("__shared__ float As[BS][BS];", "__shared__ real As[BS][BS];"),
        (TILE_LOAD, "As[ty + BS][tx] = 1.0f;"),
    ],
}


@pytest.mark.parametrize("reached", STORES_PAST_A_TILE)
def test_a_store_past_a_shared_array_through_a_pointer_is_named_on_the_array(reached):
    text = messages(check(planted_all("03", *STORES_PAST_A_TILE[reached]), shapes=SMALL[:1]))
    assert re.search(
        r"thread \(\d+, \d+, 0\) of block \(\d+, \d+, 0\) indexed As\[\d+\]\[\d+\], past the "
        r"end of the shared array As\[32\]\[32\] \(1024 elements\), at [\w.]+\.cu:\d+",
        text,
    ), text


# Step 03 with its tile loads in a function that takes the tiles as arrays, of a type
# it is given (leimao's kernels do both): the CPU backend could not build it.
LOADS_IN_A_FUNCTION = (
    ("// [docs:kernel]\n", "template <typename T, int S>\n"
     "__device__ void load(T As[S][S], T Bs[S][S], const T* A, const T* B, int M, int N, "
     "int K, int k0, int row, int col, int ty, int tx) {\n"
     "  As[ty][tx] = (row < M && k0 + tx < K) ? A[row * K + k0 + tx] : 0.0f;\n"
     "  Bs[ty][tx] = (k0 + ty < K && col < N) ? B[(k0 + ty) * N + col] : 0.0f;\n}\n"),
    ("template <int BS>\n__global__", "template <int BS, typename T = float>\n__global__"),
    ("__shared__ float As[BS][BS];\n  __shared__ float Bs[BS][BS];",
     "__shared__ T As[BS][BS];\n  __shared__ T Bs[BS][BS];"),
    (TILE_LOAD + "\n    Bs[ty][tx] = (k0 + ty < K && col < N) ? B[(k0 + ty) * N + col] : 0.0f;",
     "load<T, BS>(As, Bs, A, B, M, N, K, k0, row, col, ty, tx);\n"),
)  # fmt: skip


@pytest.mark.slow
def test_tiles_loaded_by_a_function_taking_arrays_run_and_are_checked():
    assert check(planted_all("03", *LOADS_IN_A_FUNCTION), shapes=SMALL).ok
    # The tiles read before they are loaded: seen though their type is a template's T.
    unloaded = planted_all("03", *LOADS_IN_A_FUNCTION, (
        "    __syncthreads();  // the tiles are complete before anyone reads them\n", "\n"))
    text = messages(check(unloaded, shapes=SMALL[:1]))
    assert re.search(r"read [AB]s\[\d+\]\[\d+\] before any thread of the block wrote it", text), text


def test_printf_of_a_shared_element_and_a_pointer_builds_and_runs():
    source = PUBLISHED_STYLE.replace(
        "    __syncthreads();\n#pragma unroll",
        '    __syncthreads();\n    if (row + col + k0 == 0) printf("As %g at %p\\n", As[0][0], A);'
        "\n#pragma unroll",
    )
    assert source != PUBLISHED_STYLE
    report = check(published(source), shapes=SMALL[:1])
    assert report.ok, str(report)


@pytest.mark.parametrize("backend", ["cpu", pytest.param("gpu", marks=pytest.mark.gpu)])
def test_a_transposed_result_is_recognised(backend):
    square = (Shape(128, 128, 64), Shape(96, 96, 33))
    report = judge.check(TRANSPOSED, shapes=square, backend=backend)
    assert not report.ok
    for case in report.failures:
        assert case.message.startswith("C looks transposed: element (i, j) holds the value"), case


@pytest.mark.slow
def test_a_tile_larger_than_a_block_covers_is_named_beside_the_unwritten_elements():
    from autograder.run.kernel import from_source

    step = registry.step("03")
    spec = from_source(step.source(), step.path.name, block=(32, 32), tile=(64, 64))
    report = check(spec, shapes=(Shape(127, 129, 65),))
    assert not report.ok
    text = messages(report)
    assert "never written" in text and "--tile 64x64 gives one block per 64x64 of C" in text, text


INNER = "acc += A[row * K + k] * B[k * N + col];"


def test_float_and_bit_intrinsics_that_nvrtc_accepts_run_on_the_cpu():
    spec = planted(
        "01",
        INNER,
        "acc += __fdividef(A[row * K + k], 1.0f) * __int_as_float(__float_as_int(B[k * N + col]))"
        " + 0.0f * (rsqrtf(4.0f) + __saturatef(2.0f) + __popc(5u) + __clz(1));",
    )
    report = check(spec, shapes=SMALL[:5])
    assert report.ok, str(report)


def test_what_the_cpu_backend_cannot_build_is_named_with_its_line():
    spec = planted("01", INNER, "acc += A[row * K + k] * B[k * N + col] + 0.0f * __brev(1u);")
    with pytest.raises(BackendUnavailable) as caught:
        check(spec, shapes=SMALL[:1])
    text = str(caught.value)
    assert text.startswith("the CPU backend cannot run __brev at 01_naive.cu:24"), text
    assert "not a mistake in your kernel" in text, text


def test_grade_gives_a_kernel_off_the_contract_a_status_that_says_so(tmp_path):
    import json
    import subprocess
    import sys
    from pathlib import Path

    spec = planted("01", "float beta, float* C)", "double beta, float* C)")
    (tmp_path / "class").mkdir()
    (tmp_path / "class" / "dana.cu").write_text(spec.source)
    subprocess.run(
        [sys.executable, "-m", "autograder", "grade", str(tmp_path / "class")]
        + ["--assignment", "01", "--backend", "cpu", "--quiet"],
        cwd=Path(__file__).resolve().parent.parent,
        check=True,
        capture_output=True,
    )
    feedback = tmp_path / "class.grades" / "01_naive" / "feedback" / "dana.json"
    grade = json.loads(feedback.read_text())
    assert grade["status"] == "off the contract", grade
    assert "parameter 7 is double beta where the contract has float beta" in str(grade["tests"])


@pytest.mark.gpu
def test_on_a_gpu_too_a_kernel_off_the_contract_is_told_the_contract():
    from autograder.run.compiler import CompileError

    spec = planted("01", "float beta, float* C)", "double beta, float* C)")
    with pytest.raises(CompileError, match="parameter 7 is double beta where the contract has"):
        judge.check(spec, shapes=SMALL[:1], backend="gpu")


@pytest.mark.slow
def test_a_race_is_not_blamed_on_the_index_formula():
    report = check(RACES["missing second __syncthreads"], shapes=SMALL)
    text = str(report)
    assert "a race" in text, text
    assert "look at how the" not in text, text
