// report.html: sort the items by a column, expand or collapse every row. No network, no eval.
"use strict";
(function () {
  const rows = document.querySelector(".items .rows");
  if (!rows) return;
  document.querySelectorAll(".items .sort").forEach((button) => {
    button.addEventListener("click", () => {
      const col = button.dataset.col;
      const numeric = button.dataset.type === "num";
      const dir = button.dataset.dir === "asc" ? "desc" : "asc";
      document.querySelectorAll(".items .sort").forEach((b) => { delete b.dataset.dir; });
      button.dataset.dir = dir;
      const key = (el) => {
        const v = el.getAttribute("data-k" + col) || "";
        if (!numeric) return v;
        const n = parseFloat(v);
        return Number.isNaN(n) ? null : n;
      };
      const items = Array.from(rows.children);
      items.sort((a, b) => {
        const x = key(a), y = key(b);
        if (x === y) return 0;
        if (x === null || x === "") return 1; // missing values last, either way
        if (y === null || y === "") return -1;
        const c = numeric ? x - y : String(x).localeCompare(String(y), undefined, { numeric: true });
        return dir === "asc" ? c : -c;
      });
      items.forEach((el) => rows.appendChild(el));
    });
  });
  const all = (open) => () => rows.querySelectorAll("details").forEach((d) => { d.open = open; });
  document.getElementById("expand-all").addEventListener("click", all(true));
  document.getElementById("collapse-all").addEventListener("click", all(false));
})();
