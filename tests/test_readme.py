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


def test_readme_test_command_is_the_one_ci_runs():
    readme = (ROOT / "README.md").read_text()
    command = re.search(r"\. \.venv/bin/activate && (python -m pytest[^\n]*)\n", readme)
    assert command, "the README gives no test command after activating .venv"
    assert f"\n{command.group(1)}\n" in (ROOT / ".ci" / "run").read_text()
