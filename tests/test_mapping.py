"""Index mistakes are named as what they are: each planted mistake of tests/planted.py's
MAPPING gets its own cause, the learner's line, and no advice its evidence contradicts."""

import numpy as np
import pytest
from planted import MAPPING

from autograder import judge
from autograder.judge import mapping
from autograder.judge.checker import EXACT_SIZE, Shape
from autograder.ladder import registry
from autograder.run.kernel import KernelSpec

# N < K (257x1x33, 40x20x50) keeps a stride of N where K belongs inside A; the
# others hold several tiles, warps and sub-tiles in every direction.
SHAPES = (Shape(257, 1, 33), Shape(40, 20, 50), Shape(67, 131, 68), EXACT_SIZE)
WRONG_ADVICE = ("check the bound", "enough blocks launched", "repeat every")


@pytest.mark.parametrize("backend", ["cpu", pytest.param("gpu", marks=pytest.mark.gpu)])
@pytest.mark.parametrize("name", MAPPING)
def test_an_index_mistake_is_named_with_its_line(name, backend):
    spec, phrase = MAPPING[name]
    report = judge.check(spec, shapes=SHAPES, backend=backend)
    assert not report.ok, str(report)
    said = [f"{c.label}: {c.message}" for c in report.failures]
    assert any(phrase in s for s in said), "\n".join(said)
    for s in said:
        assert not any(advice in s for advice in WRONG_ADVICE), s


def test_a_term_the_steps_parameters_hide_is_checked_where_it_counts():
    spec, _ = MAPPING["the warp sub-tile offset missing in A's fragments (WMITER = 1 hides it)"]
    report = judge.check(spec, shapes=SHAPES, backend="cpu")
    assert [c.under for c in report.failures] == ["at WM=64, where every index term counts"] * 2


def _terms(step: registry.Step) -> set[str]:
    spec = KernelSpec.from_step(step)
    terms = mapping.clues_for(spec).terms
    return {t.formula for t in terms.rows + terms.columns}


WARP_TILED = [s for s in registry.KERNELS if {"WM", "TM"} <= set(s.params)]


@pytest.mark.parametrize("step", WARP_TILED, ids=lambda s: s.name)
def test_every_index_term_counts_where_a_step_is_checked(step):
    """A term whose counter has one value at a step's parameters (wm at WMITER = 1) is
    always 0 there: the step's every_term parameters, within its rules, make it count."""
    checked = _terms(step)
    every = step.at_every_term()
    if every:
        assert not step.tuning or not step.tuning.rules(every.params)
        checked |= _terms(every)
    assert {"wm * WSUBM", "wn * WSUBN", "warpRow * WM", "warpCol * WN"} <= checked


def test_terms_drop_as_a_kernel_without_them_indexes():
    term = mapping.Term("row", "", "wm * WSUBM", size=32, span=64, symbol="WSUBM")
    assert list(term.dropped(130)[30:36]) == [30, 31, 0, 1, 2, 3]
    block = mapping.Term("row", "", "blockIdx.y * BM", size=32, span=None, symbol="BM")
    assert list(block.dropped(70)[62:66]) == [30, 31, 0, 1]


def test_a_kernel_with_another_bug_matches_no_hypothesis():
    """A kernel whose K loop stops one short reproduces no index mistake: '' (the
    plainer description answers)."""
    rng = np.random.default_rng(1)
    A, B = rng.standard_normal((40, 30)), rng.standard_normal((30, 50))
    got = 1.5 * A[:, :-1] @ B[:-1, :]
    case = mapping.Case(
        got,
        A,
        B,
        np.zeros_like(got),
        1.5,
        0.0,
        np.full(got.shape, 1e-4),
        np.zeros(got.shape, bool),
        A @ B,
    )
    terms = mapping.clues_for(KernelSpec.from_step(registry.step("07"))).terms
    assert mapping.diagnose(case, mapping.Clues(terms, None)) == ""
