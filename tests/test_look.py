"""book/look.py finds what does not fit a reader's screen (needs Playwright and Chromium)."""

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
    (html / "book").mkdir(parents=True)
    (html / "book" / "chapter.html").write_text(f"<html><body><main>{body}</main></body></html>")
    return html


def test_a_code_block_wider_than_the_column_is_reported(tmp_path):
    import look

    wide = "<pre style='width: 300px'>" + "x" * 400 + "</pre>"
    problems = look.look(page(tmp_path, wide), tmp_path / "shots")
    assert any("pre" in p and "phone" in p for p in problems), problems
    assert (tmp_path / "shots" / "chapter.phone.png").exists()


def test_a_scrolling_code_block_fits(tmp_path):
    import look

    scrolled = "<pre style='width: 300px; overflow-x: auto'>" + "x" * 400 + "</pre>"
    assert look.look(page(tmp_path, scrolled), tmp_path / "shots") == []
