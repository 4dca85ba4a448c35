"""The ablations of step 08 (the last FP32 step) and steps 12 and 13 (Hopper's): each variant
takes out what it says, and only that, and is still a right kernel, on the CPU where
the kernel runs there and on a GPU that runs it (the timings themselves are
`bench --ablation`'s)."""

from dataclasses import replace

import pytest

from autograder import judge
from autograder.judge.checker import SMALL
from autograder.ladder import registry
from autograder.measure import ablation
from autograder.run import compiler, gpu


@pytest.mark.parametrize("variant", ablation.variants("08"), ids=lambda v: v.trick)
def test_every_variant_changes_the_kernel_and_stays_right_on_the_cpu(variant):
    spec = ablation.spec(variant)
    whole = registry.step(variant.step).with_params(**variant.params)
    assert spec.source != whole.source() or variant.params, "the variant takes nothing out"
    compiler.compile_for_arch(spec.source, [spec.name_expression], "sm_90", spec.filename)
    report = judge.check(spec, backend="cpu", shapes=SMALL)
    assert report.ok, str(report)


def test_a_substitution_that_no_longer_applies_is_refused_by_name():
    stale = replace(ablation.VARIANTS[0], substitutions=(("no such line;", ""),))
    with pytest.raises(ablation.StaleVariant, match="occurs 0 times in 08_pipelining.cu"):
        ablation.spec(stale)


HOPPER = ablation.variants("12") + ablation.variants("13")


@pytest.mark.parametrize("variant", HOPPER, ids=lambda v: v.trick)
def test_every_hopper_variant_changes_the_kernel_and_builds_for_sm90a(variant):
    spec = ablation.spec(variant)
    whole = registry.step(variant.step).with_params(**variant.params)
    assert spec.source != whole.source() or variant.params, "the variant takes nothing out"
    built = compiler.compile_for_arch(spec.source, [spec.name_expression], "sm_90a", spec.filename)
    resources = built.resources[spec.name_expression]
    assert resources.problems(spec.geometry.threads) == [], str(resources)


@pytest.mark.gpu
@pytest.mark.parametrize("variant", HOPPER, ids=lambda v: v.trick)
def test_every_hopper_variant_is_right_on_a_gpu_that_runs_it(variant):
    reason = gpu.unavailable_reason()
    step = registry.step(variant.step)
    if reason is None and not step.runs_on_gpu(gpu.device_info().arch):
        reason = f"{step.name} needs sm_90a; this GPU is {gpu.device_info().arch}"
    if reason:
        pytest.skip(reason)
    report = judge.check(ablation.spec(variant), shapes=SMALL)
    assert report.ok, str(report)


@pytest.mark.parametrize("step", ablation.STEPS)
def test_the_ablation_times_the_whole_kernel_and_every_variant(step):
    specs = ablation.specs(step)
    assert list(specs) == [registry.step(step).name] + [v.label for v in ablation.variants(step)]


def test_a_step_without_an_ablation_is_refused_with_those_that_have_one():
    with pytest.raises(ValueError, match="11_tensor_core_tf32 has no ablation; these do: 08, 12"):
        ablation.specs("11")
