"""Look at the built book as a reader would: every page at a desktop and a phone width.

    python book/look.py _build/html OUT_DIR

Opens each chapter of the built book in headless Chromium (through Playwright,
with the system's Chromium: no browser is downloaded), saves a screenshot of
the top of each page at 1280 and 390 px wide, and lists what does not fit:
any element whose content is wider than its box and cannot be scrolled (a code
block or a table that runs out of the column), and pages wider than the
screen. Exits 1 when something does not fit. Needs `pip install playwright`
and Chromium at /usr/bin/chromium (Debian's package) or CHROMIUM.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

WIDTHS = {"desktop": (1280, 900), "phone": (390, 844)}

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
    .map(el => `${el.tagName.toLowerCase()} (${el.scrollWidth}px in ${el.clientWidth}px): ` +
                JSON.stringify((el.textContent || el.outerHTML).trim().slice(0, 60)));
  const page = document.documentElement;
  if (page.scrollWidth > page.clientWidth + 1)
    bad.push(`the page is ${page.scrollWidth}px wide on a ${page.clientWidth}px screen`);
  return bad.slice(0, 6);
}"""


def pages(html: Path) -> list[Path]:
    return sorted((html / "book").glob("*.html"))


def look(html: Path, out: Path) -> list[str]:
    from playwright.sync_api import sync_playwright

    problems = []
    out.mkdir(parents=True, exist_ok=True)
    chromium = os.environ.get("CHROMIUM", "/usr/bin/chromium")
    with sync_playwright() as p:
        browser = p.chromium.launch(
            executable_path=chromium,
            args=["--no-sandbox", "--disable-gpu", "--disable-background-networking"],
        )
        for name, (width, height) in WIDTHS.items():
            page = browser.new_page(viewport={"width": width, "height": height})
            for path in pages(html):
                page.goto(path.resolve().as_uri())
                page.wait_for_load_state("load")
                page.screenshot(path=out / f"{path.stem}.{name}.png")
                problems += [f"{path.stem} ({name}): {p}" for p in page.evaluate(_OVERFLOWING)]
            page.close()
        browser.close()
    return problems


if __name__ == "__main__":
    found = look(Path(sys.argv[1]), Path(sys.argv[2]))
    print("\n".join(found) or "every page fits at every width")
    sys.exit(1 if found else 0)
