"""A tensor-core step's GEMM at each shape runs the fastest of its paths (the tensor
cores with blocks of each height, in split_k's layers and in one, on padded copies or
not where TMA cannot describe A or B; step 09's FP32 GEMM), timed the first time it meets
the shape and only where the product is small (autograder.run.paths); on the CPU, with a
fake clock."""

import itertools
import math

import pytest

from autograder.run import paths, split_k

PEAK = 66.9e12  # an H200's FP32 FLOP/s
ROWS = (256, 128, 64)  # step 12's block heights (registry.block_rows)
RULE_LAYERS = 3
SMALL, SMALL_ALIGNED = (333, 777, 129), (512, 512, 512)  # K % 4 = 1; all multiples of 4
LARGE, LARGE_ODD = (4096, 4096, 4096), (4095, 4097, 4093)


class _Runs:
    """Launches that record what ran (rows, layers, copy; or 'fp32'), and a timer with
    each path's seconds by name."""

    def __init__(self, seconds: dict[str, float], uncompiled=()):
        self.seconds, self.uncompiled, self.ran, self.timed = seconds, uncompiled, [], []

    def launch(self, what):
        return lambda *args: self.ran.append((what, args[:3]))

    def tensor(self, rows, layers, copy, clustered=None):
        what = (rows, layers, copy) if clustered is None else (rows, layers, copy, clustered)
        return None if rows in self.uncompiled else self.launch(what)

    def timer(self, launch_of):
        def time(shape, name):
            self.timed.append((shape, name))
            launch_of(name)(*shape, 1.0, None, None, 0.0, None)  # it runs what it times
            return self.seconds.get(name, 1.0)

        return time


def _gemm(runs: _Runs, timer=True, rule_layers=RULE_LAYERS, clustered=None):
    """Step 12's paths (its layers through the reduction), or with `clustered` layers first
    (step 13's: its own choice, in clusters)."""
    plans = [(rule_layers, False)]
    return paths.gemm(
        "12_wgmma_tf32.cu",
        runs.tensor,
        runs.launch("fp32"),
        runs.timer if timer else None,
        lambda M, N, K, rows: ([(clustered, True)] if clustered else []) + plans,
        ROWS,
        PEAK,
    )


def _run(launch, shape):
    launch(*shape, 1.0, None, None, 0.0, None)


def _raced(copies=(False, True), rows=ROWS, layers=(RULE_LAYERS, 1)):
    return {
        paths.tensor_cores(r, s, c): (r, s, c, False)
        for r, s, c in itertools.product(rows, layers, copies)
    } | {paths.FP32: "fp32"}


@pytest.mark.parametrize(
    "winner",
    [paths.FP32, paths.tensor_cores(64, 1, True), paths.tensor_cores(256, RULE_LAYERS, False)],
)
def test_a_small_product_runs_the_path_timed_fastest_and_is_timed_once(winner):
    names = _raced()
    runs = _Runs({name: 1e-5 if name == winner else 2e-5 for name in names})
    launch = _gemm(runs)
    for _ in range(3):
        _run(launch, SMALL)
    assert sorted(name for _, name in runs.timed) == sorted(names)  # each path once
    assert launch.path(*SMALL) == winner
    assert runs.ran[-3:] == [(names[winner], SMALL)] * 3  # what runs is what won


def test_where_tma_describes_a_and_b_no_copies_are_raced():
    runs = _Runs({})
    _gemm(runs).path(*SMALL_ALIGNED)
    assert sorted(name for _, name in runs.timed) == sorted(_raced(copies=(False,)))


def test_a_block_height_the_kernel_does_not_compile_at_is_left_out_of_the_race():
    runs = _Runs({}, uncompiled=(64,))  # a learner's kernel, written for its own blocks
    _gemm(runs).path(*SMALL)
    assert sorted(name for _, name in runs.timed) == sorted(_raced(rows=(256, 128)))


def test_a_path_that_did_not_compute_the_product_is_never_chosen():
    seconds = {name: 3e-5 for name in _raced()}
    seconds |= {paths.FP32: math.inf, paths.tensor_cores(128, 1, False): 2e-5}
    assert _gemm(_Runs(seconds)).path(*SMALL) == paths.tensor_cores(128, 1, False)


@pytest.mark.parametrize("shape", [LARGE, LARGE_ODD])
def test_a_large_product_runs_the_own_blocks_in_the_rules_layers_untimed(shape):
    runs = _Runs({})
    launch = _gemm(runs)
    assert 2 * math.prod(shape) > paths.RACE_S * PEAK
    _run(launch, shape)
    assert runs.timed == [] and runs.ran == [((256, None, None), shape)]
    # named as what it does: the odd shape's copies pay (split_k.copies_pay)
    copied = shape == LARGE_ODD
    assert split_k.copies_pay(*shape) and launch.path(*shape) == paths.tensor_cores(
        256, RULE_LAYERS, copied
    )


def test_without_timing_the_own_blocks_run_at_every_shape():
    runs = _Runs({})
    launch = _gemm(runs, timer=False)
    for shape in (SMALL, LARGE):
        _run(launch, shape)
    assert runs.timed == [] and [what for what, _ in runs.ran] == [(256, None, None)] * 2


def test_a_shape_the_rule_runs_in_one_layer_is_not_timed_in_one_twice():
    runs = _Runs({})
    _gemm(runs, rule_layers=1).path(*SMALL)
    assert sorted(name for _, name in runs.timed) == sorted(_raced(layers=(1,)))


def test_a_path_s_name_says_its_block_height_back():
    """The book reads the height back from the names bench writes (paths.block_rows)."""
    for rows, layers, copied in itertools.product(ROWS, (1, 2, 66), (False, True)):
        assert paths.block_rows(paths.tensor_cores(rows, layers, copied)) == rows
    assert paths.block_rows(paths.FP32) is None


def test_layers_added_up_in_clusters_are_raced_beside_the_reductions_and_named_so():
    runs = _Runs({})
    launch = _gemm(runs, clustered=2)
    in_clusters = {
        paths.tensor_cores(r, 2, c, clustered=True): (r, 2, c, True)
        for r, c in itertools.product(ROWS, (False, True))
    }
    names = _raced() | in_clusters
    winner = paths.tensor_cores(128, 2, True, clustered=True)
    assert winner.endswith("2 layers of K in clusters, on padded copies")
    runs.seconds = {name: 1e-5 if name == winner else 2e-5 for name in names}
    assert launch.path(*SMALL) == winner
    assert sorted(name for _, name in runs.timed) == sorted(names)
    _run(launch, SMALL)
    assert runs.ran[-1] == (names[winner], SMALL)


@pytest.mark.parametrize("faster", [True, False])
def test_a_large_product_times_its_own_blocks_layers_in_clusters_against_the_reductions(faster):
    """Above the race's bound only the step's own plans at its own height are timed, named
    for how their layers add up: the model's in clusters, and the reduction's."""
    runs = _Runs({})
    launch = _gemm(runs, clustered=2)
    model = paths.tensor_cores(256, 2, False, clustered=True)
    reduction = paths.tensor_cores(256, RULE_LAYERS, False)
    runs.seconds = {model: 1e-3 if faster else 3e-3, reduction: 2e-3}
    _run(launch, LARGE)
    assert sorted(name for _, name in runs.timed) == sorted([model, reduction])
    assert launch.path(*LARGE) == (model if faster else reduction)
    assert runs.ran[-1] == (
        ((256, None, None) if faster else (256, RULE_LAYERS, None, False)),
        LARGE,
    )
