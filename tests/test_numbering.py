"""One number per step, everywhere: a step's kernel file, chapter, exercise and registry
entry share its number and name (NN_slug), and nothing numbered exists that no step owns."""

import re
from pathlib import Path

import pytest

from autograder.course.assignments import ASSIGNMENTS
from autograder.ladder import registry

ROOT = Path(__file__).resolve().parent.parent
NUMBERED = re.compile(r"^(\d\d)_")
# The steps with an exercise: the ladder, and beyond it the two built on wgmma.
GRADED = [*registry.LADDER, registry.step("12"), registry.step("13")]
TOC_FILES = re.findall(r"^\s*- file: (\S+)", (ROOT / "_toc.yml").read_text(), re.MULTILINE)


def numbered(folder: str, pattern: str = "*") -> dict[str, Path]:
    """Files or folders under ROOT/folder whose names start with NN_, by their stem."""
    return {p.stem: p for p in (ROOT / folder).glob(pattern) if NUMBERED.match(p.name)}


@pytest.mark.parametrize("step", registry.ALL_STEPS, ids=lambda s: s.name)
def test_a_step_has_its_kernel_file_and_chapter_under_its_own_number_and_name(step):
    assert step.name == f"{step.id}_{step.slug}"
    assert step.path == ROOT / "kernels" / f"{step.name}{step.path.suffix}", step.path
    assert step.path.exists(), f"{step.name}: no kernel file {step.path.name}"
    chapter = ROOT / "book" / f"{step.name}.md"
    assert chapter.exists(), f"{step.name}: no chapter book/{step.name}.md"
    assert f"book/{step.name}" in TOC_FILES, f"_toc.yml does not list book/{step.name}"
    heading = next(line for line in chapter.read_text().splitlines() if line.startswith("# "))
    assert heading.startswith(f"# Step {step.id}: "), f"book/{step.name}.md: {heading!r}"


@pytest.mark.parametrize("step", GRADED, ids=lambda s: s.name)
def test_a_graded_step_has_its_exercise_and_solution_under_its_own_number_and_name(step):
    (a,) = [a for a in ASSIGNMENTS if a.step == step.id]
    assert a.name == step.name and a.chapter == f"book/{step.name}"
    for top in ("exercises", "solutions"):
        notebook = ROOT / top / step.name / f"{step.name}.ipynb"
        assert notebook.exists(), f"{step.name}: no {notebook.relative_to(ROOT)}"


def test_the_assignments_are_the_graded_steps_in_order():
    assert [a.name for a in ASSIGNMENTS] == [s.name for s in GRADED]


def test_nothing_numbered_belongs_to_no_step():
    names = {s.name for s in registry.ALL_STEPS}
    graded = {s.name for s in GRADED}
    found = {
        "kernels": set(numbered("kernels")),
        "book": set(numbered("book", "*.md")),
        "exercises": set(numbered("exercises")),
        "solutions": set(numbered("solutions")),
    }
    assert found["kernels"] == names, found["kernels"] ^ names
    assert found["book"] == names, found["book"] ^ names
    assert found["exercises"] == graded, found["exercises"] ^ graded
    assert found["solutions"] == graded, found["solutions"] ^ graded


def test_a_chapter_that_teaches_no_step_has_no_number():
    names = {s.name for s in registry.ALL_STEPS}
    for file in TOC_FILES:
        stem = Path(file).name
        if NUMBERED.match(stem):
            assert stem in names, f"{file} is numbered but teaches no step"
        else:
            heading = (ROOT / f"{file}.md").read_text()
            assert not re.search(r"^# (Step )?\d+[.:]", heading, re.MULTILINE), file
