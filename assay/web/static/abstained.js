// assay review of abstained items: a verdict on the judges' scale per item. No inline script
// anywhere (CSP); every request carries the session's CSRF token; text is only set with textContent.
"use strict";

(function () {
  const csrf = document.querySelector('meta[name="csrf-token"]').content;
  const form = document.getElementById("verdict");
  const reviewer = document.getElementById("reviewer");
  const message = document.getElementById("message");
  let locked = false;

  reviewer.value = localStorage.getItem("assay-reviewer") || "";
  reviewer.addEventListener("input", () => localStorage.setItem("assay-reviewer", reviewer.value.trim()));

  function say(text, kind) {
    message.textContent = text;
    message.className = kind || "info";
    message.hidden = !text;
  }

  function showConflict(c) {
    const box = document.getElementById("conflict");
    box.textContent = "Given a verdict by " + (c.reviewer || "someone") + " at " + (c.timestamp || "?") +
      " since you loaded this page. Reload to see it before deciding.";
    const again = document.createElement("button");
    again.type = "button";
    again.textContent = "reload";
    again.addEventListener("click", () => location.reload());
    box.appendChild(document.createTextNode(" "));
    box.appendChild(again);
    box.hidden = false;
    locked = true;
    form.querySelectorAll("button").forEach((b) => { b.disabled = true; });
  }

  async function decide(verdict) {
    if (!form || locked) return;
    const who = reviewer.value.trim();
    if (!who) {
      say("Enter your name as reviewer first (top right).", "error");
      reviewer.focus();
      return;
    }
    localStorage.setItem("assay-reviewer", who);
    say("saving…", "info");
    const response = await fetch("/api/verdict", {
      method: "POST",
      credentials: "same-origin",
      headers: { "Content-Type": "application/json", "X-CSRF-Token": csrf },
      body: JSON.stringify({
        item_id: form.dataset.item,
        version: parseInt(form.dataset.version, 10),
        verdict: verdict === "" ? null : parseInt(verdict, 10),
        reviewer: who,
        note: document.getElementById("note").value,
      }),
    });
    let data = {};
    try { data = await response.json(); } catch (e) { data = { error: response.status + " " + response.statusText }; }
    if (response.status === 200) location.assign(form.dataset.next || form.dataset.self);
    else if (response.status === 409) { say("", ""); showConflict(data.conflict || {}); }
    else say(data.error || ("error " + response.status), "error");
  }

  function go(id) {
    const link = document.getElementById(id) || (id === "next" && document.querySelector("tr[data-href]"));
    if (link) location.assign(link.getAttribute(link.dataset.href ? "data-href" : "href"));
  }

  const buttons = form ? Array.from(form.querySelectorAll("button[data-verdict]")) : [];
  if (form) {
    form.addEventListener("click", (ev) => {
      const button = ev.target.closest("button[data-verdict]");
      if (button) decide(button.dataset.verdict);
    });
    form.addEventListener("submit", (ev) => ev.preventDefault());
  }

  document.querySelectorAll("tr[data-href]").forEach((row) => {
    row.addEventListener("click", (ev) => {
      if (!ev.target.closest("a")) location.assign(row.dataset.href);
    });
  });

  document.addEventListener("keydown", (ev) => {
    const t = ev.target;
    if (t && (t.tagName === "INPUT" || t.tagName === "TEXTAREA" || t.tagName === "SELECT")) {
      if (ev.key === "Escape") t.blur();
      return;
    }
    if (ev.ctrlKey || ev.metaKey || ev.altKey) return;
    const b = /^[1-9]$/.test(ev.key)
      ? buttons.filter((x) => x.dataset.verdict !== "")[parseInt(ev.key, 10) - 1]
      : null;
    if (!b && ev.key !== "j" && ev.key !== "k") return;
    // deciding may move the focus into the reviewer field (a name is missing): the key must
    // not be typed there as well
    ev.preventDefault();
    if (b) decide(b.dataset.verdict);
    else go(ev.key === "j" ? "next" : "prev");
  });
  document.body.dataset.ready = "1"; // shortcuts are live (tests wait for this)
})();
