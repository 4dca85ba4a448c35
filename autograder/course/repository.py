"""Where the course lives: its public repository and the release the notebooks pin.

Both are in the book's _config.yml and nowhere else; the notebooks' "Open in Colab"
badges and chapter links and the book's Colab buttons are made from them. (A notebook
needs neither to run: it carries the course, carried.py.)

    python -m autograder notebooks --repository https://github.com/OWNER/NAME --release v1.0

sets both and rebuilds the notebooks. Until the URL is set, it is PLACEHOLDER, and
no badge, button or chapter link is made: it would lead nowhere.
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
