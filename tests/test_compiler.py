"""Compile errors point at the learner's own lines; the resource report is parsed right."""

import pytest

from autograder.run import compiler
from autograder.run.compiler import CompileError, Resources

BROKEN = """\
extern "C" __global__ void sgemm_mine(int M, int N, int K, float alpha,
                                      const float* A, const float* B,
                                      float beta, float* C) {
  const int row = blockIdx.y * blockDim.y + threadIdx.y;
  const int col = blockIdx.x * blockDim.x + threadIdx.x;
  float acc = 0.0f
  for (int k = 0; k < K; ++k) acc += A[row * K + k] * B[k * N + col];
  C[row * N + col] = alpha * acc + beta * C[row * N + col];
}
"""


def test_compile_error_names_the_learners_file_and_line():
    with pytest.raises(CompileError) as caught:
        compiler.compile_for_arch(BROKEN, ["sgemm_mine"], "sm_75", "mine.cu")
    message = str(caught.value)
    assert "mine.cu(7): error" in message  # the missing ';' is reported on the next line
    assert "did not compile" in message


def test_a_missing_semicolon_is_placed_on_the_line_before_where_the_compiler_stops():
    with pytest.raises(CompileError) as caught:
        compiler.compile_for_arch(BROKEN, ["sgemm_mine"], "sm_75", "mine.cu")
    assert 'mine.cu(7): error: expected a ";"' in str(caught.value)
    assert 'probably the line before, mine.cu(6): a missing ";"' in str(caught.value)
    # Comments and blank lines between are not "the line before".
    spaced = BROKEN.replace("0.0f\n", "0.0f  // the sum\n\n  // over k\n")
    with pytest.raises(CompileError) as caught:
        compiler.compile_for_arch(spaced, ["sgemm_mine"], "sm_75", "mine.cu")
    assert 'probably the line before, mine.cu(6): a missing ";"' in str(caught.value)


def test_no_line_before_is_blamed_where_the_error_is_within_its_own_line():
    inside = BROKEN.replace("float acc = 0.0f\n", "float acc = 0.0f;\n").replace(
        "C[row * N + col] = alpha", "C[row * N + col] = = alpha"
    )
    with pytest.raises(CompileError) as caught:
        compiler.compile_for_arch(inside, ["sgemm_mine"], "sm_75", "mine.cu")
    assert "mine.cu(8): error" in str(caught.value)
    assert "probably" not in str(caught.value)


def test_a_compile_error_shows_the_errors_not_the_warnings_and_remarks():
    unused = BROKEN.replace("float acc", "int unused = 1;\n  float acc")
    with pytest.raises(CompileError) as caught:
        compiler.compile_for_arch(unused, ["sgemm_mine"], "sm_75", "mine.cu")
    error = caught.value
    assert "warning" in error.log and "Remark" in error.log  # all kept, for who wants it
    assert str(error).count("error:") == 1, str(error)
    assert "warning" not in str(error) and "Remark" not in str(error), str(error)
    assert "error detected in the compilation" not in str(error)


def test_a_log_with_no_nvrtc_error_is_shown_whole():
    log = "mine.cu:3: #include: a course kernel includes nothing"
    assert compiler.errors_only(log) == log


def test_cupy_temporary_file_names_are_replaced_by_the_learners():
    error = CompileError("mine.cu", '/tmp/tmpab12/kern.cu(7): error: expected a ";"', "x")
    assert error.log.startswith("mine.cu(7): error")


def test_resources_of_several_kernels_are_reported_by_name():
    source = (
        BROKEN.replace("float acc = 0.0f\n", "float acc = 0.0f;\n")
        + """
template <int S> __global__ void tiled(float* x) {
  __shared__ float t[S];
  t[threadIdx.x] = x[threadIdx.x];
  __syncthreads();
  x[threadIdx.x] = t[S - 1 - threadIdx.x];
}
"""
    )
    result = compiler.compile_for_arch(source, ["sgemm_mine", "tiled<64>"], "sm_90")
    assert set(result.resources) == {"sgemm_mine", "tiled<64>"}
    assert result.resources["tiled<64>"].shared_bytes == 256
    assert result.resources["sgemm_mine"].registers > 0


def test_problems_name_spills_and_oversized_blocks():
    spilling = Resources(
        "k",
        "sm_75",
        registers=255,
        shared_bytes=64 * 1024,
        stack_bytes=16,
        spill_store_bytes=8,
        spill_load_bytes=8,
    )
    problems = " / ".join(spilling.problems(threads=512))
    assert "spills" in problems and "stack frame" in problems
    assert "255 registers x 512 threads" in problems and "static shared memory" in problems
    assert Resources("k", "sm_75", 64, 0, 0, 0, 0).problems(threads=1024) == []
