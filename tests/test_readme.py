"""The README shows measured numbers only as the project renders them from the committed
data: bench's timings, and the mutants' table of how well the feedback finds a mistake."""

import re
from pathlib import Path

import pytest

from autograder.measure import bench, mutants

ROOT = Path(__file__).resolve().parent.parent
# Each kind of block, and what its data file renders to.
RENDER = {
    "bench": lambda path: "```text\n" + bench.table(bench.read_csv(path)) + "\n```\n",
    "mutants": lambda path: mutants.table(mutants.read(path)) + "\n",
}


@pytest.mark.parametrize("kind", RENDER)
def test_readme_tables_are_what_the_committed_data_renders(kind):
    readme = (ROOT / "README.md").read_text()
    block = re.compile(rf"<!-- {kind}:begin (\S+) -->\n(.*?)<!-- {kind}:end -->", re.DOTALL)
    blocks = block.findall(readme)
    assert blocks, f"the README has no <!-- {kind}:begin FILE --> block"
    for path, shown in blocks:
        expected = RENDER[kind](ROOT / path)
        assert shown == expected, f"the README's block for {path} should read:\n{expected}"


def test_readme_commands_are_the_ones_ci_runs():
    """CI sets up what the README's first command installs, adds what its test command
    installs, and runs its pytest command."""
    readme = (ROOT / "README.md").read_text()
    ci = (ROOT / ".ci" / "run").read_text()
    first = re.search(r"\. \.venv/bin/activate && pip install -r (\S+) && python -m autograder", readme)
    tests = re.search(
        r"\. \.venv/bin/activate && pip install -r (\S+) && (python -m pytest[^\n]*)\n", readme
    )
    assert first and tests, "the README gives no setup command, or no test command after it"
    assert f"\nvenv .venv {first.group(1)}\n" in ci
    assert f"\npython -m pip install --quiet -r {tests.group(1)}\n" in ci
    assert f"\n{tests.group(2)}\n" in ci
