"""Look at the built book as a reader would: every page at a desktop and a phone width.

    python book/look.py _build/html OUT_DIR
    python book/look.py PAGE.html [PAGE.html ...] OUT_DIR    # those pages alone

Opens every page of the built book in headless Chromium (through Playwright, with the
system's Chromium: no browser is downloaded) at 1280 and 390 px wide, saves a
screenshot of each whole page to OUT_DIR (PAGE.desktop.png, PAGE.phone.png), prints
one line per problem and a final count line, and exits 1 when it found any. A problem
is one of:

- overflow: an element whose content is wider than its box and that neither scrolls
  nor clips it (a code block or a table running out of the column), or a page wider
  than the screen;
- small text: a figure whose smallest text is shown smaller than MIN_TEXT_PX (see
  below for a figure shrunk to fit a phone);
- a figure shrunk at a width where figures are shown at their own size (the desktop:
  FITTED), or shrunk elsewhere without the tap that enlarges it and the line under it
  that says so (book/_static/enlarge.js);
- a table that hides columns: one whose columns are not all in sight without
  scrolling sideways, since the column hidden is most often the one the table exists
  for (its result: GFLOP/s, % of cuBLAS). book/_static/tables.js shows a table that
  does not fit as one card per row;
- markup: Markdown or MyST written out as text (a backtick, `{doc}`, `:::`, `**`, a
  link's `](`...) anywhere outside code;
- prose: what a generator or a draft leaves for a reader to stumble on, in the text of
  paragraphs, headings, list items, table cells and captions outside code and math: a
  sentence that starts with "Note:", TeX written out as text (`\\frac`, `C^T`, `x_i`),
  and hedges ("may not be", "might be", "probably", "it seems"). The words are the
  same at every width, so they are read at the desktop's only;
- an image of the book that does not load (naturalWidth 0).

How the size of a figure's text is known. The book's figures are matplotlib PNGs, and a
browser cannot read the text inside a raster. So each figure says it: the code that
writes the PNG (`autograder.course.pictures.png`, which both the chapters' pictures and
the plots of book/figures/ go through) stores in the PNG's metadata, under the key
`min-text-px`, the smallest font size of any text drawn on it, in the image's own
pixels (points × dpi / 72: the size matplotlib rasterised it at). Here the browser
says how wide it shows the image and how wide the image is; the text as the reader
sees it is min-text-px × shown width / natural width. That is measured, not
estimated: the font size comes from the figure's own text objects, the scale from
the page as laid out. (SVG with live text would let the browser measure the text
itself, but then the figures' lettering would depend on the reader's fonts.) A PNG of
the book with no such metadata is reported, since its text cannot be checked.

Figures on a phone. The figures are drawn to fit the desktop column, and at 1280 px
each must be shown at its own size. On a narrower screen the stylesheet shrinks a
figure wider than the column to fit it, and its text with it; book/_static/enlarge.js
then marks it, writes a line under it ("Tap the figure to see it at full size"), and
shows it at its own size on a tap, scrolling sideways inside the column. So a figure
shown shrunk is checked as a reader uses it: it must have the visible line, a real
click on it must show it at its own size (the click a tap makes), and its text is
measured at that enlarged size; the page must not grow wider than the screen while
it is enlarged, and a second click must fit it again. A figure shown at its own size
is checked as shown, and must have no such line.

Images are checked where they live in the build (`_images/`, `_static/`); the page's
requests to the network are refused, so that the check needs none and gives the same
answer everywhere. Remote images (the Colab badge) are therefore counted, not
checked. Collapsed boxes (`<details>`, and the dropdown admonitions that
sphinx-togglebutton closes) are opened before the checks, so what an expert opens is
checked too; the screenshots show the pages as they open.

Needs `pip install playwright` and Chromium at /usr/bin/chromium (Debian's package)
or CHROMIUM.
"""

from __future__ import annotations

import os
import re
import struct
import sys
from pathlib import Path
from urllib.parse import unquote, urlparse

WIDTHS = {"desktop": (1280, 900), "phone": (390, 844)}
FITTED = {"desktop"}  # widths at which every figure is shown at its own size
MIN_TEXT_PX = 10
PROSE_WIDTH = "desktop"  # the words are the same at every width: read once
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

# Tables that hide a column: a column is hidden when its cell in the table's first
# body row lies, even in part, outside what the reader sees of the table: the screen,
# cut by every element around it that scrolls or clips sideways. A table scrolled
# sideways hides the columns past its right edge; shown as cards (tables.js), every
# cell is inside the column.
_HIDDEN_COLUMNS = """() => {
  const bad = [];
  for (const table of document.querySelectorAll('main table')) {
    const row = [...table.tBodies].flatMap(body => [...body.rows])[0];
    if (!row || table.getBoundingClientRect().width === 0) continue;
    let left = 0, right = document.documentElement.clientWidth;
    for (let el = table; el && el !== document.body; el = el.parentElement) {
      if (!['auto', 'scroll', 'hidden', 'clip'].includes(getComputedStyle(el).overflowX)) continue;
      const box = el.getBoundingClientRect();
      left = Math.max(left, box.left + el.clientLeft);
      right = Math.min(right, box.left + el.clientLeft + el.clientWidth);
    }
    const head = table.tHead && table.tHead.rows[table.tHead.rows.length - 1];
    const names = head ? [...head.cells].map(th => th.textContent.trim()) : [];
    const hidden = [...row.cells].map((cell, i) => [cell.getBoundingClientRect(), i])
      .filter(([box]) => box.width > 0 && (box.left < left - 1 || box.right > right + 1))
      .map(([, i]) => JSON.stringify(names[i] || `column ${i + 1}`));
    if (hidden.length)
      bad.push(`table hides columns ${hidden.join(', ')} off its ${Math.round(right - left)}px ` +
               `(${table.scrollWidth}px wide): ` +
               JSON.stringify(row.textContent.trim().replace(/\\s+/g, ' ').slice(0, 40)));
  }
  return bad;
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

# What a generator or a draft leaves in the prose that a reader should not see: the
# text of each paragraph, heading, list item, table cell and caption, outside code
# and math, is searched for each pattern (see _scaffolding).
SCAFFOLDING = {
    "a sentence that starts with": re.compile(r"(?:^|(?<=[.!?]))[ \t]*Note:", re.MULTILINE),
    "TeX written as text": re.compile(
        r"\\[A-Za-z]+"  # a command: \frac, \times
        r"|\w\^[-\w{]"  # a superscript: C^T, 2^32, 2^-120
        r"|(?<![\w\\])[A-Za-z]_(?:\{|[A-Za-z0-9]{1,2}\b)"  # a subscript: x_i, C_ij (not sm_90)
    ),
    "a hedge": re.compile(r"\b(?:may not be|might be|probably|it seems)\b", re.IGNORECASE),
}

# The text of each block (paragraph, heading, list item, table cell, caption), in
# order: code and math in it stand as one "▢", a line break as a new line.
_BLOCK_TEXT = """() => {
  const blocks = 'p, li, h1, h2, h3, h4, h5, h6, td, th, dt, dd, caption, figcaption';
  const skip = 'code, pre, kbd, samp, tt, script, style, textarea, .highlight, '
             + '.MathJax, mjx-container, .math';
  const root = document.querySelector('main') || document.body;
  const texts = new Map();
  const add = (node, text) => {
    const block = node.parentElement.closest(blocks) || root;
    texts.set(block, (texts.get(block) || '') + text);
  };
  // Code and math are left out, with all they hold (FILTER_REJECT): each is one '▢'.
  const walk = document.createTreeWalker(root, NodeFilter.SHOW_ELEMENT | NodeFilter.SHOW_TEXT, {
    acceptNode: node => {
      const code = node.nodeType === Node.ELEMENT_NODE && node.matches(skip);
      if (!code) return NodeFilter.FILTER_ACCEPT;
      add(node, '▢');
      return NodeFilter.FILTER_REJECT;
    },
  });
  for (let node = walk.nextNode(); node; node = walk.nextNode()) {
    if (node.nodeName === 'BR') add(node, '\\n');
    else if (node.nodeType === Node.TEXT_NODE) add(node, node.textContent.replace(/\\s+/g, ' '));
  }
  return [...texts.values()].map(t => t.trim()).filter(Boolean);
}"""

# Open every closed box: <details>, and sphinx-togglebutton's dropdown admonitions.
# Then wait two frames, so that what reacts to the new layout (enlarge.js, tables.js)
# has run.
_OPEN_BOXES = """() => new Promise(done => {
  document.querySelectorAll('details').forEach(d => d.open = true);
  document.querySelectorAll('.toggle-hidden').forEach(e => e.classList.remove('toggle-hidden'));
  requestAnimationFrame(() => requestAnimationFrame(done));
})"""

# Every image in the page: where it comes from, whether it loaded, how wide it is and
# how wide it is shown (0 where it is not shown), and whether the line under it that
# says a tap enlarges it is shown.
_IMAGES = """() => [...document.querySelectorAll('main img')].map(img => {
  const next = img.nextElementSibling;
  const hint = next && next.classList.contains('figure-hint') && !next.hidden
    && next.getBoundingClientRect().height > 0;
  return {
    src: img.currentSrc || img.src,
    loaded: img.complete && img.naturalWidth > 0,
    natural: img.naturalWidth,
    shown: img.getBoundingClientRect().width,
    hint: Boolean(hint),
  };
})"""

_WIDTH = "img => img.getBoundingClientRect().width"


def pages(html: Path) -> list[Path]:
    return sorted((html / "book").glob("*.html"))


def png_text(path: Path | bytes) -> dict[str, str]:
    """The text chunks (tEXt) of a PNG file (or its bytes): {} where it has none or is
    not a PNG."""
    data = path if isinstance(path, bytes) else path.read_bytes()
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


# A figure inside its page, as a self-contained page has them (the class report that
# autograder.course.report writes): a PNG in a data: URI.
INLINE_PNG = "data:image/png;base64,"


def _png(src: str) -> bytes | None:
    """The bytes of an image that is a PNG inside its page, or None."""
    if not src.startswith(INLINE_PNG):
        return None
    import base64

    return base64.b64decode(src[len(INLINE_PNG) :])


def _name(src: str) -> str:
    """An image's name in a problem: its file's, or an inline PNG's first bytes."""
    path = _local(src)
    if path is None:
        return f"an inline PNG ({src[len(INLINE_PNG) : len(INLINE_PNG) + 12]}…)"
    return path.name if len(path.name) < 24 else path.name[:12] + "…" + path.suffix


def _shrunk(img: dict) -> bool:
    return 0 < img["shown"] < img["natural"] - 0.5


def _figure(img: dict) -> bool:
    """Whether an image is one of the book's figures (a PNG in the build's _images/, or
    inside the page, loaded and shown), not the theme's icons or a remote image."""
    path = _local(img["src"])
    return bool(
        img["loaded"] and img["shown"]
        and (_png(img["src"]) or path and path.suffix.lower() == ".png" and "_images" in path.parts)
    )  # fmt: skip


def _image_problems(images: list[dict], fitted: bool) -> tuple[list[str], int, int]:
    """Problems with a page's images, how many figures had their text checked, and how
    many remote images were not checked. A figure shown shrunk carries, under
    "enlarged", the width it was shown at after a tap; `fitted`: whether every figure
    must be shown at its own size at this width."""
    problems, figures, remote = [], 0, 0
    for img in images:
        path, inline = _local(img["src"]), _png(img["src"])
        if path is None and inline is None:
            remote += 1
            continue
        name = _name(img["src"])
        if not img["loaded"]:
            problems.append(f"image: {name} does not load")
            continue
        if not _figure(img):
            continue  # the theme's icons; or an image not shown at this width
        figures += 1
        shown = img["shown"]
        if _shrunk(img) and fitted:
            problems.append(
                f"figure: {name} is shrunk to {shown:.0f} of its {img['natural']}px at a width "
                "where figures are shown at their own size: draw it to fit the column"
            )
        elif _shrunk(img):
            if not img["hint"]:
                problems.append(f"figure: {name} is shrunk with no line saying a tap enlarges it")
            if img["enlarged"] < img["natural"] - 0.5:
                problems.append(
                    f"figure: {name} is shrunk to {shown:.0f} of its {img['natural']}px and a "
                    f"tap shows it at {img['enlarged']:.0f}px, not its own size"
                )
            shown = img["enlarged"]  # its text is read enlarged
        elif img["hint"]:
            problems.append(f"figure: {name} fits, yet a line says a tap enlarges it")
        size = png_text(inline or path).get(TEXT_KEY)
        if size is None:
            problems.append(
                f"small text: figure {name} does not say how small its text is "
                f"(no {TEXT_KEY} in the PNG: write it with autograder.course.pictures.png)"
            )
            continue
        text = float(size) * shown / img["natural"]
        if text < MIN_TEXT_PX - 0.05:
            problems.append(
                f"small text: figure {name} shows text at {text:.1f}px (< {MIN_TEXT_PX}px: "
                f"{float(size):.1f}px in the image, shown {shown:.0f} of its "
                f"{img['natural']}px{' enlarged' if _shrunk(img) else ''})"
            )
    return problems, figures, remote


def _scaffolding(texts: list[str]) -> list[str]:
    """The scaffolding (SCAFFOLDING) in the text of a page's blocks, each hit with the
    words around it."""
    found = []
    for text in texts:
        for what, pattern in SCAFFOLDING.items():
            for hit in pattern.finditer(text):
                context = text[max(0, hit.start() - 30) : hit.end() + 30].replace("\n", " ")
                found.append(f"prose: {what} {hit[0].strip()!r} in the text: …{context.strip()}…")
    return found


CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")


def chromium(playwright):
    """The system's Chromium, headless, through Playwright (which downloads no browser);
    tests/test_notebook_browser.py drives JupyterLab with it too."""
    return playwright.chromium.launch(
        executable_path=CHROMIUM,
        args=["--no-sandbox", "--disable-gpu", "--disable-background-networking"],
    )


def _enlarge(page, images: list[dict]) -> list[str]:
    """Tap (click) every figure shown shrunk, note the width it is then shown at under
    "enlarged", look for overflow with all of them enlarged, and tap each again: the
    problems seen, and a figure that a second tap leaves enlarged or that cannot be
    tapped."""
    from playwright.sync_api import Error

    shrunk = [i for i, img in enumerate(images) if _figure(img) and _shrunk(img)]
    imgs = page.locator("main img")
    problems = []

    def tap(i: int) -> float:
        try:
            imgs.nth(i).click(timeout=5000)
        except Error as e:
            problems.append(f"figure: {_name(images[i]['src'])} cannot be tapped: {e}")
        return imgs.nth(i).evaluate(_WIDTH)

    for i in shrunk:
        images[i]["enlarged"] = tap(i)
    if shrunk:
        problems += page.evaluate(_OVERFLOWING)
    for i in shrunk:
        if tap(i) > images[i]["shown"] + 0.5:
            problems.append(f"figure: {_name(images[i]['src'])} stays enlarged after a tap")
    return problems


def look(html: Path, out: Path) -> list[str]:
    """Every problem of every page at every width, as 'PAGE (WIDTH): what'."""
    problems, _ = look_counted(html, out)
    return problems


def look_counted(html: Path, out: Path, found: list[Path] | None = None) -> tuple[list[str], str]:
    """The problems, and a line that counts what was checked; found: the pages to look
    at (by default every page of the built book in html)."""
    from playwright.sync_api import sync_playwright

    problems: list[str] = []
    out.mkdir(parents=True, exist_ok=True)
    figures = remote = shrunk = 0
    found = pages(html) if found is None else found
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
                page.evaluate(_OPEN_BOXES)
                seen = list(page.evaluate(_OVERFLOWING)) + page.evaluate(_HIDDEN_COLUMNS)
                for hit, context in page.evaluate(_MARKUP, [list(MARKUP), _ROLE]):
                    what = MARKUP.get(hit, "a MyST role")
                    seen.append(f"markup: {what} {hit!r} in the text: …{context.strip()}…")
                if name == PROSE_WIDTH:
                    seen += _scaffolding(page.evaluate(_BLOCK_TEXT))
                found_images = page.evaluate(_IMAGES)
                if name not in FITTED:
                    seen += _enlarge(page, found_images)
                images, n_figures, n_remote = _image_problems(found_images, name in FITTED)
                figures += n_figures
                remote += n_remote
                shrunk += sum("enlarged" in img for img in found_images)
                seen += images
                problems += [f"{path.stem} ({name}): {s}" for s in dict.fromkeys(seen)]
            page.close()
        browser.close()
    widths = " and ".join(f"{w} px" for w, _ in WIDTHS.values())
    count = (
        f"{len(problems)} problem{'s' * (len(problems) != 1)}: {len(found)} pages at {widths}, "
        f"{figures} figures' text measured (minimum {MIN_TEXT_PX} px; {shrunk} of them "
        f"shrunk to fit, measured enlarged by a tap), {remote} remote images not checked; "
        f"screenshots in {out}"
    )
    return problems, count


if __name__ == "__main__":
    # look.py BUILD OUT: every page of a built book; look.py PAGE.html [...] OUT: those
    # pages (a class report and a student's page: autograder/course/report.py).
    *where, out = map(Path, sys.argv[1:])
    if where[0].suffix == ".html":
        found, count = look_counted(where[0].parent, out, where)
    else:
        found, count = look_counted(where[0], out)
    print("\n".join([*found, count]))
    sys.exit(1 if found else 0)
