"""The README shows measured numbers only as bench renders them from the committed data."""

import re
from pathlib import Path

from autograder.measure import bench

ROOT = Path(__file__).resolve().parent.parent
BLOCK = re.compile(
    r"<!-- bench:begin (\S+) -->\n```text\n(.*?)\n```\n<!-- bench:end -->", re.DOTALL
)


def test_readme_benchmark_tables_match_the_committed_csv():
    readme = (ROOT / "README.md").read_text()
    blocks = BLOCK.findall(readme)
    assert blocks, "the README has no <!-- bench:begin CSV --> block"
    for csv_path, shown in blocks:
        expected = bench.table(bench.read_csv(ROOT / csv_path))
        assert shown == expected, (
            f"the README's table for {csv_path} differs from the data; paste the output of\n"
            'python -c "from autograder.measure import bench; '
            f"print(bench.table(bench.read_csv('{csv_path}')))\""
        )


def test_readme_test_command_is_the_one_ci_runs():
    readme = (ROOT / "README.md").read_text()
    command = re.search(r"\. \.venv/bin/activate && (python -m pytest[^\n]*)\n", readme)
    assert command, "the README gives no test command after activating .venv"
    assert f"\n{command.group(1)}\n" in (ROOT / ".ci" / "run").read_text()
