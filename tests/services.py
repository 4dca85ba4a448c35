"""For tests that start real services (a Slurm cluster, a JupyterLab server and a
browser): a free port, a wait with a deadline, and a skip that CI turns into a failure."""

import os
import socket
import time

import pytest


def unless_possible(why: str, required_by: str):
    """Skip the module's tests with `why` when it is not empty, unless the environment
    variable `required_by` is set (as CI sets it): then fail, since there a skip would
    hide a test that must run."""
    if why and os.environ.get(required_by):
        pytest.fail(f"{required_by} is set, but these tests cannot run: {why}", pytrace=False)
    return pytest.mark.skipif(bool(why), reason=why)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for(condition, what: str, seconds: float = 120):
    deadline = time.monotonic() + seconds
    while not (result := condition()):
        if time.monotonic() > deadline:
            raise TimeoutError(f"{what}: not after {seconds:.0f} s")
        time.sleep(0.2)
    return result
