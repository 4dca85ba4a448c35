"""A tensor-core step's GEMM at each shape runs the fastest of its paths (the tensor
cores in split_k's layers, in one layer, step 09's FP32 GEMM), timed the first time it
meets the shape and only where the product is small (autograder.run.paths); on the
CPU, with a fake clock."""

import math

import pytest

from autograder.run import paths

PEAK = 66.9e12  # an H200's FP32 FLOP/s
SMALL, LARGE = (333, 777, 129), (4096, 4096, 4096)


class _Runs:
    """Launches that record which path ran, and a timer with each path's seconds."""

    def __init__(self, seconds: dict[str, float]):
        self.seconds, self.ran, self.timed = seconds, [], []

    def launch(self, name: str):
        return lambda *args: self.ran.append((name, args[:3]))

    def tensor(self, layers):
        return self.launch(paths.tensor_cores(RULE_LAYERS if layers is None else layers))

    def timer(self, launch_of):
        def time(shape, name):
            self.timed.append((shape, name))
            launch_of(name)(*shape, 1.0, None, None, 0.0, None)  # it runs what it times
            return self.seconds[name]

        return time


RULE_LAYERS = 3


def _gemm(runs: _Runs, timer=True):
    return paths.gemm(
        "13_wgmma_3xtf32.cu",
        runs.tensor,
        runs.launch(paths.FP32),
        runs.timer if timer else None,
        lambda M, N, K: RULE_LAYERS,
        PEAK,
    )


def _run(launch, shape):
    launch(*shape, 1.0, None, None, 0.0, None)


@pytest.mark.parametrize(
    "winner", [paths.FP32, paths.tensor_cores(1), paths.tensor_cores(RULE_LAYERS)]
)
def test_a_small_product_runs_the_path_timed_fastest_and_is_timed_once(winner):
    names = (paths.tensor_cores(RULE_LAYERS), paths.tensor_cores(1), paths.FP32)
    runs = _Runs({name: 1e-5 if name == winner else 2e-5 for name in names})
    launch = _gemm(runs)
    for _ in range(3):
        _run(launch, SMALL)
    assert sorted(name for _, name in runs.timed) == sorted(names)  # each path once
    assert launch.path(*SMALL) == winner
    assert runs.ran[-3:] == [(winner, SMALL)] * 3  # what runs is what won


def test_a_path_that_did_not_compute_the_product_is_never_chosen():
    runs = _Runs({paths.tensor_cores(RULE_LAYERS): 2e-5, paths.tensor_cores(1): 3e-5,
                  paths.FP32: math.inf})  # fmt: skip
    assert _gemm(runs).path(*SMALL) == paths.tensor_cores(RULE_LAYERS)


def test_a_large_product_runs_the_tensor_cores_in_the_rules_layers_untimed():
    runs = _Runs({})
    launch = _gemm(runs)
    assert 2 * math.prod(LARGE) > paths.RACE_S * PEAK
    _run(launch, LARGE)
    assert runs.timed == [] and runs.ran == [(paths.tensor_cores(RULE_LAYERS), LARGE)]


def test_without_timing_the_tensor_cores_run_at_every_shape():
    runs = _Runs({})
    launch = _gemm(runs, timer=False)
    for shape in (SMALL, LARGE):
        _run(launch, shape)
    assert runs.timed == [] and [name for name, _ in runs.ran] == [
        paths.tensor_cores(RULE_LAYERS)
    ] * 2


def test_a_shape_the_rule_runs_in_one_layer_is_not_timed_in_one_twice():
    runs = _Runs({paths.tensor_cores(1): 2e-5, paths.FP32: 1e-5})
    launch = paths.gemm(
        "12_wgmma_tf32.cu", runs.tensor, runs.launch(paths.FP32), runs.timer,
        lambda M, N, K: 1, PEAK,
    )  # fmt: skip
    assert launch.path(*SMALL) == paths.FP32
    assert sorted(name for _, name in runs.timed) == [paths.FP32, paths.tensor_cores(1)]
