"""The course a notebook carries: every exercise notebook holds, in its setup cell, the
files of the course it was built from (the autograder, the kernels, the grading
thresholds and step 09's dispatch tables) as one compressed archive, so that the
notebook alone is all a learner needs: downloaded from the book, handed out through
a course's LMS, uploaded to Colab or opened from Drive, it runs with no repository
and no network beyond the package index.

Why carried rather than fetched or published: a git fetch needs a public repository
and a release (the course has neither until an instructor publishes one) and fails
offline; a package on PyPI needs publishing each release and the network. The
archive is about 300 KB of text in the notebook (gzip, not xz: every Python has
zlib, a Python built without liblzma has no lzma), checked against its SHA-256
before anything is unpacked.

Where the course is installed (a clone with `pip install -e .`, an nbgrader
machine), the setup cell imports that one and unpacks nothing. Elsewhere it unpacks
the archive once, beside the notebook (`sgemm-course-<digest>/`, named by its
content, so two versions never mix and a second run finds it there), and installs
with pip only the packages the course needs that are missing (Colab has NumPy,
Matplotlib and CuPy; it lacks the CPU backend's parser and confinement).
"""

from __future__ import annotations

import base64
import gzip
import hashlib
import io
import re
import tarfile
from pathlib import Path

from ..ladder.registry import KERNEL_DIR

ROOT = KERNEL_DIR.parent
# What a notebook's course is made of, relative to the repository: the package (with
# the CPU backend's runtime header and the Slurm scripts it ships), the kernels that
# the checks compare with and the explorers draw, grading.json's thresholds, and step
# 09's measured dispatch tables.
FILES = (
    "autograder/**/*.py",
    "autograder/run/cpu_runtime.h",
    "autograder/grade/slurm/*",
    "kernels/*",
    "grading.json",
    "book/data/dispatch_*.json",
)
# The packages the notebook's course imports, as the learner's environment pins
# them (requirements-learner.txt); those only Linux has are marked so by pyproject.
NEEDS = ("numpy", "matplotlib", "tqdm", "tree-sitter", "tree-sitter-cuda", "ipywidgets")
LINUX_NEEDS = ("pyseccomp", "landlock")
REQUIREMENTS = ROOT / "requirements-learner.txt"
LINE = 4000  # characters of the archive a line of the cell


def files(root: Path = ROOT) -> list[Path]:
    """The course's files under root, sorted, without Python's caches."""
    found = {p for pattern in FILES for p in root.glob(pattern) if p.is_file()}
    return sorted(p for p in found if "__pycache__" not in p.parts)


def tar(root: Path = ROOT) -> bytes:
    """The course's files as an uncompressed tar, the same bytes for the same files:
    no dates, owners or modes of the machine that built it."""
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w", format=tarfile.PAX_FORMAT) as archive:
        for path in files(root):
            data = path.read_bytes()
            info = tarfile.TarInfo(path.relative_to(root).as_posix())
            info.size, info.mode, info.mtime = len(data), 0o644, 0
            archive.addfile(info, io.BytesIO(data))
    return out.getvalue()


def archive(root: Path = ROOT) -> bytes:
    """tar(root), gzip-compressed with no name or date in its header."""
    return gzip.compress(tar(root), compresslevel=9, mtime=0)


def pins(requirements: Path = REQUIREMENTS) -> dict[str, str]:
    """{distribution: version} of the needs, from the learner's exact pins."""
    pinned = dict(re.findall(r"^([A-Za-z0-9_.-]+)==(\S+)", requirements.read_text(), re.M))
    missing = [name for name in NEEDS + LINUX_NEEDS if name not in pinned]
    if missing:
        raise ValueError(f"{requirements} pins no version of {', '.join(missing)}")
    return {name: pinned[name] for name in NEEDS + LINUX_NEEDS}


# The cell. Jupyter shows an exception that has _render_traceback_ as that method's
# lines, so whatever stops the cell ends in one sentence that says what to do, never in
# a traceback. Its first line is a Colab form's title: Colab shows the title and hides
# the code (cellView: form), as JupyterLab does (source_hidden).
_HEAD = """\
#@title Setup: run this first (it installs the course's checker where it is missing)
# It works on Colab (with or without a GPU), on your own machine, and when nbgrader
# grades the notebook. Where the course's autograder is not installed, this cell
# unpacks the copy it carries (COURSE, below: the course this notebook was built
# from) into a folder beside the notebook, once, and installs what it needs that is
# missing; where it is installed, it uses that one.
import base64, gzip, hashlib, importlib, importlib.metadata, io, os, platform
import shutil, subprocess, sys, tarfile


class SetupFailed(Exception):
    def _render_traceback_(self):  # Jupyter shows the sentence alone, without a traceback
        return [str(self)]


def unpack_course(course: str, sha256: str, needs: dict) -> None:
    try:
        data = base64.b85decode(course)
    except ValueError:  # not base85 any more
        data = b""
    if hashlib.sha256(data).hexdigest() != sha256:
        raise SetupFailed(
            "This notebook's copy of the course is damaged (its checksum differs): "
            "download the notebook again, or on Colab open it again from its link."
        )
    home = os.path.abspath(f"sgemm-course-{sha256[:12]}")
    if not os.path.isdir(home):  # named by its content: a second run finds it here
        part = home + ".part"
        shutil.rmtree(part, ignore_errors=True)
        safe = {"filter": "data"} if hasattr(tarfile, "data_filter") else {}
        with tarfile.open(fileobj=io.BytesIO(gzip.decompress(data))) as tar:
            tar.extractall(part, **safe)
        os.rename(part, home)
    missing = []
    for name, version in needs.items():
        try:
            importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            missing.append(f"{name}=={version}")
    if missing:
        print("Installing what the course needs:", ", ".join(missing), flush=True)
        pip = [sys.executable, "-m", "pip", "install", "-q", "--disable-pip-version-check"]
        done = subprocess.run([*pip, *missing], capture_output=True, text=True)
        if done.returncode:
            said = (done.stderr.strip().splitlines() or ["pip failed"])[-1]
            raise SetupFailed(
                f"Could not install {', '.join(missing)} ({said}): on Colab, check that the "
                "runtime is connected and run this cell again; on your own machine, check "
                "your connection to the Python package index and run this cell again."
            )
        importlib.invalidate_caches()
    sys.path.insert(0, home)
    os.environ["PYTHONPATH"] = os.pathsep.join(  # for the checks' child processes too
        filter(None, [home, os.environ.get("PYTHONPATH")])
    )


"""

_TAIL = """
try:
    import autograder
except ImportError:  # not installed here: the copy this notebook carries
    unpack_course(COURSE, COURSE_SHA256, NEEDS)
try:
    from autograder.course import exercise, explorers
except ImportError as e:  # the course is here, but not what it needs
    raise SetupFailed(
        f"The course's autograder cannot be loaded ({e}): on Colab, restart the session "
        "(Runtime > Restart session) and run this cell again; on your own machine, run "
        "`pip install -r requirements-learner.txt` in the course's folder and run this cell again."
    ) from None
"""


def setup_cell(step: str, root: Path = ROOT) -> str:
    """The setup cell of step's notebook, carrying the course under root."""
    packed = archive(root)
    text = base64.b85encode(packed).decode()
    needs = pins(root / REQUIREMENTS.name)
    linux = ", ".join(f"{name!r}: {needs[name]!r}" for name in LINUX_NEEDS)
    lines = [
        "NEEDS = {",
        *(f"    {name!r}: {needs[name]!r}," for name in NEEDS),
        "}",
        'if platform.system() == "Linux":  # the CPU backend confines kernels with these',
        f"    NEEDS.update({{{linux}}})",
        f'COURSE_SHA256 = "{hashlib.sha256(packed).hexdigest()}"',
        f"COURSE = (  # the course's files: a tar, gzip-compressed, in base85 ({len(text):,} characters)",
        *(f'    "{text[i : i + LINE]}"' for i in range(0, len(text), LINE)),
        ")",
    ]
    return _HEAD + "\n".join(lines) + "\n" + _TAIL + f'exercise.setup("{step}")'


_COURSE = re.compile(r'^COURSE_SHA256 = "[0-9a-f]+"\nCOURSE = \(.*?\n\)\n', re.M | re.S)


def comparable(cell: str) -> str:
    """A setup cell with its archive replaced by the digest of the files it holds: two
    builds of the same files compare equal though zlib compressed them differently."""

    def files_digest(found: re.Match) -> str:
        text = "".join(re.findall(r'^    "(.*)"$', found.group(0), re.M))
        packed = gzip.decompress(base64.b85decode(text))
        return f"COURSE holds files of SHA-256 {hashlib.sha256(packed).hexdigest()}\n"

    return _COURSE.sub(files_digest, cell)
