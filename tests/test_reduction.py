"""What the checker says of a wrong split-K reduction (step 09): the GEMM around it
(autograder.run.composed.compose) keeps each split product's layers as facts, and the
judge (autograder.judge.reduction) says what the reduction made of them. NumPy
stand-ins play step 08's kernel and the learner's reduction."""

import numpy as np

from autograder.judge import checker
from autograder.judge.checker import Shape
from autograder.run import composed
from autograder.run.by_shape import Bands, Plan

SHAPE = Shape(17, 19, 40)


def gemm(M, N, K, alpha, A, B, beta, C, layers=1):
    """Step 08 as the dispatcher runs it: layer s multiplies the s-th slice of K."""
    A, B = A.reshape(M, K), B.reshape(K, N)
    cuts = np.linspace(0, K, layers + 1).astype(int)
    out = C.reshape(layers, M, N)
    for s in range(layers):
        k = slice(cuts[s], cuts[s + 1])
        out[s] = alpha * (A[:, k] @ B[k, :]) + (beta * out[s] if beta else 0)


def reduction(layers_added):
    """A reduction that adds the layers layers_added(splits) picks."""

    def reduce(M, N, splits, alpha, partial, beta, C):
        layers = partial.reshape(splits, M, N)
        total = sum(layers[s] for s in layers_added(splits))
        C[:] = (alpha * total + beta * C.reshape(M, N)).ravel()

    return reduce


def check(plan, layers_added):
    launch = composed.compose(
        lambda M, N, K: plan,
        {"128x128": gemm},
        reduction(layers_added),
        lambda n: np.empty(n, dtype=np.float32),
    )
    return checker.run_case(np, launch, SHAPE, checker.BETA, np.random.default_rng(1))


def test_a_reduction_adding_every_layer_passes():
    assert check(Plan("128x128", 3), range).ok


def test_a_reduction_stopping_a_layer_short_is_told_where_its_loop_must_run():
    result = check(Plan("128x128", 3), lambda S: range(S - 1))
    assert result.message.startswith(
        "K was split in 3 layers (partial[0] ... partial[2]) and C holds the sum of the first "
        "2 only: the loop over the layers must run s = 0 ... splits - 1; "
    ), result.message


def test_a_reduction_reading_one_layer_each_pass_is_told_where_layer_s_starts():
    result = check(Plan("128x128", 4), lambda S: [0] * S)
    assert result.message.startswith(
        "K was split in 4 layers (partial[0] ... partial[3]) and C holds 4 times layer 0: "
        "every pass of the loop reads the same layer, where layer s starts at partial[s * M * N]"
    ), result.message


def test_a_band_of_c_computed_on_its_own_is_named_with_its_rows():
    plan = Bands(8, Plan("128x128", 1), Plan("128x128", 2))
    result = check(plan, lambda S: [S - 1])
    assert result.message.startswith(
        "C's rows 8 to 16 were a product of their own (M = 9 there, row i of it C's row 8 + i); "
        "K was split in 2 layers (partial[0] ... partial[1]) and C holds layer 1 alone: "
        "add every layer"
    ), result.message


def test_bands_of_one_size_are_each_judged_on_their_own_layers():
    # SHAPE's 17 rows in bands of 8 and 9; Shape(16, ...) in two of 8, each split in 3.
    # Each band's layers have a workspace of their own: the second band's, in one shared
    # with the first, were taken for the first's, and its C matched no account of them.
    plan = Bands(8, Plan("128x128", 3), Plan("128x128", 3))
    launch = composed.compose(
        lambda M, N, K: plan,
        {"128x128": gemm},
        reduction(lambda S: range(S - 1)),
        lambda n: np.empty(n, dtype=np.float32),
    )
    shape = Shape(16, 19, 40)
    result = checker.run_case(np, launch, shape, checker.BETA, np.random.default_rng(1))
    assert "C holds the sum of the first 2 only" in result.message, result.message


def test_a_reduction_writing_nan_is_told_where_and_the_judge_does_not_break():
    """A sum never given a value reads as NaN (the CPU backend fills such floats with
    NaN). NaN is within no tolerance and beyond none, so the element to name must be
    found as 'not within': looking for one 'beyond' found none and broke the grader
    (IndexError) instead of telling the learner."""

    def reduce(M, N, splits, alpha, partial, beta, C):
        C[:] = np.nan

    launch = composed.compose(
        lambda M, N, K: Plan("128x128", 2),
        {"128x128": gemm},
        reduce,
        lambda n: np.empty(n, dtype=np.float32),
    )
    result = checker.run_case(np, launch, SHAPE, checker.BETA, np.random.default_rng(1))
    assert result.message.startswith(
        "K was split in 2 layers (partial[0] ... partial[1]) and C is not alpha times their "
        "sum plus beta C: at (0, 0) the layers are "
    ), result.message
    assert "and C there is nan" in result.message, result.message


def test_a_reduction_adding_no_layer_is_not_told_it_added_a_layer_of_zeros():
    # K = 1 in 2 layers: the second multiplies no k, and is zeros everywhere. C = beta C
    # is alpha times that layer plus beta C, but no layer was read to make it.
    launch = composed.compose(
        lambda M, N, K: Plan("128x128", 2),
        {"128x128": gemm},
        reduction(lambda S: []),
        lambda n: np.empty(n, dtype=np.float32),
    )
    result = checker.run_case(np, launch, Shape(17, 19, 1), checker.BETA, np.random.default_rng(1))
    assert not result.ok and "alone" not in result.message, result.message
    assert "C is not alpha times their sum plus beta C" in result.message, result.message
