import contextlib
import fcntl

import pytest

from autograder.run import gpu

# Tests whose verdicts depend on how fast a kernel runs on the CPU backend: a shape
# whose estimated time is over its budget is not run, and its suite fails; a case
# over its time limit is called stuck. On CI's two cores, step 03's reference takes
# about half its 10 s limit at 1001x777x513, so with another test beside it a right
# kernel can go over (seen in parallel runs: "1001x777x513 not run: ... about 9 s,
# more than the 8 s allowed"). Such a module's tests, and the module fixtures that
# grade on the CPU, have the machine to themselves (the_machine, below), and its
# tests stay on one xdist worker (--dist loadgroup), so those fixtures run once.
ALONE = {
    "test_book",
    "test_busy_machine",
    "test_cold_start",
    "test_cpu_backend",
    "test_grade",
    "test_grade_every_step",
    "test_localize",
    "test_mutants",
    "test_nbgrader_pipeline",
    "test_notebooks_execute",
}


@contextlib.contextmanager
def the_machine(tmp_path_factory, alone: bool):
    """The whole machine (alone) or a share of it, held through a lock on a file that
    every xdist worker of this run sees. Held for one test at a time, never between
    tests, so that an idle worker holds nothing another waits for."""
    lock = tmp_path_factory.getbasetemp().parent / "machine.lock"
    with lock.open("a") as f:
        fcntl.flock(f, fcntl.LOCK_EX if alone else fcntl.LOCK_SH)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


@pytest.fixture(autouse=True)
def machine_share(request, tmp_path_factory):
    with the_machine(tmp_path_factory, alone=request.module.__name__ in ALONE):
        yield


# The developer's loop, `pytest -m quick -n auto`: the checker's, the judge's and the
# grader's logic (and the import contract) in under two minutes on two cores, without
# the book, the notebooks, whole classes graded on the CPU, or a test marked slow (one
# that took 3 s or more there: a kernel hung on purpose, every tile shape compiled;
# the whole suite runs them).
QUICK = {
    "test_advice",
    "test_architecture",
    "test_bench",
    "test_by_shape",
    "test_causes",
    "test_checker",
    "test_cli",
    "test_compiler",
    "test_cpu_feedback",
    "test_device_clock",
    "test_device_only",
    "test_diagnose",
    "test_exercise",
    "test_gradebook",
    "test_isolation",
    "test_judge",
    "test_reduction",
    "test_registry",
    "test_report",
    "test_timing",
    "test_typed_csv",
}


@pytest.fixture
def step13_gpu():
    """Skips a test of step 13's kernel where there is no GPU, or one it does not run on."""
    from autograder.ladder import registry

    step = registry.step("13")
    reason = gpu.unavailable_reason()
    if reason is None and not step.runs_on_gpu(gpu.device_info().arch):
        reason = f"{step.name} needs {step.needs}; this GPU is {gpu.device_info().arch}"
    if reason:
        pytest.skip(reason)


def pytest_collection_modifyitems(config, items):
    reason = gpu.unavailable_reason()
    skip = pytest.mark.skip(reason=f"needs an NVIDIA GPU: {reason}")
    for item in items:
        if item.module.__name__ in QUICK and "slow" not in item.keywords:
            item.add_marker(pytest.mark.quick)
        if "gpu" in item.keywords:
            # One worker runs every GPU test, one at a time, so that no timing
            # shares its GPU with another test.
            item.add_marker(pytest.mark.xdist_group("gpu"))
            if reason is not None:
                item.add_marker(skip)
        elif item.module.__name__ in ALONE:
            item.add_marker(pytest.mark.xdist_group(item.module.__name__))
