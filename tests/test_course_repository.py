"""The course's public home: one command sets its repository and release; _config.yml,
every notebook's Colab badge and chapter link, and every setup cell agree on both; and a
setup cell that cannot find or fetch the course says what to do in one sentence, with no
traceback, where the URL is still a placeholder and where the fetch fails (offline)."""

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
    """Where a notebook's badge, chapter link or setup cell names another home."""
    cells = {c.metadata["nbgrader"]["grade_id"]: c.source for c in nb.cells}
    chapter = next(a.chapter for a in ASSIGNMENTS if a.name == name)
    wanted = {
        "intro": [f"({home.colab_url(name)})", f"({home.file_url(chapter + '.md')})"],
        "setup": [f'COURSE, RELEASE = "{home.url}", "{home.release}"\n'],
    }
    return [
        f"{name}: its {cell} cell lacks {text}"
        for cell, texts in wanted.items()
        for text in texts
        if text not in cells[cell]
    ]


def test_config_badges_chapter_links_and_setup_cells_agree():
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


def run_setup_cells(homes: list[Repository], folder: Path):
    """Each home's setup cell run in a Jupyter kernel, in folder, where the course cannot
    be imported: the traceback field of each cell's error (what Jupyter shows)."""
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    hide = nbformat.v4.new_code_cell('import sys\nsys.modules["autograder"] = None')
    cells = [nbformat.v4.new_code_cell(repository.setup_cell(home, "01")) for home in homes]
    nb = nbformat.v4.new_notebook(cells=[hide, *cells])
    nbclient.NotebookClient(
        nb, timeout=120, kernel_name="python3", allow_errors=True,
        resources={"metadata": {"path": str(folder)}},
    ).execute()  # fmt: skip
    return [[o for o in c.outputs if o.output_type == "error"] for c in cells]


def test_a_setup_cell_that_cannot_find_or_fetch_the_course_says_what_to_do_in_one_sentence(
    tmp_path,
):
    placeholder = Repository(repository.PLACEHOLDER, "main")
    offline = Repository("https://127.0.0.1:9/uni/sgemm", "v2.0")  # nothing listens there
    said = {}
    for home, errors in zip(
        (placeholder, offline), run_setup_cells([placeholder, offline], tmp_path), strict=True
    ):
        assert [e.ename for e in errors] == ["SetupFailed"]
        (sentence,) = errors[0].traceback  # the sentence alone, no traceback
        assert "on Colab, " in sentence and "; on your own machine, " in sentence, sentence
        assert sentence.endswith(".") and sentence.count(". ") == 0, sentence
        said[home] = sentence
    assert said[placeholder].startswith(
        "The course's autograder is not installed here, and this notebook cannot fetch it "
        f"(its repository, {repository.PLACEHOLDER}, is a placeholder): on Colab, open the "
        "notebook from the Open in Colab link your course gives you"
    )
    assert said[offline].startswith(
        f"Could not fetch the course from {offline.url} at v2.0 (fatal: unable to access"
    )
    assert "check your internet connection and run this cell again" in said[offline]
    assert not (tmp_path / "sgemm-course").exists()  # the next run fetches again
