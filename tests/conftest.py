import pytest

from autograder.run import gpu


def pytest_collection_modifyitems(config, items):
    reason = gpu.unavailable_reason()
    skip = pytest.mark.skip(reason=f"needs an NVIDIA GPU: {reason}")
    for item in items:
        if "gpu" in item.keywords:
            # One worker runs every GPU test, one at a time (--dist loadgroup).
            item.add_marker(pytest.mark.xdist_group("gpu"))
            if reason is not None:
                item.add_marker(skip)
