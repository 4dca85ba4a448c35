"""The kernels beyond the ladder (cp.async, TF32 tensor cores with mma.sync and
with Hopper's wgmma): registered apart from the graded steps, compiled for the
GPUs they need within limits and refused for older GPUs and the CPU with a
message, checked to their own precision, and on a GPU correct on the whole suite."""

import functools
import re
import subprocess
import sys
from dataclasses import replace

import numpy as np
import pytest

from autograder import KernelSpec, judge
from autograder.judge import checker
from autograder.ladder import hardware, registry
from autograder.measure.accuracy import split, tf32
from autograder.run import compiler, contract, gpu, tensor_maps
from autograder.run.backends import BackendUnavailable
from autograder.run.kernel import from_file

NEW_ARCHS = ("sm_80", "sm_90")  # the A100 and the H100
by_name = pytest.mark.parametrize("step", registry.BEYOND, ids=lambda s: s.name)
# Each step with each architecture it is built for: sm_80 and later, or its own target.
BUILDS = [(s, a) for s in registry.BEYOND for a in ((s.target,) if s.target else NEW_ARCHS)]
by_build = pytest.mark.parametrize("step, arch", BUILDS, ids=lambda x: getattr(x, "name", x))
# The steps built on wgmma and TMA, for sm_90a alone.
HOPPER = [s for s in registry.BEYOND if s.target == "sm_90a"]
by_hopper = pytest.mark.parametrize("step", HOPPER, ids=lambda s: s.name)


def test_beyond_steps_are_found_by_name_but_are_not_graded_steps():
    assert {s.name for s in registry.BEYOND}.isdisjoint(s.name for s in registry.STEPS)
    for s in registry.BEYOND:
        assert registry.step(s.id) is registry.step(s.slug) is s
        assert not s.runs_on("sm_75") and s.runs_on_gpu("sm_90")
    sm80 = [s for s in registry.BEYOND if not s.target]
    assert all(s.min_arch == "sm_80" and s.runs_on("sm_90") for s in sm80)


def test_the_hopper_steps_are_12_and_13():
    assert [s.id for s in HOPPER] == ["12", "13"]


@by_hopper
def test_the_wgmma_steps_build_for_sm90a_alone_and_run_on_an_h100_alone(step):
    assert step.target == "sm_90a" and step.needs == "sm_90a"
    assert step.runs_on("sm_90a") and not step.runs_on("sm_90") and not step.runs_on("sm_100a")
    assert step.runs_on_gpu("sm_90") and not step.runs_on_gpu("sm_80")
    assert not step.runs_on_gpu("sm_100")


def test_only_the_tensor_core_steps_round_their_inputs():
    assert {s.name: s.input_roundoff for s in registry.ALL_STEPS if s.input_roundoff} == {
        "11_tensor_core_tf32": registry.TF32_INPUT_ROUNDOFF,
        "12_wgmma_tf32": registry.TF32_TRUNCATED_ROUNDOFF,
    }
    step = registry.step("11")
    assert KernelSpec.from_step(step).input_roundoff == registry.TF32_INPUT_ROUNDOFF
    assert from_file(step.path).input_roundoff == registry.TF32_INPUT_ROUNDOFF
    assert from_file(registry.step("07").path).input_roundoff == 0


@functools.cache
def _built(step_id: str, arch: str) -> compiler.Compiled:
    """The step's kernel built for arch by NVRTC, once per test session."""
    step = registry.step(step_id)
    return compiler.compile_for_arch(step.source(), [step.name_expression], arch, step.path.name)


@by_build
def test_kernel_compiles_for_its_gpus_without_spills(step, arch):
    resources = _built(step.id, arch).resources[step.name_expression]
    assert resources.problems(step.geometry.threads) == [], str(resources)


@by_build
def test_launch_bounds_match_the_registry(step, arch):
    maxntid = re.search(r"\.maxntid (\d+), (\d+), (\d+)", _built(step.id, arch).ptx)
    assert int(maxntid[1]) * int(maxntid[2]) * int(maxntid[3]) == step.geometry.threads


# The least shared memory a block may have on a GPU of compute capability 8.0
# or later: 99 KB on sm_86 and sm_89 (RTX 30 and 40 series, L4); 163 KB on an
# A100, 227 KB on an H100 (autograder/ladder/hardware.py), the only GPU an
# sm_90a kernel runs on.
SM80_AND_LATER_SHARED_BYTES = 99 * 1024


@by_build
def test_shared_memory_fits_every_gpu_it_runs_on(step, arch):
    resources = _built(step.id, arch).resources[step.name_expression]
    most = (
        hardware.arch(step.target[:-1]).shared_per_block_optin
        if step.target
        else SM80_AND_LATER_SHARED_BYTES
    )
    assert resources.shared_bytes + step.geometry.shared_bytes <= most


def test_tma_describes_only_rows_that_start_at_16_byte_multiples():
    assert tensor_maps.describable(4096, 8) and not tensor_maps.describable(4096, 777)
    assert not tensor_maps.describable(4100, 8)  # A's base itself off 16 bytes
    # Not describable: no driver is asked, and the kernel gets a map of zeros.
    assert tensor_maps.encode(4096, 1001, 513, (32, 256)) == tensor_maps.NONE
    assert bytes(tensor_maps.NONE) == bytes(tensor_maps.MAP_BYTES)


@pytest.mark.parametrize("K, rows_held", [(513, 513), (516, 513), (1, 1)])
def test_b_s_map_never_describes_rows_past_its_end(K, rows_held, monkeypatch):
    """A GEMM whose K was rounded up past B's rows (split_k.described) gets a map of the
    rows B holds; TMA fills the rest with zeros."""
    encoded = []
    monkeypatch.setattr(tensor_maps, "encode", lambda *args: encoded.append(args))
    matrix = lambda rows, cols: type("Array", (), {"size": rows * cols, "data": None})  # noqa: E731
    A, B = matrix(64, K), matrix(rows_held, 96)
    A.data = B.data = type("Memory", (), {"ptr": 4096})
    tensor_maps.maps(64, 96, K, A, B, ((32, 64), (32, 32)))
    assert encoded[1][1:3] == (rows_held, 96)


@by_hopper
def test_the_wgmma_steps_take_the_tma_contract_and_not_the_gemms(step):
    source = step.source()
    contract.check(source, step.name_expression, step.path.name, contract.TMA)
    with pytest.raises(contract.Mismatch, match="more parameters than the contract"):
        contract.check(source, step.name_expression, step.path.name, contract.GEMM)
    without_maps = re.sub(
        r"float\* C, const __grid_constant__ TensorMap mapA,\s+const __grid_constant__ "
        r"TensorMap mapB\)",
        "float* C)",
        source,
    )
    assert without_maps != source
    with pytest.raises(contract.Mismatch, match="no mapA and no mapB"):
        contract.check(without_maps, step.name_expression, step.path.name, contract.TMA)


@by_hopper
def test_the_registry_knows_the_wgmma_kernels_tile_sizes(step):
    """The launch geometry and TMA boxes (registry) and the kernel agree on BM and BK, at
    every block height the GEMM may race (registry.block_rows)."""
    source = step.source()
    assert f"template <int {', int '.join(step.params)}>\n__global__" in source
    assert f"constexpr int BK = {registry.WGMMA_BK};" in source
    rows = registry.block_rows(step)
    assert rows[0] == step.params["BM"] and rows[-1] == 64
    for height in rows:
        geometry = step.with_params(BM=height).geometry
        assert geometry.tile == (height, step.params["BN"])
        assert geometry.tma_boxes[0] == (registry.WGMMA_BK, height)


def test_a_tma_kernel_is_built_for_its_target_and_boxes_come_with_its_geometry():
    spec = KernelSpec.from_step(registry.step("12"))
    assert spec.target == "sm_90a" and spec.contract == "tma"
    assert spec.geometry.tma_boxes == ((registry.WGMMA_BK, 256), (32, 32))
    assert KernelSpec.from_step(registry.step("11")).target is None


REFUSED = [(s, a) for s in registry.BEYOND for a in ("sm_75", "sm_80") if not s.runs_on(a)]


@pytest.mark.parametrize("step, older", REFUSED, ids=lambda x: getattr(x, "name", x))
def test_kernel_is_refused_for_older_gpus_with_the_reason(step, older):
    with pytest.raises(compiler.CompileError, match=rf"{step.name} needs {step.min_arch}"):
        compiler.compile_for_arch(step.source(), [step.name_expression], older, step.path.name)


@by_hopper
def test_the_wgmma_steps_are_refused_for_plain_sm90_which_has_no_wgmma(step):
    with pytest.raises(compiler.CompileError, match=rf"{step.name} needs sm_90a"):
        compiler.compile_for_arch(step.source(), [step.name_expression], "sm_90", step.path.name)


def test_compile_command_skips_them_for_a_t4_and_compiles_the_ladder():
    files = [str(s.path) for s in registry.KERNELS]
    result = subprocess.run(
        [sys.executable, "-m", "autograder", "compile", *files, "--arch", "sm_75"],
        check=False,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr
    for s in registry.BEYOND:
        assert f"skipped {s.path.name}: {s.name} needs {s.needs}" in result.stdout
    assert result.stdout.count("on sm_75:") == len(registry.STEPS)


@by_name
def test_cpu_backend_refuses_them_by_name(step):
    with pytest.raises(BackendUnavailable, match="the CPU backend cannot run .* on a GPU"):
        judge.check(KernelSpec.from_step(step), shapes=checker.SMALL[:1], backend="cpu")


def _tf32_launch(M, N, K, alpha, A, B, beta, C):
    """What a TF32 kernel computes: inputs rounded to TF32, products summed in float."""
    product = tf32(A.reshape(M, K)).astype(np.float64) @ tf32(B.reshape(K, N))
    C[:] = (alpha * product + beta * C.reshape(M, N)).astype(np.float32).ravel()


@pytest.mark.parametrize("shape", checker.SMALL + checker.MEDIUM, ids=str)
def test_tf32_results_pass_the_tf32_tolerance(shape):
    rng = np.random.default_rng(0)
    tf32 = registry.TF32_INPUT_ROUNDOFF
    for beta in (0.0, checker.BETA):
        result = checker.run_case(np, _tf32_launch, shape, beta, rng, input_roundoff=tf32)
        assert result.ok, result.message


def test_tf32_results_fail_the_fp32_tolerance():
    rng = np.random.default_rng(0)
    result = checker.run_case(np, _tf32_launch, checker.MEDIUM[0], checker.BETA, rng)
    assert not result.ok


def _drop_last_k(M, N, K, alpha, A, B, beta, C):
    """A TF32 kernel with an off-by-one: its loop over K stops one short."""
    A, B = A.reshape(M, K)[:, :-1].ravel(), B.reshape(K, N)[:-1].ravel()
    _tf32_launch(M, N, K - 1, alpha, A, B, beta, C)


def _three_tf32_launch(M, N, K, alpha, A, B, beta, C, terms=3):
    """What step 13 computes: the three (or fewer) largest products of the split
    inputs, summed in float."""
    (a, a_small), (b, b_small) = split(A.reshape(M, K)), split(B.reshape(K, N))
    products = [(a, b_small), (a_small, b), (a, b)][3 - terms :]
    product = sum(x.astype(np.float64) @ y.astype(np.float64) for x, y in products)
    C[:] = (alpha * product + beta * C.reshape(M, N)).astype(np.float32).ravel()


@pytest.mark.parametrize("shape", checker.SMALL + checker.MEDIUM, ids=str)
def test_three_tf32_products_pass_the_fp32_tolerance(shape):
    """3xTF32 is judged as an FP32 kernel (no input_roundoff), and its arithmetic
    passes: the split leaves at most 2^-22 of each input out."""
    assert registry.step("13").input_roundoff == 0
    rng = np.random.default_rng(0)
    for beta in (0.0, checker.BETA):
        result = checker.run_case(np, _three_tf32_launch, shape, beta, rng)
        assert result.ok, result.message


def test_two_tf32_products_fail_the_fp32_tolerance():
    """Each of the small products is needed: with one left out, the error is a TF32 one."""
    rng = np.random.default_rng(0)
    two = functools.partial(_three_tf32_launch, terms=2)
    result = checker.run_case(np, two, checker.MEDIUM[0], checker.BETA, rng)
    assert not result.ok


def test_the_tf32_tolerance_still_catches_a_dropped_term_of_k():
    rng = np.random.default_rng(0)
    tf32 = registry.TF32_INPUT_ROUNDOFF
    result = checker.run_case(np, _drop_last_k, checker.MEDIUM[0], 0.0, rng, input_roundoff=tf32)
    assert not result.ok


def _newer_gpu_than(step) -> str | None:
    """None when the GPU here can run step, else why not."""
    reason = gpu.unavailable_reason()
    if reason:
        return reason
    arch = gpu.device_info().arch
    return None if step.runs_on_gpu(arch) else f"{step.name} needs {step.needs}; this GPU is {arch}"


@pytest.mark.gpu
@by_name
def test_beyond_kernel_passes_the_whole_suite(step):
    if reason := _newer_gpu_than(step):
        pytest.skip(reason)
    report = judge.check(KernelSpec.from_step(step))
    assert report.ok, str(report)
    assert not report.skipped, "the large shape was not run:\n" + str(report)


@pytest.mark.gpu
@by_name
def test_a_beyond_step_leaves_c_unread_where_beta_is_0_as_the_registry_says(step):
    """Given a C of infinity where beta = 0, a step that leaves C unread there
    (registry.Step.leaves_c_unread) passes, one that computes beta * C makes NaN of it
    (0 * inf), and is told so (the CPU backend checks steps 01 to 09 so)."""
    if reason := _newer_gpu_than(step):
        pytest.skip(reason)
    spec = replace(KernelSpec.from_step(step), leaves_c_unread=True)
    zero = [c for c in judge.check(spec, shapes=checker.MEDIUM).cases if not c.beta]
    assert zero and all(c.ok == step.leaves_c_unread for c in zero), [c.message for c in zero]
    assert all(c.ok or c.message.startswith(checker.READ_UNREAD_C) for c in zero)


@pytest.mark.gpu
def test_tf32_kernel_fails_the_fp32_tolerance():
    """The TF32 step's looser tolerance is what lets it pass, so it is needed."""
    step = registry.step("11")
    if reason := _newer_gpu_than(step):
        pytest.skip(reason)
    strict = replace(KernelSpec.from_step(step), input_roundoff=0.0)
    report = judge.check(strict, shapes=checker.MEDIUM)
    assert report.failures and not report.error, str(report)


@pytest.mark.gpu
def test_a_tf32_step_is_benched_beside_cublas_with_tf32_and_strict_cublas_stays_strict():
    """bench times step 11 against cuBLAS with TF32 on, in the same run; switching
    cuBLAS to TF32 for those samples must not leak into the strict FP32 baseline."""
    step = registry.step("11")
    if reason := _newer_gpu_than(step):
        pytest.skip(reason)
    import cupy

    from autograder.measure import bench

    rows = bench.bench({step.name: KernelSpec.from_step(step)}, ["512x384x1024"], progress=False)
    assert [r.kernel for r in rows] == [step.name, bench.CUBLAS_TF32]
    assert len({r.cublas_gflops for r in rows}) == 1  # one strict cuBLAS run beside both
    rng = np.random.default_rng(0)
    A, B = (rng.standard_normal(s, dtype=np.float32) for s in ((512, 1024), (1024, 384)))
    exact = A.astype(np.float64) @ B.astype(np.float64)
    scale = np.abs(A).astype(np.float64) @ np.abs(B).astype(np.float64)
    fp32 = checker.tolerance_factor(1024)
    strict = cupy.matmul(cupy.asarray(A), cupy.asarray(B)).get()
    tf32 = gpu.matmul_tf32(cupy.asarray(A), cupy.asarray(B), cupy.empty((512, 384), cupy.float32))
    assert (np.abs(strict - exact) <= fp32 * scale).all()  # still strict FP32
    assert not (np.abs(tf32.get() - exact) <= fp32 * scale).all()  # TF32 really was on


@pytest.mark.gpu
@by_hopper
def test_a_c_of_few_tiles_runs_in_layers_of_k_that_add_up_to_the_product(step):
    """256 x 256 x 2048 is 4 or 2 blocks for 132 SMs: the GEMM runs the kernel in layers
    of K (split_k), each a partial product, and step 09's reduction adds them up."""
    if reason := _newer_gpu_than(step):
        pytest.skip(reason)
    import cupy

    from autograder.run import split_k
    from autograder.run.backends import gpu_launcher

    M, N, K = 256, 256, 2048
    launch = gpu_launcher(KernelSpec.from_step(step), tune=False)  # no race to FP32
    rng = np.random.default_rng(1)
    A, B = (rng.standard_normal(s, dtype=np.float32) for s in ((M, K), (K, N)))
    C = cupy.zeros((M, N), dtype=cupy.float32)
    launch(M, N, K, 1.0, cupy.asarray(A), cupy.asarray(B), 0.0, C)
    layers = split_k.layers(M, N, K, step.geometry.tile, gpu.device_info().sms)
    assert layers > 1 and [s.splits for s in launch.splits()] == [layers]
    exact = A.astype(np.float64) @ B.astype(np.float64)
    scale = np.abs(A).astype(np.float64) @ np.abs(B).astype(np.float64)
    bound = checker.tolerance_factor(K, step.input_roundoff) * scale
    assert (np.abs(C.get() - exact) <= bound).all()


@pytest.mark.gpu
@by_hopper
@pytest.mark.parametrize("M, K", [(1, 1), (2, 3), (3, 5), (5, 513), (257, 130), (64, 4)])
def test_the_kernel_reads_a_wherever_it_starts_and_whatever_k_is(step, M, K):
    """The kernel itself (no copies, no layers) reads A by TMA where its rows start at
    16-byte multiples and float by float where they do not: A lies 0 to 3 floats past a
    16-byte boundary amid NaNs, which reach C only if a copy reaches past A, with K odd
    and even and M under a block's 4 warps; rows of C past M stay as they were."""
    if reason := _newer_gpu_than(step):
        pytest.skip(reason)
    import cupy

    from autograder.run.backends import gpu_launcher

    N = 96
    launch = gpu_launcher(KernelSpec.from_step(step), layered=False)
    rng = np.random.default_rng(M * K)
    A, B = (rng.standard_normal(s, dtype=np.float32) for s in ((M, K), (K, N)))
    exact = A.astype(np.float64) @ B.astype(np.float64)
    scale = np.abs(A).astype(np.float64) @ np.abs(B).astype(np.float64)
    bound = checker.tolerance_factor(K, step.input_roundoff) * scale
    for start in range(4):
        buffer = cupy.full(M * K + 64, cupy.nan, dtype=cupy.float32)
        a = buffer[32 + start : 32 + start + M * K]
        a[...] = cupy.asarray(A.ravel())
        C = cupy.full((M + 4, N), 7.0, dtype=cupy.float32)  # rows past M: never written
        launch(M, N, K, 1.0, a, cupy.asarray(B), 0.0, C[:M])
        got = C.get()
        assert (np.abs(got[:M] - exact) <= bound).all(), f"A {start} floats past 16 bytes"
        assert (got[M:] == 7.0).all()
