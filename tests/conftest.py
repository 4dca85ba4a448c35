import pytest

from autograder import gpu


def pytest_collection_modifyitems(config, items):
    reason = gpu.unavailable_reason()
    if reason is None:
        return
    skip = pytest.mark.skip(reason=f"needs an NVIDIA GPU: {reason}")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)
