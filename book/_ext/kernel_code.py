"""How the book shows the files of kernels/ (a Sphinx extension, registered in
_config.yml as a local extension).

1. The `// [docs:name]` and `# [docs:name]` anchors that `literalinclude`'s
   start-after / end-before options find are dropped from what the reader sees:
   an excerpt may hold other excerpts' anchors, and a whole file holds them all.
2. A `literalinclude` with `:diff: OLD` shows the change of *code* from OLD to
   the file, with comments and blank lines left out, under the files' names
   relative to the repository (`kernels/05_blocktiling_2d.cu`), not the paths
   of the machine that built the book.
3. The "launch" button of a chapter opens its exercise notebook in Colab
   (a chapter's Markdown source is no notebook Colab can open); pages without an
   exercise get no launch button, and no page gets one while the course's
   repository is the placeholder (book/_config.yml).
"""

from __future__ import annotations

import re
from difflib import unified_diff
from pathlib import Path

from sphinx.directives import code

ANCHOR = re.compile(r"^\s*(//|#)\s*\[docs:[\w-]+\]\s*$")
C_LIKE = (".cu", ".cuh", ".c", ".h", ".cpp")


def without_anchors(lines: list[str]) -> list[str]:
    """lines without the lines that are a [docs:...] anchor."""
    return [line for line in lines if not ANCHOR.match(line)]


def code_only(lines: list[str]) -> list[str]:
    """C/CUDA lines with their comments removed: a line that held only a comment
    goes, a trailing comment is cut, and blank lines go (so that a diff shows
    changes of code, not of prose). String and character literals are respected."""
    out, in_block = [], False
    for line in lines:
        kept, i, quote = [], 0, None
        while i < len(line):
            c, pair = line[i], line[i : i + 2]
            if in_block:
                if pair == "*/":
                    in_block, i = False, i + 2
                else:
                    i += 1
                continue
            if quote:
                kept.append(c)
                if c == "\\" and i + 1 < len(line):
                    kept.append(line[i + 1])
                    i += 1
                elif c == quote:
                    quote = None
                i += 1
                continue
            if pair == "//":
                break
            if pair == "/*":
                in_block, i = True, i + 2
                continue
            if c in "\"'":
                quote = c
            kept.append(c)
            i += 1
        text = "".join(kept).rstrip()
        if text.strip():
            out.append(text + "\n")
    return out


def relative_name(path: str | Path) -> str:
    """'kernels/06_vectorized.cu' for any path of a file in a folder kernels/."""
    path = Path(path)
    return f"{path.parent.name}/{path.name}"


def code_diff(old_path, new_path, old_lines: list[str], new_lines: list[str]) -> list[str]:
    """The unified diff of the code (comments and anchors left out) of two files."""
    if Path(new_path).suffix in C_LIKE:
        old_lines, new_lines = code_only(old_lines), code_only(new_lines)
    else:
        old_lines, new_lines = without_anchors(old_lines), without_anchors(new_lines)
    return list(
        unified_diff(old_lines, new_lines, relative_name(old_path), relative_name(new_path))
    )


class Reader(code.LiteralIncludeReader):
    """Sphinx's literalinclude reader, with the anchors dropped after the
    start-after / end-before options have used them, and code-only diffs."""

    def end_filter(self, lines, location=None):
        return without_anchors(super().end_filter(lines, location=location))

    def show_diff(self, location=None):
        old = self.options["diff"]
        return code_diff(old, self.filename, self.read_file(old), self.read_file(self.filename))


def exercise_launch_button(app, pagename, templatename, context, doctree):
    """Point the Colab launch button at the page's exercise notebook, or drop it."""
    buttons = context.get("header_buttons")
    if not buttons:
        return
    from autograder.course import repository
    from autograder.course.assignments import ASSIGNMENTS

    assignment = next((a for a in ASSIGNMENTS if a.chapter == pagename), None)
    course = repository.read()
    for group in [b for b in buttons if b.get("label") == "launch-buttons"]:
        links = [b for b in group["buttons"] if b.get("text") == "Colab"]
        for link in links:
            # Until the course is published, its URL leads nowhere: no button.
            if assignment is None or course.placeholder:
                group["buttons"].remove(link)
            else:
                link["url"] = course.colab_url(assignment.name)
                link["tooltip"] = "Open this chapter's exercise notebook in Colab"
        if not group["buttons"]:
            buttons.remove(group)


def setup(app):
    code.LiteralIncludeReader = Reader  # LiteralInclude.run looks the reader up here
    # After sphinx-book-theme has made its launch buttons (priority 501).
    app.connect("html-page-context", exercise_launch_button, priority=502)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
