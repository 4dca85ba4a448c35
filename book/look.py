"""Look at the built book as a reader would: every page at a desktop and a phone width.

    python book/look.py _build/html OUT_DIR

Opens every page of the built book in headless Chromium (through Playwright, with the
system's Chromium: no browser is downloaded) at 1280 and 390 px wide, saves a
screenshot of each whole page to OUT_DIR (PAGE.desktop.png, PAGE.phone.png), prints
one line per problem and a final count line, and exits 1 when it found any. A problem
is one of:

- overflow: an element whose content is wider than its box and that neither scrolls
  nor clips it (a code block or a table running out of the column), or a page wider
  than the screen;
- small text: a figure whose smallest text is shown smaller than MIN_TEXT_PX;
- markup: Markdown or MyST written out as text (a backtick, `{doc}`, `:::`, `**`, a
  link's `](`...) anywhere outside code;
- an image of the book that does not load (naturalWidth 0).

How the size of a figure's text is known. The book's figures are matplotlib PNGs, and a
browser cannot read the text inside a raster. So each figure says it: the code that
writes the PNG (`autograder.course.pictures.png`, which both the chapters' pictures and
book/figures.py's plots go through) stores in the PNG's metadata, under the key
`min-text-px`, the smallest font size of any text drawn on it, in the image's own
pixels (points × dpi / 72: the size matplotlib rasterised it at). Here the browser
says how wide it shows the image and how wide the image is; the text as the reader
sees it is min-text-px × shown width / natural width. That is measured, not
estimated: the font size comes from the figure's own text objects, the scale from
the page as laid out. (SVG with live text would let the browser measure the text
itself, but then the figures' lettering would depend on the reader's fonts.) A PNG of
the book with no such metadata is reported, since its text cannot be checked.

Images are checked where they live in the build (`_images/`, `_static/`); the page's
requests to the network are refused, so that the check needs none and gives the same
answer everywhere. Remote images (the Colab badge) are therefore counted, not
checked. Collapsed boxes (`<details>`) are opened before the checks, so what an
expert opens is checked too; the screenshots show the pages as they open.

Needs `pip install playwright` and Chromium at /usr/bin/chromium (Debian's package)
or CHROMIUM.
"""

from __future__ import annotations

import os
import struct
import sys
from pathlib import Path
from urllib.parse import unquote, urlparse

WIDTHS = {"desktop": (1280, 900), "phone": (390, 844)}
MIN_TEXT_PX = 10
TEXT_KEY = "min-text-px"  # the PNG text chunk that autograder.course.pictures.png writes

# Elements wider than their box whose overflow is neither scrolled nor hidden.
_OVERFLOWING = """() => {
  const over = [];
  for (const el of document.querySelectorAll('main *')) {
    if (el.scrollWidth <= el.clientWidth + 1 || el.getBoundingClientRect().width === 0) continue;
    if (['auto', 'scroll', 'hidden'].includes(getComputedStyle(el).overflowX)) continue;
    if (el.closest('.MathJax, mjx-container, svg')) continue;
    over.push(el);
  }
  // The culprits: overflowing elements with no overflowing element inside them.
  const bad = over.filter(el => !over.some(other => other !== el && el.contains(other)))
    .map(el => `overflow: ${el.tagName.toLowerCase()} (${el.scrollWidth}px in ` +
                `${el.clientWidth}px): ` +
                JSON.stringify((el.textContent || el.outerHTML).trim().slice(0, 60)));
  const page = document.documentElement;
  if (page.scrollWidth > page.clientWidth + 1)
    bad.push(`overflow: the page is ${page.scrollWidth}px wide on a ${page.clientWidth}px screen`);
  return bad.slice(0, 6);
}"""

# Markdown or MyST that was not rendered: what each pattern catches.
MARKUP = {
    "`": "a backtick",
    ":::": "a MyST directive fence",
    "```": "a code fence",
    "**": "Markdown bold",
    "](": "a Markdown link",
    "{{": "a substitution",
    "<!--": "an HTML comment",
}
_ROLE = (
    r"\{(doc|ref|numref|glue|term|download|eq|math|code|literalinclude|code-cell|note|"
    r"warning|admonition|dropdown|figure|table)(:[a-z]+)?\}"
)

# Text written outside code: each text node's parent is not code, a code block, math or
# a script; hidden text counts too (a box the reader may open).
_MARKUP = """(args) => {
  const [literals, role] = args;
  const re = new RegExp(role);
  const skip = 'code, pre, kbd, samp, tt, script, style, textarea, .highlight, '
             + '.MathJax, mjx-container, .math';
  const found = [];
  const walk = document.createTreeWalker(document.querySelector('main') || document.body,
                                         NodeFilter.SHOW_TEXT);
  for (let node = walk.nextNode(); node; node = walk.nextNode()) {
    const text = node.textContent;
    if (!text.trim() || node.parentElement.closest(skip)) continue;
    const hits = literals.filter(s => text.includes(s));
    const role_hit = text.match(re);
    if (role_hit) hits.push(role_hit[0]);
    for (const hit of hits) {
      const at = text.indexOf(hit);
      const context = text.slice(Math.max(0, at - 30), at + hit.length + 30);
      found.push([hit, context.replace(/\\s+/g, ' ')]);
    }
  }
  return found;
}"""

# Every image in the page: where it comes from, whether it loaded, how wide it is and
# how wide it is shown (0 where it is not shown).
_IMAGES = """() => [...document.querySelectorAll('main img')].map(img => ({
  src: img.currentSrc || img.src,
  loaded: img.complete && img.naturalWidth > 0,
  natural: img.naturalWidth,
  shown: img.getBoundingClientRect().width,
}))"""


def pages(html: Path) -> list[Path]:
    return sorted((html / "book").glob("*.html"))


def png_text(path: Path) -> dict[str, str]:
    """The text chunks (tEXt) of a PNG file: {} where it has none or is not a PNG."""
    data = path.read_bytes()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        return {}
    found, at = {}, 8
    while at + 8 <= len(data):
        length, kind = struct.unpack(">I4s", data[at : at + 8])
        if kind == b"tEXt":
            key, _, value = data[at + 8 : at + 8 + length].partition(b"\0")
            found[key.decode("latin-1")] = value.decode("latin-1")
        if kind == b"IEND":
            break
        at += 12 + length
    return found


def _local(src: str) -> Path | None:
    url = urlparse(src)
    return Path(unquote(url.path)) if url.scheme == "file" else None


def _image_problems(images: list[dict]) -> tuple[list[str], int, int]:
    """Problems with a page's images, how many figures had their text checked, and how
    many remote images were not checked."""
    problems, figures, remote = [], 0, 0
    for img in images:
        path = _local(img["src"])
        if path is None:
            remote += 1
            continue
        name = path.name if len(path.name) < 24 else path.name[:12] + "…" + path.suffix
        if not img["loaded"]:
            problems.append(f"image: {name} does not load")
            continue
        if path.suffix.lower() != ".png" or "_images" not in path.parts or not img["shown"]:
            continue  # the theme's icons; or an image not shown at this width
        figures += 1
        size = png_text(path).get(TEXT_KEY)
        if size is None:
            problems.append(
                f"small text: figure {name} does not say how small its text is "
                f"(no {TEXT_KEY} in the PNG: write it with autograder.course.pictures.png)"
            )
            continue
        shown = float(size) * img["shown"] / img["natural"]
        if shown < MIN_TEXT_PX - 0.05:
            problems.append(
                f"small text: figure {name} shows text at {shown:.1f}px (< {MIN_TEXT_PX}px: "
                f"{float(size):.1f}px in the image, shown {img['shown']:.0f} of its "
                f"{img['natural']}px)"
            )
    return problems, figures, remote


CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")


def chromium(playwright):
    """The system's Chromium, headless, through Playwright (which downloads no browser);
    tests/test_notebook_browser.py drives JupyterLab with it too."""
    return playwright.chromium.launch(
        executable_path=CHROMIUM,
        args=["--no-sandbox", "--disable-gpu", "--disable-background-networking"],
    )


def look(html: Path, out: Path) -> list[str]:
    """Every problem of every page at every width, as 'PAGE (WIDTH): what'."""
    problems, _ = look_counted(html, out)
    return problems


def look_counted(html: Path, out: Path) -> tuple[list[str], str]:
    """The problems, and a line that counts what was checked."""
    from playwright.sync_api import sync_playwright

    problems: list[str] = []
    out.mkdir(parents=True, exist_ok=True)
    figures = remote = 0
    found = pages(html)
    with sync_playwright() as p:
        browser = chromium(p)
        for name, (width, height) in WIDTHS.items():
            page = browser.new_page(viewport={"width": width, "height": height})
            # No network: only the build's own files are loaded.
            page.route(
                "**/*",
                lambda route: (
                    route.continue_() if route.request.url.startswith("file:") else route.abort()
                ),
            )
            for path in found:
                page.goto(path.resolve().as_uri())
                page.wait_for_load_state("load")
                page.screenshot(path=out / f"{path.stem}.{name}.png", full_page=True)
                page.evaluate(
                    "() => document.querySelectorAll('details').forEach(d => d.open = true)"
                )
                seen = list(page.evaluate(_OVERFLOWING))
                for hit, context in page.evaluate(_MARKUP, [list(MARKUP), _ROLE]):
                    what = MARKUP.get(hit, "a MyST role")
                    seen.append(f"markup: {what} {hit!r} in the text: …{context.strip()}…")
                images, n_figures, n_remote = _image_problems(page.evaluate(_IMAGES))
                figures += n_figures
                remote += n_remote
                seen += images
                problems += [f"{path.stem} ({name}): {s}" for s in dict.fromkeys(seen)]
            page.close()
        browser.close()
    widths = " and ".join(f"{w} px" for w, _ in WIDTHS.values())
    count = (
        f"{len(problems)} problem{'s' * (len(problems) != 1)}: {len(found)} pages at {widths}, "
        f"{figures} figures' text measured (minimum {MIN_TEXT_PX} px), {remote} remote "
        f"images not checked; screenshots in {out}"
    )
    return problems, count


if __name__ == "__main__":
    found, count = look_counted(Path(sys.argv[1]), Path(sys.argv[2]))
    print("\n".join([*found, count]))
    sys.exit(1 if found else 0)
