"""Where the course lives: its public repository and the release the notebooks pin.

Both are in the book's _config.yml and nowhere else; the notebooks' "Open in Colab"
badges and chapter links, their setup cells (which fetch the course where it is not
installed, as on Colab) and the book's Colab buttons are made from them.

    python -m autograder notebooks --repository https://github.com/OWNER/NAME --release v1.0

sets both and rebuilds the notebooks. Until the URL is set, it is PLACEHOLDER, and
a setup cell says, in one sentence, that it cannot fetch the course and what to do.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from ..ladder.registry import KERNEL_DIR

CONFIG = KERNEL_DIR.parent / "_config.yml"
PLACEHOLDER = "https://github.com/sgemm-course/sgemm-course"
_GITHUB = re.compile(r"https://github\.com/[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+")
_RELEASE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._/-]*")  # a tag, branch or commit
_BLOCK = re.compile(r"^repository:[ \t]*\n((?:[ \t].*\n|[ \t]*\n)*)", re.M)


@dataclass(frozen=True)
class Repository:
    url: str  # https://github.com/OWNER/NAME
    release: str  # the git tag (or commit) the notebooks fetch and link to

    @property
    def placeholder(self) -> bool:
        return self.url == PLACEHOLDER

    def colab_url(self, assignment_name: str) -> str:
        """The "Open in Colab" link of an exercise notebook at the release."""
        return (
            f"https://colab.research.google.com/github/{self.url.removeprefix('https://github.com/')}"
            f"/blob/{self.release}/exercises/{assignment_name}/{assignment_name}.ipynb"
        )

    def file_url(self, path: str) -> str:
        """A file of the course at the release, on GitHub."""
        return f"{self.url}/blob/{self.release}/{path}"


def _value(block: str, key: str, config: Path) -> re.Match:
    found = re.search(rf"^([ \t]+{key}:[ \t]*)(\S+)", block, re.M)
    if not found:
        raise ValueError(f"{config} has no repository: {key}:")
    return found


def _block(config: Path) -> re.Match:
    block = _BLOCK.search(config.read_text())
    if not block:
        raise ValueError(f"{config} has no repository: block")
    return block


def read(config: Path = CONFIG) -> Repository:
    """The course's repository and release, from _config.yml."""
    block = _block(config).group(1)
    url, release = (_value(block, key, config).group(2) for key in ("url", "release"))
    return Repository(url, release)


def write(url: str | None, release: str | None, config: Path = CONFIG) -> Repository:
    """Set the repository's URL and the release in _config.yml (None: keep it); the
    rest of the file, comments included, stays as it is."""
    if url is not None:
        url = url.strip().removesuffix("/").removesuffix(".git")
        if not _GITHUB.fullmatch(url):
            raise ValueError(
                f"--repository takes a GitHub repository's URL, https://github.com/OWNER/NAME "
                f"(Colab opens notebooks from GitHub), not {url!r}"
            )
    if release is not None and not _RELEASE.fullmatch(release):
        raise ValueError(f"--release takes a git tag or commit, such as v1.0, not {release!r}")
    text = config.read_text()
    block = _block(config)
    lines = block.group(1)
    for key, value in (("url", url), ("release", release)):
        if value is not None:
            found = _value(lines, key, config)
            lines = lines[: found.start(2)] + value + lines[found.end(2) :]
    config.write_text(text[: block.start(1)] + lines + text[block.end(1) :])
    return read(config)


# The setup cell: the course is imported where it is installed (a clone, nbgrader),
# and fetched at the release next to the notebook where it is not (Colab). Whatever
# stops it ends in one sentence that says what to do, never in a traceback:
# IPython shows an exception that has _render_traceback_ as that method's lines.
_SETUP_HEAD = """\
# Setup: run this first. It works on Colab (with or without a GPU), on your own
# machine, and when nbgrader grades the notebook.
import os, subprocess, sys


class SetupFailed(Exception):
    def _render_traceback_(self):  # Jupyter shows the sentence alone, without a traceback
        return [str(self)]


COURSE, RELEASE = "{url}", "{release}"
"""
_SETUP_NOWHERE = """\
try:
    import autograder
except ImportError:  # not installed here, and no public repository to fetch it from
    raise SetupFailed(
        "The course's autograder is not installed here, and this notebook cannot fetch it "
        f"(its repository, {COURSE}, is a placeholder): on Colab, open the notebook from the "
        "Open in Colab link your course gives you; on your own machine, open it in a clone "
        "of the course after `pip install -r requirements-learner.txt` there."
    ) from None
"""
_SETUP_FETCH = """\
try:
    import autograder
except ImportError:  # not installed here (Colab; a notebook on its own): fetch the course once
    if not os.path.isdir("sgemm-course"):
        os.makedirs("sgemm-course.part", exist_ok=True)
        for git in (
            ["init", "-q"],
            ["fetch", "-q", "--depth", "1", COURSE, RELEASE],
            ["checkout", "-q", "FETCH_HEAD"],
        ):
            try:
                subprocess.run(
                    ["git", "-C", "sgemm-course.part", *git],
                    check=True, capture_output=True, text=True,
                )
            except (OSError, subprocess.CalledProcessError) as e:
                said = (getattr(e, "stderr", "") or str(e)).strip().splitlines()[-1]
                raise SetupFailed(
                    f"Could not fetch the course from {COURSE} at {RELEASE} ({said}): on "
                    "Colab, check that the runtime is connected and run this cell again; on "
                    "your own machine, check your internet connection and run this cell "
                    f"again, or clone the course, check out {RELEASE}, run `pip install -r "
                    "requirements-learner.txt` in it and open this notebook there."
                ) from None
        os.rename("sgemm-course.part", "sgemm-course")
        # What the CPU backend needs beside NumPy: what confines a kernel's native code,
        # and the parser its checks and the localizer read the kernel with.
        needs = ["pyseccomp==0.1.2", "landlock==1.0.0.dev5", "tree-sitter==0.26.1",
                 "tree-sitter-cuda==0.21.2"]
        subprocess.run([sys.executable, "-m", "pip", "install", "-q", *needs])
    sys.path.insert(0, os.path.abspath("sgemm-course"))
"""
_SETUP_TAIL = """\
try:
    from autograder.course import exercise, explorers
except ImportError as e:  # the course is here, but not what it needs
    raise SetupFailed(
        f"The course's autograder cannot be loaded ({e}): on Colab, restart the session "
        "(Runtime > Restart session) and run this cell again; on your own machine, run "
        "`pip install -r requirements-learner.txt` in the course's folder and run this cell again."
    ) from None
"""


def setup_cell(repository: Repository, step: str) -> str:
    """The setup cell of step's notebook, for the course at `repository`."""
    fetch = _SETUP_NOWHERE if repository.placeholder else _SETUP_FETCH
    head = _SETUP_HEAD.format(url=repository.url, release=repository.release)
    return head + fetch + _SETUP_TAIL + f'exercise.setup("{step}")'
