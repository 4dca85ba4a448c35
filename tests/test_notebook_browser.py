"""The exercise notebooks as a learner meets them: JupyterLab from a learner's install
(requirements-learner.txt), in Chromium driven by Playwright. Each test opens a notebook,
runs it, moves a control of its explorer and checks that the explorer's text and
picture change; one opens a notebook with Colab's ipywidgets 7 in the kernel, which
this JupyterLab cannot draw, and checks that the learner is told what to do.

Needs .venv-learner (python3 -m venv .venv-learner && .venv-learner/bin/pip install
-r requirements-learner.txt), .venv-colab (the same with .ci/colab-requirements.txt),
Playwright and Chromium (apt install chromium). CI makes them and sets
SGEMM_REQUIRE_BROWSER=1, so that there these tests fail instead of skipping; it keeps
the screenshots written to SGEMM_SHOTS."""

import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
from services import free_port, unless_possible, wait_for

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "book"))
import look  # noqa: E402  (book/look.py: the system's Chromium, launched as the book's check does)

LEARNER = ROOT / ".venv-learner"
COLAB = ROOT / ".venv-colab"
MISSING = [
    what
    for what, there in (
        (f"a learner's install in {LEARNER.name}", (LEARNER / "bin" / "jupyter-lab").exists()),
        (f"Colab's ipywidgets 7 in {COLAB.name}", (COLAB / "bin" / "python").exists()),
        ("Playwright (pip install playwright)", importlib.util.find_spec("playwright")),
        ("Chromium (apt install chromium)", shutil.which(look.CHROMIUM)),
    )
    if not there
]
pytestmark = [
    unless_possible(f"needs {', '.join(MISSING)}" if MISSING else "", "SGEMM_REQUIRE_BROWSER"),
    pytest.mark.xdist_group("browser"),  # one JupyterLab and one browser for the module
]

# For each notebook: a control of its explorer, the value it moves to, and what its
# text says before and after.
MOVES = {
    "02_coalescing": ("threads walk", "rows", "32 floats side by side", "bytes apart"),
    "05_blocktiling_2d": ("TN", "4", "accumulators per thread: 64", "accumulators per thread: 32"),
    "07_warptiling": ("WNITER", "1", "loads per FMA: 0.25", "loads per FMA: 0.312"),
}


@pytest.fixture(scope="module")
def shots(tmp_path_factory) -> Path:
    folder = Path(os.environ.get("SGEMM_SHOTS") or tmp_path_factory.mktemp("shots"))
    folder.mkdir(parents=True, exist_ok=True)
    return folder


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    """A learner's JupyterLab over copies of the notebooks, with a second kernel that has
    Colab's ipywidgets 7; yields its address."""
    home = tmp_path_factory.mktemp("lab")
    for name in MOVES:
        shutil.copytree(ROOT / "exercises" / name, home / name)
    colab = home / "share" / "jupyter" / "kernels" / "colab"
    colab.mkdir(parents=True)
    (colab / "kernel.json").write_text(
        json.dumps(
            {
                "argv": [
                    str(COLAB / "bin" / "python"),
                    "-m",
                    "ipykernel_launcher",
                    "-f",
                    "{connection_file}",
                ],
                "display_name": "Colab's ipywidgets 7",
                "language": "python",
                # This checkout, which the setup cell then imports (instead of unpacking
                # the copy it carries: tests/test_notebooks_execute.py runs that).
                "env": {"PYTHONPATH": str(ROOT)},
            }
        )
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith(("JUPYTER", "PYTHON"))}
    env |= {
        "JUPYTER_PATH": str(home / "share" / "jupyter"),
        "JUPYTER_CONFIG_DIR": str(home / "config"),
        "JUPYTER_RUNTIME_DIR": str(home / "runtime"),
        "JUPYTERLAB_SETTINGS_DIR": str(home / "settings"),  # none of the user's
    }
    port = free_port()
    log = (home / "jupyter.log").open("w")
    server = subprocess.Popen(
        [
            str(LEARNER / "bin" / "jupyter-lab"),
            "--no-browser",
            f"--port={port}",
            "--ServerApp.ip=127.0.0.1",
            "--IdentityProvider.token=",
            "--ServerApp.password=",
            "--ServerApp.disable_check_xsrf=True",
            "--expose-app-in-browser",  # window.jupyterapp: run the notebook as its menu does
            "--allow-root",
            f"--ServerApp.root_dir={home}",
        ],
        env=env,
        cwd=home,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    try:
        wait_for(lambda: "is running at" in (home / "jupyter.log").read_text(), "JupyterLab")
        yield f"http://127.0.0.1:{port}"
    finally:
        server.terminate()
        server.wait(timeout=30)


@pytest.fixture(scope="module")
def browser():
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = look.chromium(p)
        yield browser
        browser.close()


def run_notebook(browser, lab: str, path: str, kernel: str | None = None):
    """Opens the notebook at `path` (with another kernel, if named), runs every cell and
    returns the page and the explore cell's output, once its explorer is there."""
    # Tall enough for a whole explorer: JupyterLab paints nothing out of view, not even
    # for a screenshot.
    page = browser.new_page(viewport={"width": 1280, "height": 2400})
    # A workspace of its own: JupyterLab would otherwise reopen the notebooks of earlier
    # tests beside this one, and run whichever it shows first.
    workspace = uuid.uuid4().hex
    page.goto(f"{lab}/lab/workspaces/{workspace}/tree/{path}")
    busy = "window.jupyterapp?.shell.currentWidget?.sessionContext"
    page.wait_for_function(f"{busy}?.session?.kernel?.status === 'idle'", timeout=120_000)
    if kernel:
        page.evaluate(f"{busy}.changeKernel({{name: '{kernel}'}})")
        page.wait_for_function(
            f"{busy}.session.kernel.name === '{kernel}' && {busy}.session.kernel.status === 'idle'",
            timeout=120_000,
        )
    page.evaluate("window.jupyterapp.commands.execute('notebook:run-all-cells')")
    cell = page.locator(".jp-CodeCell", has_text="explorers.explore(")
    output = cell.locator(".jp-Cell-outputArea")
    explorer = output.locator(".jupyter-widgets").first
    explorer.wait_for(state="attached", timeout=120_000)
    # A cell out of view is not drawn (JupyterLab's content-visibility), so Playwright's
    # own scrolling, which waits until the element is visible, would wait forever.
    explorer.evaluate("e => e.scrollIntoView()")
    explorer.wait_for(timeout=30_000)
    return page, output


def shoot(element, path: Path):
    """A screenshot of the element as the page shows it (Playwright's own screenshot of an
    element caught JupyterLab's pictures half painted)."""
    element.evaluate("e => e.scrollIntoView()")
    element.page.screenshot(path=path, clip=element.bounding_box())


def test_a_learners_jupyterlab_shows_no_instructor_tools(browser, lab):
    page, _ = run_notebook(browser, lab, "05_blocktiling_2d/05_blocktiling_2d.ipynb")
    menus = page.locator("#jp-menu-panel").inner_text().split()
    assert "Kernel" in menus, menus  # the menu bar is what was read
    assert "Nbgrader" not in menus, menus
    assert not page.get_by_text("Validate", exact=True).count()
    page.close()


@pytest.mark.parametrize("name", MOVES)
def test_moving_a_control_redraws_the_explorers_text_and_picture(browser, lab, shots, name):
    label, value, before, after = MOVES[name]
    page, output = run_notebook(browser, lab, f"{name}/{name}.ipynb")
    wait_for(lambda: before in output.inner_text(), f"{name}'s explorer saying {before!r}")
    picture = output.locator("img").first
    picture.evaluate("img => img.decode()")
    drawn = picture.get_attribute("src")
    shoot(output, shots / f"{name}.before.png")
    control = output.locator(
        ".widget-dropdown", has=page.locator("label", has_text=re.compile(f"^{label}$"))
    )
    control.locator("select").select_option(value)
    wait_for(lambda: after in output.inner_text(), f"{name}'s explorer saying {after!r}")
    wait_for(lambda: picture.get_attribute("src") not in (None, drawn), f"{name}'s picture redrawn")
    picture.evaluate("img => img.decode()")  # drawn whole in the screenshot
    wait_for(lambda: output.locator("img").count() == 1, f"{name}'s old picture gone")
    shoot(output, shots / f"{name}.after.png")
    # A front end that draws the explorer keeps the sentence for one that cannot hidden.
    assert not output.locator(".sgemm-widgets-help").is_visible()
    page.close()


def test_a_kernel_whose_widgets_this_jupyterlab_cannot_draw_says_what_to_do(browser, lab, shots):
    page, output = run_notebook(
        browser, lab, "05_blocktiling_2d/05_blocktiling_2d.ipynb", kernel="colab"
    )
    output.locator(".jupyter-widgets-error-widget").wait_for(timeout=60_000)
    help = output.locator(".sgemm-widgets-help")
    help.wait_for(state="visible", timeout=30_000)
    assert "ipywidgets 7.7.1" in help.inner_text() and "ipywidgets>=8" in help.inner_text()
    shoot(output, shots / "05_blocktiling_2d.ipywidgets7.png")
    page.close()
