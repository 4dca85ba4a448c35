"""Build the exercise notebooks: solutions/ from kernels/ and assignments.py,
then exercises/ from solutions/ through nbgrader's own generate_assignment.

    python -m autograder notebooks           # rewrite solutions/ and exercises/
    python -m autograder notebooks --check   # fail if either differs from what this builds

Nothing here is written by hand twice: a kernel cell is the kernel file from
kernels/ with the assignment's docs anchors turned into nbgrader's solution
markers (and the other anchors dropped), and every other cell is made from the
assignment's entry in assignments.py.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from ..grade import rubric
from ..ladder.registry import KERNEL_DIR, step
from . import carried, repository
from .assignments import ASSIGNMENTS, Assignment

ROOT = KERNEL_DIR.parent
_ANCHOR = re.compile(r"^(\s*)(//|#) \[docs:([a-z0-9-]+)\]\s*$")


def mark_regions(text: str, regions: list[str], name: str) -> str:
    """text with the anchors of `regions` as solution markers and other anchors dropped."""
    lines, found = [], []
    for line in text.splitlines():
        m = _ANCHOR.match(line)
        if not m:
            lines.append(line)
        elif m.group(3).removesuffix("-end") in regions:
            marker = "END SOLUTION" if m.group(3).endswith("-end") else "BEGIN SOLUTION"
            lines.append(f"{m.group(1)}{m.group(2)} {marker}")
            found.append(m.group(3))
    for region in regions:
        if found.count(region) != 1 or found.count(f"{region}-end") != 1:
            raise ValueError(f"{name} has no [docs:{region}] ... [docs:{region}-end] region")
    return "\n".join(lines)


def _cell(nbformat, kind: str, source: str, grade_id: str, **nbgrader):
    make = nbformat.v4.new_code_cell if kind == "code" else nbformat.v4.new_markdown_cell
    cell = make(source)
    cell.id = grade_id  # stable ids: a regenerated notebook must equal the committed one
    cell.metadata["nbgrader"] = {
        "grade": False,
        "grade_id": grade_id,
        "locked": True,
        "schema_version": 3,
        "solution": False,
        "task": False,
        **nbgrader,
    }
    return cell


def _test(nbformat, grade_id: str, points: int, comment: str, code: str, hidden=False):
    body = f"### BEGIN HIDDEN TESTS\n{code}\n### END HIDDEN TESTS" if hidden else code
    return _cell(
        nbformat,
        "code",
        f"# {points} points: {comment}\n{body}",
        grade_id,
        grade=True,
        points=points,
    )


def notebook(a: Assignment, home: repository.Repository):
    import nbformat

    hints = "\n\n".join(
        f"<details><summary>Hint {i}</summary>\n\n{h}\n\n</details>"
        for i, h in enumerate(a.hints, 1)
    )
    cells = [
        _cell(nbformat, "markdown", f"# {a.step} · {a.title}\n\n{_links(a, home)}{a.idea}", "intro"),
        _setup_cell(nbformat, a),
        _cell(nbformat, "markdown", f"## Your code\n\n{a.task}", "task"),
    ]
    python = not step(a.step).is_cuda
    cells += _python_cells(nbformat, a) if python else _cuda_cells(nbformat, a)
    cells += [
        _cell(nbformat, "markdown", "## Explore", "explore_intro"),
        _explorer_cell(nbformat, a),
        _cell(nbformat, "markdown", f"## Hints\n\nOpen one at a time.\n\n{hints}", "hints"),
    ]
    cells += _python_tests(nbformat) if python else _cuda_tests(nbformat, a)
    nb = nbformat.v4.new_notebook(cells=cells)
    nb.metadata = {
        "kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"},
        "language_info": {"name": "python"},
    }
    return nb


def _links(a: Assignment, home: repository.Repository) -> str:
    """The notebook's Colab badge and its chapter's link, where the course is published:
    while its URL is the placeholder they would lead nowhere, and the chapter is named."""
    if home.placeholder:
        return f"The chapter: *{a.title}*, in the course's book.\n\n"
    badge = "https://colab.research.google.com/assets/colab-badge.svg"
    chapter = home.file_url(f"{a.chapter}.md")
    return (
        f"[![Open In Colab]({badge})]({home.colab_url(a.name)})  ·  "
        f"the chapter: [{a.title}]({chapter})\n\n"
    )


def _setup_cell(nbformat, a: Assignment):
    """The setup cell, carrying the course (carried.py). Colab shows it as a form, its
    title alone (cellView), and JupyterLab with its code folded (source_hidden): the
    archive it holds is some 4,000 lines of a learner's scrolling."""
    cell = _cell(nbformat, "code", carried.setup_cell(a.step), "setup")
    cell.metadata["cellView"] = "form"
    cell.metadata["jupyter"] = {"source_hidden": True}
    return cell


def _explorer_cell(nbformat, a: Assignment):
    """The interactive explorer. Tagged skip-execution: nbgrader and nbclient leave it out
    when they run a notebook unattended, because executing a widget cell that way
    sometimes never returns (jupyter/nbclient#312; seen here three times); a learner
    runs it as any other cell."""
    cell = _cell(nbformat, "code", f'explorers.explore("{a.name}")', "explore")
    cell.metadata["tags"] = ["skip-execution"]
    return cell


def _cuda_cells(nbformat, a: Assignment):
    s = step(a.step)
    source = mark_regions(s.path.read_text(), list(a.regions), s.path.name)
    where = "on the GPU if there is one and otherwise on the CPU, and"
    if s.target:
        where = (
            f"on the GPU. This step's kernel runs on an {s.target} GPU (an H100 or H200) "
            "alone: anywhere else the cell compiles it for one, so that compile errors show, "
            "says it did not run it, and the chapter shows what it does. On one, it"
        )
    return [
        _cell(
            nbformat,
            "code",
            f"%%writefile {s.path.name}\n{source}",
            "kernel",
            solution=True,
            locked=False,
        ),
        _cell(
            nbformat,
            "markdown",
            "## Check it\n\nRuns your kernel on shapes from 1×1×1 to 4095×4097×4093 against a "
            f"float64 reference, {where} says where it is wrong: the same report as "
            "`python -m autograder check`.",
            "check_intro",
        ),
        _cell(nbformat, "code", f'exercise.check("{s.path.name}")', "check", locked=False),
    ]


def _cuda_tests(nbformat, a: Assignment):
    s = step(a.step)
    whole, odd, fast = rubric.CUDA_TESTS
    elsewhere = (
        f" This step's kernel runs on an {s.target} GPU alone: anywhere else each cell "
        "compiles it, says why it cannot run, and scores zero, so grade this notebook on an "
        "H100 or H200."
        if s.target
        else ""
    )
    intro = _cell(
        nbformat,
        "markdown",
        "## Grading\n\nThe cells below are what nbgrader runs: correct on whole tiles "
        f"({whole.points} points), correct on shapes that are not multiples of the tile "
        f"({odd.points} points, hidden tests), and fast enough on a GPU ({fast.points} points: "
        "at least the fraction of the reference kernel's GFLOP/s set in `grading.json`, timed "
        "on the same GPU, for a kernel that is right on whole tiles; zero without a GPU)."
        + elsewhere,
        "grading",
    )
    return [intro] + [
        _test(nbformat, t.id, t.points, t.what, t.call(s.path.name), hidden=t.hidden)
        for t in rubric.CUDA_TESTS
    ]


def _python_cells(nbformat, a: Assignment):
    path = step(a.step).path
    text = path.read_text()
    source = mark_regions(text, re.findall(r"# \[docs:([a-z0-9]+)\]\n", text), path.name)
    return [
        _cell(nbformat, "code", source, "kernel", solution=True, locked=False),
        _cell(
            nbformat,
            "markdown",
            "## Check it\n\nCompares your functions with NumPy and times them on 96×96×96.",
            "check_intro",
        ),
        _cell(
            nbformat,
            "code",
            "exercise.check_python(matmul, matmul_ikj, gflops)",
            "check",
            locked=False,
        ),
    ]


def _python_tests(nbformat):
    return [
        _cell(
            nbformat,
            "markdown",
            "## Grading\n\n`matmul` right on small shapes (3 points) and on odd ones (3 points, "
            "hidden), `matmul_ikj` right (2 points), `gflops` right (2 points).",
            "grading",
        ),
        _test(
            nbformat,
            "test_matmul_small",
            3,
            "matmul right on small shapes",
            'exercise.assert_matmul(matmul, "small")',
        ),
        _test(
            nbformat,
            "test_matmul_odd",
            3,
            "matmul right on odd shapes",
            'exercise.assert_matmul(matmul, "odd")',
            hidden=True,
        ),
        _test(
            nbformat,
            "test_matmul_ikj",
            2,
            "matmul_ikj right",
            'exercise.assert_matmul(matmul_ikj, "odd")',
        ),
        _test(nbformat, "test_gflops", 2, "gflops right", "exercise.assert_gflops(gflops)"),
    ]


def build(root: Path = ROOT) -> None:
    """Write solutions/ and, through nbgrader, exercises/ under root."""
    import nbformat

    home = repository.read()
    for a in ASSIGNMENTS:
        folder = root / "solutions" / a.name
        folder.mkdir(parents=True, exist_ok=True)
        nbformat.write(notebook(a, home), folder / f"{a.name}.ipynb")
    for a in ASSIGNMENTS:
        result = subprocess.run(
            [
                sys.executable,
                "-m",
                "nbgrader",
                "generate_assignment",
                a.name,
                "--force",
                "--CourseDirectory.root=" + str(root),
                "--log-level=WARN",
            ],
            cwd=ROOT,
            capture_output=True,
            text=True,
        )
        if result.returncode:
            raise RuntimeError(f"nbgrader generate_assignment {a.name} failed:\n{result.stderr}")


def differences(root: Path = ROOT) -> list[str]:
    """Files of solutions/ and exercises/ that differ from a fresh build."""
    with tempfile.TemporaryDirectory() as tmp:
        fresh = Path(tmp)
        shutil.copy(ROOT / "nbgrader_config.py", fresh)
        build(fresh)
        found = []
        for top in ("solutions", "exercises"):
            for path in sorted((fresh / top).rglob("*.ipynb")):
                committed = root / path.relative_to(fresh)
                if not committed.exists() or _comparable(path) != _comparable(committed):
                    found.append(str(committed.relative_to(root)))
            for path in sorted((root / top).rglob("*.ipynb")):
                if not (fresh / path.relative_to(root)).exists():
                    found.append(str(path.relative_to(root)) + " (not built any more)")
    return found


def _comparable(path: Path) -> str:
    """A notebook's text with its setup cell's archive as the digest of the files it
    holds (carried.comparable): zlib's bytes may differ from one machine to another."""
    import nbformat

    nb = nbformat.read(path, as_version=4)
    for cell in nb.cells:
        if cell.metadata.get("nbgrader", {}).get("grade_id") == "setup":
            cell.source = carried.comparable(cell.source)
    return nbformat.writes(nb)


def execute_and_score(path: Path, timeout_s: int = 900, env: dict | None = None):
    """Run a notebook top to bottom (nbclient, errors allowed; its kernel in env, else in
    this process's environment) and grade it as nbgrader would: a grade cell earns its
    points when it neither raises nor writes to stderr. Returns the executed notebook and
    {grade_id: (earned, points, error and stderr text, or "")}."""
    import nbformat
    from nbclient import NotebookClient

    nb = nbformat.read(path, as_version=4)
    NotebookClient(
        nb,
        timeout=timeout_s,
        kernel_name="python3",
        allow_errors=True,
        resources={"metadata": {"path": str(Path(path).parent)}},
    ).execute(**({"env": env} if env is not None else {}))
    scores = {}
    for cell in nb.cells:
        meta = cell.metadata.get("nbgrader", {})
        if cell.cell_type == "code" and meta.get("grade"):
            errors = [
                f"{o.ename}: {o.evalue}" if o.output_type == "error" else o.text.strip()
                for o in cell.outputs
                if o.output_type == "error" or o.get("name") == "stderr"
            ]
            points = meta["points"]
            scores[meta["grade_id"]] = (0 if errors else points, points, "; ".join(errors))
    return nb, scores


def cell_text(nb, grade_id: str) -> str:
    """Everything a code cell printed or raised, as text."""
    cell = next(c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id") == grade_id)
    parts = []
    for o in cell.get("outputs", []):
        if o.output_type == "stream":
            parts.append(o.text)
        elif o.output_type == "error":
            parts.append(f"{o.ename}: {o.evalue}")
        else:  # a result shown: its plain-text form
            parts.append(o.get("data", {}).get("text/plain", ""))
    return "".join(parts)
