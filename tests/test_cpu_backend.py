"""The CPU backend runs the learner's own CUDA source and judges it as a GPU would.

These run in CI, with no GPU: every reference kernel passes the real checker,
and every planted bug (tests/planted.py) fails with the same message kind as
on a GPU; the missing barriers fail on every run.
"""

import re
import shutil
import subprocess
from dataclasses import replace
from pathlib import Path

import pytest
from planted import (
    GROUP_BARRIER_OF_TOO_MANY,
    GROUPED,
    GROUPS_WITHOUT_BARRIERS,
    HANDOVER_WITHOUT_BARRIER,
    PLANTED,
    RACES,
    STAGE_WITHOUT_SYNCWARP,
    STAGED,
    planted,
)

from autograder import KernelSpec, judge
from autograder.judge import checker
from autograder.judge.causes import by_cause
from autograder.judge.checker import MEDIUM, SMALL, Shape
from autograder.ladder import registry
from autograder.ladder.registry import Geometry
from autograder.run import cpu
from autograder.run.backends import BackendUnavailable
from autograder.run.compiler import CompileError


def check(spec, **kwargs):
    return judge.check(spec, backend="cpu", **kwargs)


@pytest.mark.parametrize("step", registry.STEPS, ids=lambda s: s.name)
def test_reference_kernel_passes_on_the_cpu(step):
    report = check(KernelSpec.from_step(step))
    assert report.ok, str(report)
    medium = [c.beta for c in report.cases if str(c.shape) == "1001x777x513"]
    assert medium == [0.0, checker.BETA], str(report)  # both betas, as on a GPU
    assert [str(s) for s in report.skipped] == [
        "4095x4097x4093 not run: too large for this backend (a GPU runs it)"
    ]
    assert report.verdict.endswith(
        "; 4095x4097x4093 not run: too large for this backend (a GPU runs it)"
    )


@pytest.mark.parametrize("bug", PLANTED, ids=str)
def test_planted_bug_fails_with_the_same_message_kind_as_on_a_gpu(bug):
    spec, expected = PLANTED[bug]
    report = check(spec, shapes=SMALL, case_timeout_s=5)
    assert not report.ok
    messages = " / ".join([c.message for c in report.failures] + [report.error])
    assert expected in messages, str(report)


def test_a_reduction_wrong_at_one_sign_of_beta_is_told_which_and_no_race():
    # Step 09's GEMM runs its tile shapes in turn on the CPU, so C's last bits change
    # from run to run: within the tolerance, which is no race.
    spec, _ = PLANTED["reduction that tells beta != 0 by its sign"]
    report = check(spec, shapes=SMALL)
    assert {c.beta for c in report.failures} == {-checker.BETA}, str(report)
    (cause,) = by_cause(report.cases)
    said = f"beta = {checker.BETA:g} passes and every case with beta = {-checker.BETA:g} fails"
    assert said in str(cause), str(cause)
    assert not any(checker.RACED in c.message for c in report.failures), str(report)


# Without either barrier of step 03, one thread writes an element of a tile that
# another reads in the same round between barriers: the diagnostic build names both
# accesses, their lines and the race, whichever barrier is missing.
@pytest.mark.parametrize("attempt", range(3))
@pytest.mark.parametrize("bug", RACES, ids=str)
def test_a_missing_barrier_fails_on_every_run_and_is_named_a_race(bug, attempt):
    report = check(RACES[bug], shapes=SMALL)
    assert not report.ok, str(report)
    causes = by_cause(report.cases)
    assert len(causes) == 1, str(report)
    said = str(causes[0])
    assert "with no __syncthreads() between them: a race" in said, str(report)
    assert re.search(r"03_smem_tiling\.cu:(30|36)", said), said


@pytest.mark.parametrize("attempt", range(3))
def test_a_pipeline_handover_without_its_barrier_fails_on_every_run(attempt):
    # Step 08 stores its tiles as float4s through pointers, which the race check does
    # not follow: the places where one added barrier makes every case pass name it.
    report = check(HANDOVER_WITHOUT_BARRIER, shapes=SMALL)
    assert not report.ok, str(report)
    causes = by_cause(report.cases)
    assert len(causes) == 1, str(report)
    assert "a __syncthreads() is missing" in str(causes[0]), str(report)


def test_groups_of_warps_pass_barriers_of_their_own_and_fail_without_them():
    """Step 09's grouped blocks (32 x 32 tiles in 4 groups): each group walks its own run
    of K (at 1x300x70: 2, 2, 1 and no slices), passing its own named barriers while the
    others wait at the block's. Without those barriers a group reads a slice before its
    threads have stored it, on every run."""
    assert check(GROUPED, shapes=SMALL).ok
    for _ in range(2):
        report = check(GROUPS_WITHOUT_BARRIERS, shapes=SMALL)
        assert not report.ok, str(report)


def test_a_staged_epilogue_passes_its_warps_barrier_and_fails_without_it():
    """Step 09's epilogue where C's rows are not aligned (most of the small shapes): a
    warp's threads write out floats the others stored in shared memory, after
    __syncwarp(). Without it they read them first, on every run."""
    assert any(s.N % 4 for s in SMALL)
    assert check(STAGED, shapes=SMALL).ok
    for _ in range(2):
        report = check(STAGE_WITHOUT_SYNCWARP, shapes=SMALL)
        assert not report.ok, str(report)
        assert all(c.shape.N % 4 for c in report.failures), str(report)


def test_a_named_barrier_that_too_few_threads_reach_is_said_to_hang_on_a_gpu():
    report = check(GROUP_BARRIER_OF_TOO_MANY, shapes=SMALL, case_timeout_s=10)
    said = " / ".join([c.message for c in report.failures] + [report.error])
    assert not report.ok, said
    assert "for 128 threads, which fewer reach: on a GPU the kernel hangs" in said, said


def test_step_09_runs_every_tile_shape_on_eight_workers_within_a_childs_memory(monkeypatch):
    # The 17 libraries of step 09's tile shapes each kept 8 workers' stacks, and together
    # passed what a confined child may map, on a 16-core machine (the H200's host).
    monkeypatch.setenv("SGEMM_CPU_WORKERS", str(cpu.MAX_WORKERS))
    report = check(KernelSpec.from_step(registry.step("09")), shapes=SMALL)
    assert report.ok, str(report)


def test_the_libraries_launched_longest_ago_give_their_stacks_back(monkeypatch):
    monkeypatch.setattr(cpu, "_stacks", {})
    monkeypatch.setattr(cpu, "workers", lambda: 8)
    monkeypatch.setattr(cpu, "STACKS_KEPT_BYTES", 3 * 8 * 257 * cpu.STACK_BYTES)
    released = []
    for name in ["a", "b", "c", "a", "d"]:  # blocks of 256 threads: 3 libraries fit
        cpu._keep_stacks(name, 256, lambda name=name: released.append(name))
    assert released == ["b"] and list(cpu._stacks) == ["c", "a", "d"]


def test_the_runtimes_stack_sizes_are_those_cpu_py_counts():
    header = (Path(cpu.__file__).parent / "cpu_runtime.h").read_text()
    assert f"STACK_BYTES = {cpu.STACK_BYTES // 1024} * 1024;" in header
    assert f"MAX_WORKERS = {cpu.MAX_WORKERS};" in header


def test_an_out_of_bounds_read_names_the_thread_block_and_matrix():
    spec, _ = PLANTED["missing K bound in the tile load"]
    report = check(spec, shapes=SMALL[:1])
    message = report.failures[0].message
    # The case fails on the access itself, before its NaN reaches C, and says where.
    assert (
        "thread (1, 0, 0) of block (0, 0, 0) read A[1], 1 float past the end of A, at " in message
    )
    assert ".cu:30: the kernel read outside A" in message


def test_a_misaligned_float4_load_is_named():
    spec, _ = PLANTED["float4 without the alignment fallback"]
    report = check(spec, shapes=SMALL[:4])  # 17x19x3: rows of B start off 16-byte boundaries
    message = report.failures[0].message
    assert "misaligned 16-byte access to B" in message and "not a multiple of 16" in message


def test_an_endless_loop_times_out_without_hanging_the_tests():
    spec, _ = PLANTED["endless loop"]
    report = check(spec, case_timeout_s=2)
    assert "1x1x1, beta=0: did not finish within 2 s" in report.error


def test_an_unsupported_construct_is_refused_by_name():
    spec = planted("02", "float acc = 0.0f;", "float acc = __shfl_down_sync(0xffffffff, 0.0f, 1);")
    with pytest.raises(
        BackendUnavailable,
        match=r"cannot run warp shuffles \(__shfl_down_sync at "
        r"02_coalescing.cu:\d+\): check this kernel on a GPU",
    ):
        check(spec)


def test_a_compile_error_reads_as_nvrtc_reports_it():
    spec = planted("02", "float acc = 0.0f;", "float acc = 0.0f")
    with pytest.raises(CompileError, match=r"02_coalescing.cu\(\d+\): error"):
        check(spec)


def test_no_compiler_says_what_to_install(monkeypatch):
    monkeypatch.setattr(cpu.shutil, "which", lambda name: None)
    with pytest.raises(cpu.NoCompiler, match="install g\\+\\+"):
        cpu.compiler()


def test_translation_keeps_the_learners_line_numbers():
    source = registry.step("07").source()
    translated = cpu.translate(source, registry.step("07").name_expression)
    body = translated.split('#line 1 "kernel.cu"\n', 1)[1].split('#line 1 "cpu_entry.cpp"')[0]
    assert body.count("\n") == source.count("\n") + 1


# A correct kernel written with the constructs the reference ladder does not
# use, which a learner might: dynamic shared memory, __ldg, fmaf, min/max,
# int4, __restrict__ and a partial unroll.
KITCHEN_SINK = """
template <int TILE>
__global__ void __launch_bounds__(TILE * TILE)
sgemm_kitchen_sink(int M, int N, int K, float alpha, const float* __restrict__ A,
                   const float* __restrict__ B, float beta, float* __restrict__ C) {
  extern __shared__ float tiles[];  // As, then Bs
  float* As = tiles;
  float* Bs = tiles + TILE * TILE;
  const int tx = threadIdx.x, ty = threadIdx.y;
  const int row = blockIdx.y * TILE + ty, col = blockIdx.x * TILE + tx;
  float acc = 0.0f;
  for (int k0 = 0; k0 < K; k0 += TILE) {
    As[ty * TILE + tx] = (row < M && k0 + tx < K) ? __ldg(&A[row * K + k0 + tx]) : 0.0f;
    Bs[ty * TILE + tx] = (k0 + ty < K && col < N) ? __ldg(B + (k0 + ty) * N + col) : 0.0f;
    __syncthreads();
    const int steps = min(TILE, K - k0);
#pragma unroll 4
    for (int k = 0; k < steps; ++k) acc = fmaf(As[ty * TILE + k], Bs[k * TILE + tx], acc);
    __syncthreads();
  }
  const int4 at = make_int4(row, col, max(row, col), 0);
  if (at.x < M && at.y < N) C[at.x * N + at.y] = alpha * acc + beta * C[at.x * N + at.y];
}
"""


def test_constructs_beyond_the_ladder_run_correctly():
    spec = KernelSpec(
        KITCHEN_SINK,
        "kitchen_sink.cu",
        "sgemm_kitchen_sink<16>",
        Geometry(block=(16, 16), tile=(16, 16)),
    )
    report = check(spec, shapes=SMALL + MEDIUM)
    assert report.ok, str(report)


def test_one_kernel_built_by_several_threads_at_once_builds_for_each(tmp_path, monkeypatch):
    # The localizer builds in a thread while a check run again builds in another: with
    # files named by the process alone, one thread's rename took the other's library.
    from concurrent.futures import ThreadPoolExecutor

    monkeypatch.setattr(cpu, "CACHE", tmp_path)
    spec = KernelSpec.from_step(registry.step("01"))
    with ThreadPoolExecutor(4) as pool:
        libraries = list(pool.map(lambda _: cpu.build(spec), range(4)))
    assert len(set(libraries)) == 1 and libraries[0].exists()
    assert [p.name for p in tmp_path.iterdir()] == [libraries[0].name]  # nothing left over


ACC = "float acc[TM][TN] = {{0.0f}};"


def test_a_threads_own_array_too_large_for_a_gpu_thread_is_a_compile_error_at_its_line():
    # A constant off in an array's size made a 4 MB array of a thread's own: the CPU
    # backend's fiber stack ran into other memory and the process died, naming nothing.
    with pytest.raises(CompileError, match=r"05_blocktiling_2d\.cu:29:\d+: error: a thread's "
                       r"own array takes more than 512 KB"):  # fmt: skip
        check(planted("05", ACC, "float acc[TM][TN * 20000] = {{0.0f}};"), shapes=SMALL[:1])


def test_a_threads_own_array_a_gpu_thread_holds_but_a_fiber_does_not_is_said_so():
    with pytest.raises(BackendUnavailable, match=r"more than 32 KB \(at 05_blocktiling_2d\.cu:29\)"):
        check(planted("05", ACC, "float acc[TM][TN * 200] = {{0.0f}};"), shapes=SMALL[:1])


def test_a_library_once_built_is_never_replaced_by_a_twin_built_alongside(tmp_path, monkeypatch):
    # A confined child is allowed the library's inode (Landlock), not its name: a twin
    # build finishing between its confinement and its load replaced the file, and the
    # load failed with EACCES (seen on a GPU machine grading with six workers).
    monkeypatch.setattr(cpu, "CACHE", tmp_path)
    spec = KernelSpec.from_step(registry.step("01"))
    library = cpu.build(spec)
    first = library.stat().st_ino
    monkeypatch.setattr(type(library), "exists", lambda self: False)  # the twin's view
    assert cpu.build(spec) == library and library.stat().st_ino == first
    assert [p.name for p in tmp_path.iterdir()] == [library.name]


@pytest.mark.parametrize("kind", cpu.BUILDS)
def test_a_compiler_that_fortifies_by_default_builds_no_checked_longjmp(kind, tmp_path, monkeypatch):
    # Ubuntu's g++ defines _FORTIFY_SOURCE unasked; glibc's checked longjmp then aborted a
    # fault's jump from a fiber's stack to its worker's (an H200 machine: every mutant that
    # faulted, "the process running the kernel died (exit code -6)").
    nm = shutil.which("nm")
    if nm is None:
        pytest.skip("no nm to list the library's symbols (binutils)")
    fortifying = tmp_path / "g++"
    fortifying.write_text(f'#!/bin/sh\nexec {cpu.compiler()} -O2 -D_FORTIFY_SOURCE=2 "$@"\n')
    fortifying.chmod(0o755)
    monkeypatch.setenv("CXX", str(fortifying))
    monkeypatch.setattr(cpu, "CACHE", tmp_path / "cache")
    library = cpu.build(KernelSpec.from_step(registry.step("03")), kind)
    undefined = subprocess.run([nm, "-D", "--undefined-only", str(library)], capture_output=True,
                               text=True, check=True).stdout  # fmt: skip
    assert "longjmp" in undefined and "__longjmp_chk" not in undefined, undefined


@pytest.mark.parametrize("value", ["{0.f}", "{}", "{{0.0f}}"])
def test_a_threads_own_array_takes_any_initializer_cuda_does(value):
    # `float acc[TM][TN] = {0.f};` (inner braces left out) once failed to build here.
    spec = planted("05", "float acc[TM][TN] = {{0.0f}};", f"float acc[TM][TN] = {value};")
    report = judge.check(spec, shapes=SMALL, backend="cpu")
    assert report.ok, str(report)


@pytest.mark.slow
@pytest.mark.parametrize("step", registry.STEPS, ids=lambda s: s.name)
def test_a_step_leaves_c_unread_where_beta_is_0_as_the_registry_says(step):
    # Each step's own kernel, given a C of infinity where beta = 0: one that leaves C
    # unread (registry.Step.leaves_c_unread) passes, one that computes beta * C makes NaN
    # of it (0 * inf), and is told so.
    spec = replace(KernelSpec.from_step(step), leaves_c_unread=True)
    zero = [c for c in check(spec, shapes=(Shape(17, 19, 3),)).cases if not c.beta]
    assert len(zero) == 1 and zero[0].ok == step.leaves_c_unread, zero[0].message
    assert zero[0].ok or zero[0].message.startswith(checker.READ_UNREAD_C), zero[0].message
