"""The registry is the one description of the ladder; it must agree with kernels/."""

import pickle
import re

import pytest

from autograder.ladder import registry
from autograder.ladder.registry import KERNEL_DIR, Geometry, Step
from autograder.run.kernel import KernelSpec, SpecError, global_kernels


def test_every_kernel_file_is_registered_and_every_step_has_a_file():
    files = sorted(p.name for p in KERNEL_DIR.iterdir() if p.suffix in (".cu", ".py"))
    assert files == sorted(s.path.name for s in registry.ALL_STEPS)


def test_step_00_is_a_python_step_that_no_kernel_command_takes():
    step = registry.step("00")
    assert not step.is_cuda and step.path.name == "00_cpu_triple_loop.py"
    assert step in registry.LADDER and step not in registry.STEPS + registry.KERNELS
    assert f"def {step.kernel}(" in step.source()
    with pytest.raises(SpecError, match="00_cpu_triple_loop is a python step"):
        KernelSpec.from_step(step)
    with pytest.raises(ValueError, match="language"):
        Step("99", "fortran", "Fortran", "matmul", language="fortran")


def test_the_ladder_is_numbered_from_00_without_gaps():
    assert [s.id for s in registry.ALL_STEPS] == [f"{i:02}" for i in range(len(registry.ALL_STEPS))]
    assert registry.STEPS == tuple(s for s in registry.LADDER if s.is_cuda)


@pytest.mark.parametrize("step", registry.KERNELS, ids=lambda s: s.name)
def test_file_defines_the_registered_kernel_with_the_registered_parameters(step):
    source = step.source()
    kernels = global_kernels(source)
    assert list(kernels) == [step.kernel]
    assert kernels[step.kernel] == bool(step.params)
    if step.params:
        declared = re.search(r"template\s*<([^>]*)>\s*__global__", source)[1].split(",")
        names = [p.split("=")[0].split()[-1] for p in declared]
        # The registered parameters, then only ones with a default (08's SLIDE, RAGGED
        # and SPREAD, which step 09 sets for some of its tile shapes).
        assert names[: len(step.params)] == list(step.params)
        assert all("=" in p for p in declared[len(step.params) :])


@pytest.mark.parametrize("step", registry.KERNELS, ids=lambda s: s.name)
def test_grid_covers_every_element_of_c(step):
    for M, N in [(1, 1), (1001, 777), (4095, 4097)]:
        g = step.geometry
        gx, gy = g.grid(M, N)
        rows, cols = (gy, gx) if g.rows_on == "y" else (gx, gy)
        assert rows * g.tile[0] >= M > (rows - 1) * g.tile[0]
        assert cols * g.tile[1] >= N > (cols - 1) * g.tile[1]


def test_steps_are_found_by_number_or_name():
    assert registry.step("5") is registry.step("05") is registry.step("blocktiling_2d")
    assert registry.step("05_blocktiling_2d").kernel == "sgemm_blocktiling_2d"
    with pytest.raises(KeyError, match="the steps are 00_cpu_triple_loop, 01_naive"):
        registry.step("99")


def test_with_params_changes_the_geometry_and_rejects_unknown_names():
    tuned = registry.step("05").with_params(BM=64, TM=4)
    assert tuned.geometry.tile == (64, 128) and tuned.geometry.threads == 256
    assert tuned.name_expression == "sgemm_blocktiling_2d<64, 128, 8, 4, 8>"
    with pytest.raises(KeyError, match="no parameter WM"):
        registry.step("05").with_params(WM=32)


def test_geometry_rejects_an_unknown_row_axis():
    with pytest.raises(ValueError, match="rows_on"):
        Geometry((32, 32), (32, 32), rows_on="z")


@pytest.mark.parametrize("step", registry.KERNELS, ids=lambda s: s.name)
def test_a_step_survives_pickling_as_the_batch_graders_workers_receive_it(step):
    """The batch grader spawns its workers and pickles the step for them: a lambda
    anywhere in a step (its layout, its tuning rules) would stop every grading run."""
    copy = pickle.loads(pickle.dumps(step))
    assert copy.geometry == step.geometry
    assert pickle.loads(pickle.dumps(step.geometry)) == step.geometry
    assert copy.name_expression == step.name_expression
    if step.tuning:
        assert copy.tuning.rules(step.params) == step.tuning.rules(step.params)


def test_a_kernels_fingerprint_follows_its_code_and_not_its_comments_or_layout():
    source = registry.step("08").source()
    assert registry.step("08").fingerprint == registry.fingerprint(source)
    commented = source.replace("{\n", "{  // a new remark\n", 3).replace("  ", "    ")
    assert registry.fingerprint(
        "/* a new block\n comment */\n" + commented
    ) == registry.fingerprint(source)
    changed = source + "__device__ int one() { return 1; }\n"
    assert registry.fingerprint(changed) != registry.fingerprint(source)
