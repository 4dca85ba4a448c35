"""The course's public home: one command sets its repository and release; _config.yml and
every notebook's Colab badge and chapter link agree on both, and while the URL is still
the placeholder no notebook links to it (a link would lead nowhere)."""

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from autograder.course import notebooks, repository
from autograder.course.assignments import ASSIGNMENTS
from autograder.course.repository import Repository

ROOT = Path(__file__).resolve().parent.parent


def disagreements(nb, name: str, home: Repository) -> list[str]:
    """Where a notebook's badge or chapter link names another home, or links to the
    placeholder."""
    intro = next(c.source for c in nb.cells if c.metadata["nbgrader"]["grade_id"] == "intro")
    chapter = next(a.chapter for a in ASSIGNMENTS if a.name == name)
    if home.placeholder:
        wanted, unwanted = [], [repository.PLACEHOLDER.removeprefix("https://github.com/")]
    else:
        wanted, unwanted = [f"({home.colab_url(name)})", f"({home.file_url(chapter + '.md')})"], []
    return [f"{name}: its intro lacks {text}" for text in wanted if text not in intro] + [
        f"{name}: its intro links to {text}" for text in unwanted if text in intro
    ]


def test_config_badges_and_chapter_links_agree():
    import nbformat

    home = repository.read()
    found = []
    for top in ("solutions", "exercises"):
        for a in ASSIGNMENTS:
            nb = nbformat.read(ROOT / top / a.name / f"{a.name}.ipynb", as_version=4)
            found += disagreements(nb, a.name, home)
    assert found == [], "rebuild with: python -m autograder notebooks"


def test_one_change_of_repository_and_release_reaches_every_notebook(tmp_path):
    config = tmp_path / "_config.yml"
    shutil.copy(repository.CONFIG, config)
    home = repository.write("https://github.com/uni/sgemm.git/", "v2.0", config)
    assert home == Repository("https://github.com/uni/sgemm", "v2.0") and not home.placeholder
    # Only the two values changed: the comments, the branch and the rest stay.
    lines = zip(repository.CONFIG.read_text().splitlines(), config.read_text().splitlines())
    assert [new for old, new in lines if old != new] == [
        "  url: https://github.com/uni/sgemm",
        "  release: v2.0",
    ]
    assert repository.write(None, "v2.1", config) == Repository(home.url, "v2.1")
    for a in ASSIGNMENTS:
        assert disagreements(notebooks.notebook(a, home), a.name, home) == []
    assert home.colab_url("05_blocktiling_2d") == (
        "https://colab.research.google.com/github/uni/sgemm/blob/v2.0/exercises/"
        "05_blocktiling_2d/05_blocktiling_2d.ipynb"
    )


@pytest.mark.parametrize(
    "args, message",
    [
        (["--repository", "https://gitlab.com/uni/sgemm"], "takes a GitHub repository's URL"),
        (["--release", "v1 final"], "takes a git tag or commit"),
        (["--release", "v1", "--check"], "--check changes nothing"),
    ],
)
def test_the_command_refuses_what_colab_or_git_could_not_open_and_changes_nothing(args, message):
    before = repository.CONFIG.read_bytes()
    result = subprocess.run(
        [sys.executable, "-m", "autograder", "notebooks", *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
    )
    assert result.returncode == 2 and message in result.stderr, result.stdout + result.stderr
    assert repository.CONFIG.read_bytes() == before
