"""Every reference kernel compiles, with no GPU, within the T4's limits and without spills."""

import re

import pytest

from autograder.ladder import registry
from autograder.run import compiler

ARCHS = ("sm_75", "sm_90")  # Colab's T4 and the H100


@pytest.fixture(scope="module", params=ARCHS)
def compiled(request):
    arch = request.param
    return {
        s.id: compiler.compile_for_arch(s.source(), [s.name_expression], arch, s.path.name)
        for s in registry.STEPS
    }


@pytest.mark.parametrize("step", registry.STEPS, ids=lambda s: s.name)
def test_kernel_compiles_without_spills_within_t4_limits(compiled, step):
    result = compiled[step.id]
    resources = result.resources[step.name_expression]
    assert resources.problems(step.geometry.threads) == [], str(resources)


@pytest.mark.parametrize("step", registry.STEPS, ids=lambda s: s.name)
def test_launch_bounds_match_the_registry(compiled, step):
    """A kernel declaring __launch_bounds__ must be launched with exactly that many threads."""
    maxntid = re.search(r"\.maxntid (\d+), (\d+), (\d+)", compiled[step.id].ptx)
    if maxntid is None:
        assert step.geometry.threads <= compiler.MAX_THREADS_PER_BLOCK
        return
    declared = int(maxntid[1]) * int(maxntid[2]) * int(maxntid[3])
    assert declared == step.geometry.threads


@pytest.mark.parametrize("arch", ["sm_80", "sm_86", "sm_89"])
def test_last_fp32_step_is_spill_free_on_every_arch(arch):
    """kernels/08 says its walk over K is the spelling that is spill-free on sm_75 to
    sm_90: other spellings of the same loops spilled on sm_80 alone (the A100)."""
    step = registry.step("08")
    result = compiler.compile_for_arch(step.source(), [step.name_expression], arch, step.path.name)
    resources = result.resources[step.name_expression]
    assert resources.problems(step.geometry.threads) == [], str(resources)
