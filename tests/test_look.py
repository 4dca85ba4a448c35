"""book/look.py finds what a reader of the built book cannot read: overflow that does not
scroll, figures whose text is shown too small, tables that hide columns, Markdown left
as text, scaffolding in the prose, and images that do not load. Each check has a planted
page that fails it and an honest one that passes (needs Playwright and Chromium)."""

import importlib.util
import os
import shutil
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")
pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("playwright") is None or not shutil.which(CHROMIUM),
    reason="needs Playwright (pip install playwright) and Chromium (apt install chromium)",
)
sys.path.insert(0, str(ROOT / "book"))


def page(tmp_path: Path, body: str) -> Path:
    html = tmp_path / "html"
    (html / "book").mkdir(parents=True, exist_ok=True)
    (html / "book" / "chapter.html").write_text(f"<html><body><main>{body}</main></body></html>")
    return html


def figure(tmp_path: Path, points: float, width_in: float = 3.0, say: bool = True) -> str:
    """An <img> of a figure 100 dpi wide whose smallest text is `points` tall, in the
    build's _images/ folder, written as the book writes its figures (or, with say=False,
    without saying its text size)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from autograder.course import pictures

    fig, ax = plt.subplots(figsize=(width_in, 2), dpi=100)
    ax.plot([1, 2, 3])
    ax.tick_params(labelsize=points)
    ax.set_xlabel("size", fontsize=points + 4)
    images = tmp_path / "html" / "_images"
    images.mkdir(parents=True, exist_ok=True)
    name = f"fig{points}_{width_in}_{say}.png"
    if say:
        (images / name).write_bytes(pictures.png(fig))
    else:
        fig.savefig(images / name, dpi=100, bbox_inches="tight")
    plt.close(fig)
    return f"../_images/{name}"


def book_page(tmp_path: Path, body: str, script: bool = True, tables: bool = True) -> Path:
    """A page laid out as the book lays out a code cell's output, with the book's
    stylesheet and (or, with script=False, without) its script for figures, and (or,
    with tables=False, without) its script for tables."""
    html = tmp_path / "html"
    static = html / "_static"
    static.mkdir(parents=True, exist_ok=True)
    for name in ("custom.css", "enlarge.js", "tables.js"):
        shutil.copy(ROOT / "book" / "_static" / name, static / name)
    head = "<link rel='stylesheet' href='../_static/custom.css'>"
    for name, on in (("enlarge.js", script), ("tables.js", tables)):
        if on:
            head += f"<script src='../_static/{name}'></script>"
    column = "<div class='bd-article' style='max-width: 676px'>"  # the book's column
    page(tmp_path, f"{column}<div class='cell_output'>{body}</div></div>")
    chapter = html / "book" / "chapter.html"
    chapter.write_text(chapter.read_text().replace("<body>", f"<head>{head}</head><body>"))
    return html


def test_a_figure_wider_than_a_phone_is_shrunk_and_read_enlarged_by_a_tap(tmp_path):
    import look

    # 8 pt at 100 dpi: 11.1 px in a figure about 500 px wide, shrunk on a 390 px phone
    # (to 8 px text), and shown whole again by a tap.
    wide = f"<img src='{figure(tmp_path, 8, width_in=6.0)}'>"
    problems, count = look.look_counted(book_page(tmp_path, wide), tmp_path / "shots")
    assert problems == [], problems
    assert "2 figures' text measured" in count and "1 of them shrunk" in count, count


def test_a_shrunk_figure_that_does_not_enlarge_on_a_tap_is_reported(tmp_path):
    import look

    wide = f"<img src='{figure(tmp_path, 8, width_in=6.0)}'>"
    html = book_page(tmp_path, wide, script=False)
    problems = look.look(html, tmp_path / "shots")
    assert any("phone" in p and "no line saying a tap enlarges it" in p for p in problems)
    assert any("phone" in p and "a tap shows it at" in p for p in problems), problems
    assert any("phone" in p and "small text" in p for p in problems), problems
    assert not any("desktop" in p for p in problems), problems


def test_a_figure_shrunk_on_the_desktop_is_reported_even_if_it_enlarges(tmp_path):
    import look

    # About 820 px wide: wider than the desktop's column (676 px) too.
    huge = f"<img src='{figure(tmp_path, 8, width_in=10.0)}'>"
    problems = look.look(book_page(tmp_path, huge), tmp_path / "shots")
    assert any("desktop" in p and "draw it to fit the column" in p for p in problems), problems


def test_a_figure_that_fits_with_a_line_saying_a_tap_enlarges_it_is_reported(tmp_path):
    import look

    body = f"<img src='{figure(tmp_path, 8)}'><span class='figure-hint'>Tap the figure</span>"
    problems = look.look(book_page(tmp_path, body, script=False), tmp_path / "shots")
    assert any("fits, yet a line says a tap enlarges it" in p for p in problems), problems


def table(rows: int = 3) -> str:
    """A sweep table as the book's Markdown renders it: about 560 px wide, so that it
    fits the desktop's column and not a phone's."""
    names = ["kernel", "M = N = K", "time (ms)", "GFLOP/s", "cuBLAS GFLOP/s", "% of cuBLAS"]
    head = "".join(f"<th class='head'><p>{n}</p></th>" for n in names)
    body = "".join(
        f"<tr><td><p>sgemm_step_{i}</p></td><td><p>4096</p></td><td><p>1.234</p></td>"
        f"<td><p>{1000 * i:,}</p></td><td><p>50,123</p></td><td><p>{2 * i}.0%</p></td></tr>"
        for i in range(1, rows + 1)
    )
    table = f"<table class='table'><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"
    return f"<div class='pst-scrollable-table-container'>{table}</div>"


def test_a_wide_table_is_shown_as_cards_on_a_phone_and_hides_no_column(tmp_path):
    import look

    html = book_page(tmp_path, table())
    assert look.look(html, tmp_path / "shots") == []


def test_a_wide_table_scrolled_sideways_on_a_phone_is_reported(tmp_path):
    import look

    problems = look.look(book_page(tmp_path, table(), tables=False), tmp_path / "shots")
    assert any(
        "phone" in p and "table hides columns" in p and '"% of cuBLAS"' in p for p in problems
    ), problems
    assert not any("desktop" in p for p in problems), problems


def test_a_table_wider_than_the_screen_in_a_page_with_no_stylesheet_is_reported(tmp_path):
    import look

    # No element scrolls it: it runs off the screen, which hides its columns too.
    wide = table().replace("<table", "<table style='white-space: nowrap'")
    problems = look.look(page(tmp_path, wide), tmp_path / "shots")
    assert any("phone" in p and "table hides columns" in p for p in problems), problems


def test_a_code_block_wider_than_the_column_is_reported(tmp_path):
    import look

    wide = "<pre style='width: 300px'>" + "x" * 400 + "</pre>"
    problems = look.look(page(tmp_path, wide), tmp_path / "shots")
    assert any("overflow" in p and "pre" in p and "phone" in p for p in problems), problems
    assert (tmp_path / "shots" / "chapter.phone.png").exists()
    assert (tmp_path / "shots" / "chapter.desktop.png").exists()


def test_a_scrolling_code_block_fits(tmp_path):
    import look

    scrolled = "<pre style='width: 300px; overflow-x: auto'>" + "x" * 400 + "</pre>"
    assert look.look(page(tmp_path, scrolled), tmp_path / "shots") == []


def test_a_figure_shrunk_until_its_text_is_below_10px_is_reported(tmp_path):
    import look

    # 9 pt at 100 dpi is 12.5 px in the image; shown at 200 px of about 300 it is 8 px.
    shrunk = f"<img src='{figure(tmp_path, 9)}' style='width: 200px'>"
    problems = look.look(page(tmp_path, shrunk), tmp_path / "shots")
    assert any("small text" in p and "desktop" in p and "8." in p for p in problems), problems


def test_a_figure_with_small_text_at_its_own_size_is_reported(tmp_path):
    import look

    problems = look.look(page(tmp_path, f"<img src='{figure(tmp_path, 6)}'>"), tmp_path / "s")
    assert any("small text" in p and "8.3px" in p for p in problems), problems


def test_a_figure_inside_its_page_is_measured_as_one_in_images(tmp_path):
    """A self-contained page (the class report) holds its figures as data: URIs."""
    import base64

    import look

    for points, small in ((6, True), (8, False)):
        png = (tmp_path / "html" / figure(tmp_path, points).removeprefix("../")).read_bytes()
        inline = f"<img src='{look.INLINE_PNG}{base64.b64encode(png).decode()}'>"
        problems, count = look.look_counted(page(tmp_path, inline), tmp_path / "s")
        assert any("small text: figure an inline PNG" in p for p in problems) == small, problems
        assert "2 figures' text measured" in count


def test_a_figure_that_does_not_say_its_text_size_is_reported(tmp_path):
    import look

    silent = f"<img src='{figure(tmp_path, 12, say=False)}'>"
    problems = look.look(page(tmp_path, silent), tmp_path / "shots")
    assert any("does not say how small its text is" in p for p in problems), problems


def test_a_figure_shown_at_its_own_size_with_10px_text_passes(tmp_path):
    import look

    legible = f"<img src='{figure(tmp_path, 8)}'>"  # 8 pt at 100 dpi: 11.1 px
    assert look.look(page(tmp_path, legible), tmp_path / "shots") == []


@pytest.mark.parametrize(
    "raw",
    [
        "Tables in `book/data/dispatch.json`.",
        "See {doc}`gpus`.",
        ":::{note} A box that was not rendered.",
        "This is **not bold**.",
        "A [link](https://example.org) left as text.",
    ],
)
def test_markdown_left_as_text_is_reported(tmp_path, raw):
    import look

    problems = look.look(page(tmp_path, f"<p>{raw}</p>"), tmp_path / "shots")
    assert any("markup" in p for p in problems), problems


def test_markup_characters_inside_code_pass(tmp_path):
    import look

    code = (
        "<p>Write <code>a ** b</code> or <code>`x`</code>; a set {1, 2}; a ratio 3:1.</p>"
        "<pre>:::{note}\n**bold** [a](b)\n</pre>"
        "<div class='highlight'><pre><span>`quoted`</span></pre></div>"
    )
    assert look.look(page(tmp_path, code), tmp_path / "shots") == []


@pytest.mark.parametrize(
    ("raw", "what"),
    [
        ("<p>One iteration covers 32 values of k. Note: the loop holds another.</p>", "Note:"),
        ("<p>Occupancy is theoretical.<br>Note: <em>two</em> loops.</p>", "Note:"),
        ("<h2>Why C^T = B^T A^T</h2>", "TeX"),
        ("<p>The error grows as \\sqrt{K}.</p>", "TeX"),
        ("<li><p>Each thread adds x_i to its sum.</p></li>", "TeX"),
        ("<p>4 FFMA per k: this may not be the main loop.</p>", "hedge"),
        ("<td><p>Probably the L2 cache.</p></td>", "hedge"),
    ],
)
def test_scaffolding_in_the_prose_is_reported(tmp_path, raw, what):
    import look

    problems = look.look(page(tmp_path, raw), tmp_path / "shots")
    assert any(p.startswith("chapter (desktop): prose") and what in p for p in problems), problems
    assert not any("phone" in p for p in problems), problems


def test_notes_tex_and_hedges_inside_code_math_and_names_pass(tmp_path):
    import look

    honest = (
        "<div class='admonition note'><p class='admonition-title'>Note</p>"
        "<p>A note on the loop: it runs 32 times.</p></div>"
        "<p>Step 12 computes <code>C^T = B^T A^T</code> with <span class='math'>\\(C^T\\)"
        "</span>; <code>\\frac</code> and <code>x_i</code> are code.</p>"
        "<div class='math'>\\[ \\sqrt{K} \\]</div>"
        "<p>On sm_90a, 05_blocktiling_2d and tf32_accuracy.py are names, not TeX.</p>"
        "<pre>Note: this may not be the main loop</pre>"
    )
    assert look.look(page(tmp_path, honest), tmp_path / "shots") == []


def test_an_image_that_does_not_load_is_reported(tmp_path):
    import look

    missing = "<img src='../_images/nowhere.png'>"
    problems = look.look(page(tmp_path, missing), tmp_path / "shots")
    assert any("nowhere.png does not load" in p for p in problems), problems


def test_the_count_line_says_what_was_checked(tmp_path):
    import look

    html = page(tmp_path, f"<img src='{figure(tmp_path, 8)}'><img src='https://x.org/a.svg'>")
    problems, count = look.look_counted(html, tmp_path / "shots")
    assert problems == []
    assert count.startswith("0 problems: 1 pages at 1280 px and 390 px"), count
    assert "2 figures' text measured" in count and "2 remote images not checked" in count
