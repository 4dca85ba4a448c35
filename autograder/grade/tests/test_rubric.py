"""One test per rubric entry, each worth its points (see __init__.py)."""

import pytest

from autograder.grade import rubric


@pytest.mark.parametrize("test", rubric.CUDA_TESTS, ids=lambda t: t.id)
def test_rubric(graded, test, record_testsuite_property):
    result = next(t for t in graded.tests if t.id == test.id)
    record_testsuite_property(f"{test.id}.points", test.points)
    record_testsuite_property(f"{test.id}.earned", result.earned)
    if result.earned != test.points:
        pytest.fail(result.message, pytrace=False)
