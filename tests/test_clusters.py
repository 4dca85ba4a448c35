"""Step 13's layers of K added up in clusters (kernels/13_wgmma_3xtf32.cu, LAYERS > 1;
autograder.run.split_k): each layer's block lays out its partial sums in its own shared
memory, and the cluster's blocks add them up, layer 0 first, from one another's. The
same layers added up by step 09's reduction give the same C bit for bit; planted
kernels that read the wrong block or read before the others are done do not."""

import numpy as np
import pytest

from autograder import KernelSpec
from autograder.ladder import registry
from autograder.run import gpu
from autograder.run.kernel import substituted

STEP = registry.step("13")
# Every layer's sum read from the block itself: its own partial sums, LAYERS times over.
OWN_ONLY = (("peer_float(mine, z)", "peer_float(mine, blockIdx.z)"),)
# Sums read before the other blocks have laid theirs out.
UNWAITED = (("  cluster_sync();  // every layer's partial sums are laid out\n", ""),)
# Launches of a planted kernel in which its fault must show at least once.
TRIES = 10
# A learner's kernel written for one layer of K: it does not compile in clusters.
ONE_LAYER = (
    (
        "  if (LAYERS == 1) C +=",
        '  static_assert(LAYERS == 1, "written for one layer");\n  if (LAYERS == 1) C +=',
    ),
)


def _launches(changes, layers: int):
    """Step 13's GEMM in `layers` layers of K: added up in clusters (the kernel with
    `changes`), and by the reduction (the kernel as it is)."""
    import dataclasses

    import cupy

    from autograder.run import backends, split_k

    spec = KernelSpec.from_step(STEP)
    planted = substituted(spec, changes) if changes else spec
    clustered = STEP.with_params(LAYERS=layers)
    together = backends._gpu_kernel(
        dataclasses.replace(planted, name_expression=clustered.name_expression)
    )
    step09 = KernelSpec.from_step(registry.step("09"))
    reduce = backends._gpu_kernel(dataclasses.replace(step09, target=spec.target))
    kernel, tile, sms = backends._gpu_kernel(spec), spec.geometry.tile, gpu.device_info().sms

    def gemm(clusters):
        return split_k.gemm(
            spec.name_expression, kernel, reduce, cupy, tile, sms, layers, False, clusters
        )

    at_once = split_k.Clusters(lambda S: together if S == layers else None, gpu.clusters_at_once)
    return gemm(at_once), gemm(None)


def test_every_block_height_builds_in_every_cluster_without_spills_and_asks_for_it():
    """NVRTC, no GPU: the kernel at each height the GEMM may race (registry.block_rows),
    in clusters of 1 to split_k.CLUSTER_AT_MOST layers, fits its launch with nothing
    spilled, and its PTX asks for that cluster, which the grid's depth then fills."""
    import re

    from autograder.run import compiler, split_k

    shaped = [
        STEP.with_params(BM=height, LAYERS=size)
        for height in registry.block_rows(STEP)
        for size in range(1, split_k.CLUSTER_AT_MOST + 1)
    ]
    built = compiler.compile_for_arch(
        STEP.source(), [s.name_expression for s in shaped], STEP.target, STEP.path.name
    )
    for s in shaped:
        resources = built.resources[s.name_expression]
        assert resources.problems(s.geometry.threads) == [], str(resources)
    asked = re.findall(r"\.reqnctapercluster 1, 1, (\d+)", built.ptx)
    assert sorted(map(int, asked)) == sorted(s.params["LAYERS"] for s in shaped)


@pytest.mark.parametrize("changes", [OWN_ONLY, UNWAITED, ONE_LAYER])
def test_each_planted_kernel_is_step_13_with_one_change(changes):
    """The planted kernels' edits find their text in the kernel, once each (substituted
    raises where it does not), so that the GPU tests below plant what they say."""
    planted = substituted(KernelSpec.from_step(STEP), changes)
    assert planted.source != STEP.source()


def test_the_kernel_written_for_one_layer_compiles_in_one_and_in_no_cluster():
    """NVRTC, no GPU: ONE_LAYER is what the GPU test below needs, a kernel of the step's own
    blocks that builds in one layer and fails to build in clusters."""
    from autograder.run import compiler

    planted = substituted(KernelSpec.from_step(STEP), ONE_LAYER)
    one, two = (STEP.with_params(LAYERS=n).name_expression for n in (1, 2))
    compiler.compile_for_arch(planted.source, [one], STEP.target, STEP.path.name)
    with pytest.raises(compiler.CompileError, match="written for one layer"):
        compiler.compile_for_arch(planted.source, [two], STEP.target, STEP.path.name)


@pytest.mark.gpu
@pytest.mark.parametrize("changes, right", [((), True), (OWN_ONLY, False), (UNWAITED, False)])
@pytest.mark.parametrize("layers", [2, 3, 8])
def test_layers_added_up_in_clusters_give_the_reductions_c_bit_for_bit(
    step13_gpu, changes, right, layers
):
    """At a C of 3 x 3 tiles (its last ones part outside C), numbers far from 1 past A's
    row 200 and B's column 200 (so that some blocks multiply again, scaled, and scale
    back before the cluster adds up), beta 0 and not. The step's kernel gives the
    reduction's C every time; each planted one differs at least once in TRIES launches
    (UNWAITED's race shows only when a block reads its peer's sums before they are laid
    out: once in a run of the whole GPU suite on an H200, 2026-12-01, it did not at the
    first launch)."""
    import cupy

    M, N, K = 300, 260, 1100
    rng = np.random.default_rng(layers)
    A = rng.standard_normal((M, K)).astype(np.float32)
    B = rng.standard_normal((K, N)).astype(np.float32)
    A[200:] *= np.float32(2.0**-120)
    B[:, 200:] *= np.float32(2.0**100)
    A, B = cupy.asarray(A), cupy.asarray(B)
    in_clusters, reduced = _launches(changes, layers)
    before = cupy.asarray(rng.standard_normal((M, N)).astype(np.float32))
    differ = []
    for beta in (0.0, -0.5):
        expected = before.copy()
        reduced(M, N, K, 1.5, A, B, beta, expected)
        for _ in range(TRIES):
            C = before.copy()
            in_clusters(M, N, K, 1.5, A, B, beta, C)
            assert in_clusters.splits() == () and [s.splits for s in reduced.splits()] == [layers]
            differ.append(int((C != expected).sum()))
    if right:
        assert not any(differ), f"sums differ from the reduction's: {differ}"
    else:
        assert any(differ), f"the planted kernel gave the reduction's C in {len(differ)} launches"


@pytest.mark.gpu
def test_a_c_of_few_tiles_runs_its_own_layers_in_clusters(step13_gpu):
    """1024^3 is 64 tiles of 128 x 128 for a GPU of 132 SMs: the GEMM's own choice adds its
    layers up in clusters (split_k.plan), with no reduction, and C is the product."""
    import cupy

    from autograder.judge import checker
    from autograder.run.backends import gpu_launcher

    M = N = K = 1024
    launch = gpu_launcher(KernelSpec.from_step(STEP), tune=False)
    rng = np.random.default_rng(2)
    A, B = (rng.standard_normal((M, K)).astype(np.float32) for _ in range(2))
    C = cupy.zeros((M, N), dtype=cupy.float32)
    launch(M, N, K, 1.0, cupy.asarray(A), cupy.asarray(B), 0.0, C)
    assert launch.splits() == ()
    exact = A.astype(np.float64) @ B.astype(np.float64)
    scale = np.abs(A).astype(np.float64) @ np.abs(B).astype(np.float64)
    assert (np.abs(C.get() - exact) <= checker.tolerance_factor(K) * scale).all()


@pytest.mark.gpu
def test_a_kernel_written_for_one_layer_is_named_for_the_reduction_it_runs_in(
    step13_gpu, monkeypatch
):
    """At 1024^3 step 13's own kernel adds its layers up in clusters (above); a learner's
    that does not compile in clusters runs the same layers through the reduction, and
    the names its paths are timed and reported under say so (none says "in clusters")."""
    from autograder.run.backends import gpu_launcher

    monkeypatch.setenv("SGEMM_AUTOTUNE", "1")  # paths, as `check` and `bench` run them
    shape = (1024, 1024, 1024)
    honest = gpu_launcher(KernelSpec.from_step(STEP))
    planted = gpu_launcher(substituted(KernelSpec.from_step(STEP), ONE_LAYER))
    assert any("in clusters" in name for name in honest.paths(*shape))
    names = list(planted.paths(*shape))
    assert names and not any("in clusters" in name for name in names), names


@pytest.mark.gpu
def test_the_clusters_the_gpu_runs_at_once_are_those_of_step_13s_own_kernel(step13_gpu):
    """gpu.clusters_at_once asks of a kernel that takes a whole SM; split_k.plan counts on
    step 13's blocks taking one each, of every height: the driver says the same of them."""
    import dataclasses

    from autograder.run import backends

    for height in registry.block_rows(STEP):
        for size in range(2, 9):
            shaped = STEP.with_params(BM=height, LAYERS=size)
            spec = dataclasses.replace(
                KernelSpec.from_step(STEP),
                name_expression=shaped.name_expression,
                geometry=shaped.geometry,
            )
            # Held while the driver is asked: a launch dropped unloads its module, and
            # the handle it leaves is invalid (CUDA_ERROR_INVALID_HANDLE).
            launch = backends._gpu_kernel(spec)
            threads, shared = shaped.geometry.block[0], shaped.geometry.shared_bytes
            count = gpu.active_clusters(launch.function._function.ptr, size, threads, shared)
            assert count == gpu.clusters_at_once(size), (height, size)
