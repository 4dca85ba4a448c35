"""The last FP32 step's ablation: each variant takes out what it says, and only that,
and is still a right kernel (the timings themselves are `bench --ablation`'s)."""

from dataclasses import replace

import pytest

from autograder import judge
from autograder.judge.checker import SMALL
from autograder.ladder import registry
from autograder.measure import ablation
from autograder.run import compiler


@pytest.mark.parametrize("variant", ablation.VARIANTS, ids=lambda v: v.trick)
def test_every_variant_changes_the_kernel_and_stays_right_on_the_cpu(variant):
    spec = ablation.spec(variant)
    whole = registry.step(ablation.STEP).with_params(**variant.params)
    assert spec.source != whole.source() or variant.params, "the variant takes nothing out"
    compiler.compile_for_arch(spec.source, [spec.name_expression], "sm_90", spec.filename)
    report = judge.check(spec, backend="cpu", shapes=SMALL)
    assert report.ok, str(report)


def test_a_substitution_that_no_longer_applies_is_refused_by_name():
    stale = replace(ablation.VARIANTS[0], substitutions=(("no such line;", ""),))
    with pytest.raises(ablation.StaleVariant, match="occurs 0 times in 08_pipelining.cu"):
        ablation.spec(stale)


def test_the_ablation_times_the_whole_kernel_and_every_variant():
    specs = ablation.specs()
    assert list(specs) == [registry.step(ablation.STEP).name] + [v.label for v in ablation.VARIANTS]
