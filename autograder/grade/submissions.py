"""Find each student's submission for a step in a directory, and read its kernel.

Three layouts are accepted, and may be mixed:

    nbgrader     DIR/submitted/<student>/<assignment>/*.ipynb   (or DIR = submitted/)
    notebooks    DIR/<student>.ipynb, or DIR/<student>/*.ipynb
    .cu files    DIR/<student>.cu, or DIR/<student>/*.cu

A notebook's kernel is the cell that writes the step's .cu file (`%%writefile
03_smem_tiling.cu`), read as text: none of the learner's Python runs here.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from pathlib import Path

from ..ladder.registry import Step
from ..run.kernel import global_kernels

SUFFIXES = (".cu", ".ipynb")
# A class's grades are kept beside its folder, in <folder>.grades (autograder.grade.gradebook).
GRADEBOOK_SUFFIX = ".grades"


class Unreadable(ValueError):
    """The submission holds no kernel that can be graded; str() says why."""


@dataclass(frozen=True)
class Submission:
    student: str
    path: Path | None  # None: the student handed nothing in for this step
    problem: str = ""  # why no single file could be chosen

    def source(self, step: Step) -> str:
        """The kernel's CUDA source. Raises Unreadable."""
        if self.problem or self.path is None:
            raise Unreadable(self.problem or "no submission")
        if self.path.suffix == ".cu":
            return self.path.read_text(errors="replace")
        return notebook_kernel(self.path, step.path.name)

    def kernel_file(self, step: Step) -> str:
        """The name the learner knows the kernel by, which messages use: their .cu
        file's, or in a notebook the file its kernel cell writes."""
        return self.path.name if self.path and self.path.suffix == ".cu" else step.path.name

    def in_own_lines(self, text: str, step: Step) -> str:
        """text as the learner reads it: from a notebook, each line of the kernel it
        names is also given as the line of the kernel cell (in_cell_lines)."""
        if self.path and self.path.suffix == ".ipynb":
            return in_cell_lines(text, step.path.name)
        return text

    def kernels(self) -> set[str]:
        """The __global__ kernels it defines, whatever step it was written for (in a
        notebook, in any `%%writefile` cell); none when it cannot be read."""
        if self.problem or self.path is None:
            return set()
        try:
            if self.path.suffix == ".cu":
                sources = [self.path.read_text(errors="replace")]
            else:
                sources = [source for _, source in writefile_cells(self.path)]
        except (Unreadable, OSError):
            return set()
        return {name for source in sources for name in global_kernels(source)}

    def fingerprint(self, step: Step) -> str:
        """What identifies this submission's kernel (the gradebook adds the grader's
        own fingerprint to it): a changed kernel is graded again."""
        try:
            text = self.source(step)
        except (Unreadable, OSError) as e:
            text = f"unreadable: {e}"
        return hashlib.sha256(text.encode()).hexdigest()[:16]


def students_folder(root: Path) -> Path:
    """The folder with one entry per student: root, or root/submitted in an nbgrader course."""
    root = Path(root)
    if not root.is_dir():
        raise ValueError(f"{root} is not a directory")
    return root / "submitted" if (root / "submitted").is_dir() else root


def find(root: Path, step: Step) -> list[Submission]:
    """Every student's submission for `step` under root, sorted by student."""
    found = {}
    for entry in sorted(students_folder(root).iterdir()):
        # A gradebook is never a student, even where an instructor has put one.
        if entry.name.startswith(".") or entry.name.endswith(GRADEBOOK_SUFFIX):
            continue
        if entry.is_file() and entry.suffix in SUFFIXES:
            found.setdefault(entry.stem, Submission(entry.stem, entry))
        elif entry.is_dir():
            found[entry.name] = _in_folder(entry, step)
    return [found[s] for s in sorted(found)]


def at(path: Path, step: Step) -> Submission:
    """One student's submission: a .cu file, a notebook, or a folder holding one."""
    path = Path(path)
    if path.is_dir():
        return _in_folder(path, step)
    if not path.exists():
        raise FileNotFoundError(f"no such file or folder: {path}")
    return Submission(path.stem, path)


def _in_folder(folder: Path, step: Step) -> Submission:
    student = folder.name
    if (folder / step.name).is_dir():  # nbgrader: the assignment is named after the step
        folder = folder / step.name
    files = sorted(p for p in folder.iterdir() if p.is_file() and p.suffix in SUFFIXES)
    # The file named after the step wins, a .cu before a notebook; else the only file.
    named = sorted((p for p in files if p.stem == step.name), key=lambda p: p.suffix)
    chosen = named[:1] or files
    if not chosen:
        return Submission(student, None)
    if len(chosen) > 1:
        names = ", ".join(p.name for p in chosen)
        return Submission(
            student, folder, f"{len(chosen)} candidate files ({names}): which one is the kernel?"
        )
    return Submission(student, chosen[0])


def writefile_cells(path: Path) -> list[tuple[str, str]]:
    """(file name, source) of each code cell of the notebook that starts with
    `%%writefile`, in order. Raises Unreadable."""
    import nbformat

    try:
        nb = nbformat.read(path, as_version=4)
    except Exception as e:  # noqa: BLE001 - nbformat raises several kinds for a damaged file
        raise Unreadable(f"{path.name} is not a readable notebook ({e})") from None
    cells = []
    for c in nb.cells:
        magic, _, source = c.source.partition("\n")
        if c.cell_type == "code" and magic.startswith("%%writefile "):
            # The file has the cell's lines after the magic line, so compiler messages
            # number lines as the learner's own check cell did.
            cells.append((magic.removeprefix("%%writefile ").strip(), source))
    return cells


def notebook_kernel(path: Path, filename: str) -> str:
    """The source that the notebook's last `%%writefile <filename>` cell writes."""
    sources = [source for name, source in writefile_cells(path) if name == filename]
    if not sources:
        raise Unreadable(f"{path.name} has no cell that starts with `%%writefile {filename}`")
    return sources[-1]


def in_cell_lines(text: str, filename: str) -> str:
    """Add, to each line of `filename` a message names, the line of the notebook cell
    the learner sees: the cell starts with `%%writefile filename`, so line n of the file
    is line n + 1 of the cell ("03_smem_tiling.cu:27 (cell line 28)")."""
    mention = re.compile(rf"{re.escape(filename)}(?::(\d+)|\((\d+)\))")
    return mention.sub(
        lambda m: f"{m.group(0)} (cell line {int(m.group(1) or m.group(2)) + 1})", text
    )
