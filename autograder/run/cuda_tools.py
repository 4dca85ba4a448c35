"""The CUDA toolkit's command-line tools (compute-sanitizer, ncu), and how to start this
package's own code under them.

A tool runs a fresh Python process (`python -m autograder.<module> DIR`), which
must import this very package, whatever the caller's working directory.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

PACKAGE_ROOT = Path(__file__).resolve().parents[2]


def find(tool: str) -> str | None:
    """The executable `tool`: on PATH, or in the CUDA toolkit (CUDA_HOME, CUDA_PATH,
    /usr/local/cuda, where Colab has it)."""
    found = shutil.which(tool)
    if found:
        return found
    for home in (os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"), "/usr/local/cuda"):
        candidate = Path(home or "/nonexistent") / "bin" / tool
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return str(candidate)
    return None


def environment() -> dict[str, str]:
    """This process's environment, with this package first on PYTHONPATH."""
    paths = [str(PACKAGE_ROOT), *filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep))]
    return {**os.environ, "PYTHONPATH": os.pathsep.join(paths)}
