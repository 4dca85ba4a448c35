"""The package's layers hold by a tool, not a promise: import-linter's contracts in
pyproject.toml (course > grade | measure > judge > run > isolate > ladder; ARCHITECTURE.md,
and no package whose modules import each other in a cycle); and every module stays
small enough to hold in mind."""

import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
LINT = shutil.which("lint-imports")
pytestmark = pytest.mark.skipif(
    LINT is None, reason="import-linter is not installed (requirements.txt)"
)


def lint(package_parent: Path) -> subprocess.CompletedProcess:
    """lint-imports with the project's contract, over the package found in package_parent."""
    return subprocess.run(
        [LINT, "--config", str(ROOT / "pyproject.toml"), "--no-cache"],
        cwd=package_parent,
        env={"PATH": str(Path(LINT).parent), "PYTHONPATH": str(package_parent)},
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_every_import_runs_down_the_layers():
    result = lint(ROOT)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]


def lint_with(tmp_path: Path, module: str, line: str) -> subprocess.CompletedProcess:
    """lint() over a copy of the package whose `module` (a path under autograder/)
    ends with one more import line."""
    shutil.copytree(ROOT / "autograder", tmp_path / "autograder")
    planted = tmp_path / "autograder" / module
    planted.write_text(planted.read_text() + f"\n{line}  # noqa: E402\n")
    return lint(tmp_path)


def test_an_upward_import_fails_the_contract_and_names_both_modules(tmp_path):
    # The run layer importing the judge's checker: the import this contract exists to stop.
    result = lint_with(tmp_path, "run/gpu.py", "from ..judge import checker")
    assert result.returncode != 0
    assert "BROKEN" in result.stdout
    assert "autograder.run.gpu" in result.stdout and "autograder.judge.checker" in result.stdout


def test_two_modules_that_import_each_other_fail_the_contract(tmp_path):
    # The CPU backend importing the backends that load it (where the fault type once
    # lived): a cycle inside the run layer, which the layers contract cannot see.
    result = lint_with(tmp_path, "run/cpu.py", "from .backends import Backend")
    assert result.returncode != 0
    assert "No cycles are allowed in autograder.run" in result.stdout, result.stdout[-3000:]


# Past this a module holds more than one idea (ARCHITECTURE.md: split it by what it does).
MOST_LINES = 800


def test_every_module_is_small_enough_to_hold_in_mind():
    modules = [*(ROOT / "autograder").rglob("*.py"), *(ROOT / "book").rglob("*.py")]
    long = {str(m.relative_to(ROOT)): n for m in modules
            if (n := len(m.read_text().splitlines())) > MOST_LINES}  # fmt: skip
    assert not long, long
