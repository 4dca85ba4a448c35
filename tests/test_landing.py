"""The landing page starts a learner: its first sentences say what they build and link
where to start; its chart names every step and draws 10 to 13 on their own scale; its
list of exercises, made from the registry, has every notebook and no link that leads
nowhere while the course's repository is a placeholder."""

import re
import sys
from pathlib import Path

import pytest

from autograder.course import repository
from autograder.course.assignments import ASSIGNMENTS
from autograder.course.pictures import smallest_text
from autograder.ladder import registry

ROOT = Path(__file__).resolve().parent.parent
BOOK = ROOT / "book"
PUBLISHED = repository.Repository("https://github.com/someone/sgemm", "v1.0")
PLACEHOLDER = repository.Repository(repository.PLACEHOLDER, "main")


@pytest.fixture(scope="module")
def figures():
    pytest.importorskip("IPython", reason="IPython is not installed (it comes with jupyter-book)")
    sys.path.insert(0, str(BOOK))
    import figures

    return figures


def test_the_first_sentences_say_where_to_start_before_the_chart():
    landing = (BOOK / "index.md").read_text()
    first = " ".join(landing.split("# Fast SGEMM in CUDA\n", 1)[1].split("```", 1)[0].split())
    assert "{doc}`step 00, the CPU triple loop <00_cpu_triple_loop>`" in first
    assert "{ref}`list of exercises <exercises>`" in first
    assert len(re.findall(r"[.!?](\s|$)", first)) <= 3, f"more than three sentences: {first}"
    assert landing.index("(exercises)=") < landing.index("figures.exercise_list()")


def test_the_exercise_list_has_every_notebook_with_its_chapter_in_the_ladders_order(figures):
    text = figures.exercise_list(PLACEHOLDER).data
    names = re.findall(r"\{download\}`[^<]*<\.\./exercises/([^/]+)/\1\.ipynb>`", text)
    on_disk = sorted(p.parent.name for p in (ROOT / "exercises").glob("*/*.ipynb"))
    assert names == sorted(names) == on_disk == sorted(a.name for a in ASSIGNMENTS)
    for a in ASSIGNMENTS:
        assert f"{{doc}}`{registry.step(a.step).title} <{a.name}>`" in text, a.name


def test_no_exercise_links_to_colab_while_the_repository_is_a_placeholder(figures):
    shown = [figures.exercise_list(PLACEHOLDER).data]
    shown += [figures.exercise(a.step, PLACEHOLDER).data for a in ASSIGNMENTS]
    for text in shown:
        assert "colab.research.google.com/github" not in text, text
        assert repository.PLACEHOLDER not in text, text
    assert "once the course is published" in shown[0]


def test_every_exercise_has_its_colab_badge_once_the_course_is_published(figures):
    text = figures.exercise_list(PUBLISHED).data
    for a in ASSIGNMENTS:
        assert f"]({PUBLISHED.colab_url(a.name)})" in text, a.name
        assert PUBLISHED.colab_url(a.name) in figures.exercise(a.step, PUBLISHED).data
    assert "once the course is published" not in text


def test_the_ladder_chart_names_every_step_and_draws_10_to_13_on_their_own_scale(figures):
    fig = figures.ladder_chart()
    ladder, beyond = fig.axes[:2]

    def names(ax):
        return {t.get_text() for t in ax.texts}

    measured = [s for s in registry.STEPS if s.name not in figures.NOT_YET_MEASURED]
    assert {f"{s.id} {s.title}" for s in measured} <= names(ladder)
    assert {f"{s.id} {s.title}" for s in registry.BEYOND} <= names(beyond)
    assert not {f"{s.id} {s.title}" for s in registry.BEYOND} & names(ladder)
    beyond_names = {s.name for s in registry.BEYOND}
    timed = [r for r in figures.tensor_core_sweep() if r.M == r.N == r.K == 4096]
    fastest = max(r.gflops for r in timed if r.kernel in beyond_names) / 1e3
    assert ladder.get_xlim()[1] < fastest <= beyond.get_xlim()[1]
    # each panel names the GPU and the day of its own run
    run = timed[0]
    assert f"\n{run.gpu.replace('NVIDIA ', '')}, {run.date}" in beyond.get_title(loc="left")
    assert smallest_text(fig) * fig.dpi / 72 >= 10, "text under 10 px at the chart's own size"
