"""The judge's advice on what the run layer saw: a bad access the CPU backend caught (a
KernelFault and its accesses, as data) and a CUDA error, each worded once
(autograder.judge.advice)."""

import pytest

from autograder.judge import advice
from autograder.judge.advice import explain_cuda_error, explain_fault
from autograder.run.faults import BadAccess, KernelFault

HERE = (0, 0, 0)


def outside(matrix: str, index: int = 300, code: str = "") -> BadAccess:
    return BadAccess("outside", matrix, index, (3, 1, 0), (0, 2, 0), 41, code)


def fault(*accesses: BadAccess, contract: str = "gemm") -> KernelFault:
    return KernelFault("thread (3, 1, 0) of block (0, 2, 0) read ...", accesses, contract)


@pytest.mark.parametrize(
    "matrices, said",
    [
        (("A",), advice.LOADS),
        (("B",), advice.LOADS),
        (("C",), advice.STORES),
        (("A", "C"), advice.LOADS_AND_STORES),
    ],
)
def test_an_access_outside_the_matrices_names_the_bounds_to_check(matrices, said):
    text = explain_fault(fault(*(outside(m) for m in matrices)))
    assert text == f"thread (3, 1, 0) of block (0, 2, 0) read ...: {said}"


def test_the_words_for_loads_and_stores_read_as_a_learner_reads_them():
    assert advice.LOADS_AND_STORES == (
        "check the bounds on M, N and K in the loads, and on M and N before every store"
    )


def test_a_reduction_reading_outside_its_layers_is_told_where_partial_s_lies():
    text = explain_fault(fault(outside("partial"), contract="reduce"))
    assert text.endswith(
        ": check the bounds on M and N, and that partial s of element (row, col) is "
        "partial[s * M * N + row * N + col]"
    )


def test_a_misaligned_access_to_a_matrix_is_told_to_use_scalar_accesses():
    misaligned = BadAccess("misaligned", "B", None, HERE, HERE, 29)
    assert explain_fault(fault(misaligned)).endswith(": " + advice.SCALAR)


def test_a_line_stepping_by_another_matrix_s_size_is_told_the_stride():
    code = "    acc += A[row * K + k] * B[k * K + col];"
    text = explain_fault(fault(outside("B", code=code)))
    assert text.endswith(
        "; B[k * K + col] steps K floats from row to row, but B's rows are N floats apart "
        "(row-major, N columns)"
    ), text


def test_a_fault_of_another_kind_is_said_as_the_backend_said_it():
    race = KernelFault("thread (0, 0, 0) of block (0, 0, 0) wrote As[3] ... with no barrier")
    assert explain_fault(race) == str(race)


def test_running_out_of_gpu_memory_is_named_as_such():
    class OutOfMemoryError(Exception):  # what CuPy raises, by name
        pass

    error = OutOfMemoryError("Out of memory allocating 67,108,864 bytes")
    assert explain_cuda_error(error).startswith("ran out of GPU memory (Out of memory")


def test_a_crash_keeps_its_meaning_without_the_advice_where_its_line_is_known():
    error = RuntimeError("cudaErrorIllegalAddress: an illegal memory access was encountered")
    assert explain_cuda_error(error) == (
        "crashed with cudaErrorIllegalAddress: the kernel accessed memory outside what it was "
        "given: check the bounds on M, N and K in its loads and stores"
    )
    plain = explain_cuda_error(error, advice=False)
    assert plain == (
        "crashed with cudaErrorIllegalAddress: the kernel accessed memory outside what it was given"
    )


def test_a_refused_launch_keeps_why_only_with_the_advice():
    error = RuntimeError("cudaErrorInvalidConfiguration: invalid configuration argument")
    assert explain_cuda_error(error).endswith(
        ": the launch was refused: too many threads per block, or too much shared memory"
    )
    assert explain_cuda_error(error, advice=False).endswith(": the launch was refused")
