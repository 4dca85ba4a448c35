/* Tables on a narrow screen (registered in _config.yml; custom.css styles them).

   A table scrolled sideways hides its right-hand columns, and those hold what the
   table is for (GFLOP/s, % of cuBLAS). So a table wider than the column is shown as
   one card per row instead (table-cards), each cell under its column's header
   (data-label, which the stylesheet writes before it). A table that fits stays a
   table. It is measured again whenever its column changes width (a phone turned, a
   closed box opened). A table with merged cells (colspan, rowspan) has no one header
   per cell, and stays as it is. book/look.py checks the result: no table may hide a
   column at 1280 or 390 px. */
(() => {
  const TABLES = ".bd-article table";

  // Each body cell labelled by the header of its column; false where that is not one.
  function label(table) {
    const head = table.tHead && table.tHead.rows[table.tHead.rows.length - 1];
    const rows = [...table.tBodies].flatMap((body) => [...body.rows]);
    const cells = [...rows, ...(head ? [head] : [])].flatMap((row) => [...row.cells]);
    if (!head || cells.some((cell) => cell.colSpan > 1 || cell.rowSpan > 1)) return false;
    const names = [...head.cells].map((th) => th.textContent.trim());
    rows.forEach((row) => [...row.cells].forEach((cell, i) => (cell.dataset.label = names[i])));
    return true;
  }

  // Cards where the table, laid out as a table, is wider than the room it has.
  function fit(table) {
    table.classList.remove("table-cards");
    const room = Math.min(table.clientWidth, table.parentElement.clientWidth);
    if (room === 0) return; // not laid out (inside a closed box)
    // No tolerance: a table a fraction of a pixel too wide cuts its last column.
    table.classList.toggle("table-cards", table.scrollWidth > room);
  }

  function setup() {
    const widths = new Map();
    const resized = new ResizeObserver((entries) =>
      entries.forEach(({ target }) => {
        // A card layout changes the column's height, not its width: only a new
        // width can change whether the table fits.
        if (widths.get(target) === target.clientWidth) return;
        widths.set(target, target.clientWidth);
        target.querySelectorAll(":scope > table.table-labelled").forEach(fit);
      })
    );
    document.querySelectorAll(TABLES).forEach((table) => {
      if (!label(table)) return;
      table.classList.add("table-labelled");
      fit(table);
      resized.observe(table.parentElement);
    });
  }

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", setup);
  else setup();
})();
