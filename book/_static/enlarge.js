/* Figures on a narrow screen (registered in _config.yml; custom.css styles them).

   A figure drawn at build time is drawn to fit the desktop column, and is shown there
   at its own size. On a narrower screen (a phone) the stylesheet shrinks it to the
   column's width, and its text with it. This script marks such a figure
   (figure-shrunk), writes under it that a tap enlarges it, and on a tap shows it at
   its own size (figure-enlarged), scrolling sideways inside the column; a second tap
   fits it again. A figure that fits is left alone, with no mark and no hint.
   book/look.py checks the result: a shrunk figure must enlarge on a tap, and its text
   is measured as the enlarged figure shows it. */
(() => {
  const FIGURES = '.bd-article div.cell_output img[src*="_images/"]';
  const HINT = {
    fitted: "Tap the figure to see it at full size",
    enlarged: "Tap the figure again to fit it to the screen",
  };

  function hint(img) {
    let note = img.nextElementSibling;
    if (!note || !note.classList.contains("figure-hint")) {
      note = document.createElement("span");
      note.className = "figure-hint";
      img.after(note);
    }
    return note;
  }

  function show(img, enlarged) {
    img.classList.toggle("figure-enlarged", enlarged);
    img.setAttribute("aria-expanded", String(enlarged));
    hint(img).textContent = enlarged ? HINT.enlarged : HINT.fitted;
  }

  // Whether the figure is shown smaller than it is, measured with it fitted (an
  // enlarged one is fitted for the measurement and enlarged again, in one frame).
  function measure(img) {
    const enlarged = img.classList.contains("figure-enlarged");
    img.classList.remove("figure-enlarged");
    const width = img.getBoundingClientRect().width;
    if (width === 0 || img.naturalWidth === 0) return; // not laid out yet
    const shrunk = width < img.naturalWidth - 0.5;
    img.classList.toggle("figure-shrunk", shrunk);
    hint(img).hidden = !shrunk;
    if (shrunk) {
      img.setAttribute("role", "button");
      img.tabIndex = 0;
      show(img, enlarged);
    } else {
      img.removeAttribute("role");
      img.removeAttribute("aria-expanded");
      img.removeAttribute("tabindex");
    }
  }

  function toggle(img) {
    if (img.classList.contains("figure-shrunk"))
      show(img, !img.classList.contains("figure-enlarged"));
  }

  function setup() {
    // The column's width changes with the screen (a phone turned), and a closed box's
    // figures are laid out when it opens: each figure is measured again then.
    const resized = new ResizeObserver((entries) =>
      entries.forEach((e) => e.target.querySelectorAll(FIGURES).forEach(measure))
    );
    document.querySelectorAll(FIGURES).forEach((img) => {
      img.addEventListener("click", () => toggle(img));
      img.addEventListener("keydown", (e) => {
        if (e.key === "Enter" || e.key === " ") {
          e.preventDefault();
          toggle(img);
        }
      });
      img.addEventListener("load", () => measure(img));
      if (img.complete) measure(img);
      resized.observe(img.parentElement);
    });
  }

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", setup);
  else setup();
})();
