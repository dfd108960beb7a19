// assay review: keyboard shortcuts, decisions and undo. No inline script anywhere (CSP);
// every request carries the session's CSRF token; text is only ever set with textContent.
"use strict";

(function () {
  const csrf = document.querySelector('meta[name="csrf-token"]').content;
  const form = document.getElementById("decide");
  const reviewer = document.getElementById("reviewer");
  const message = document.getElementById("message");
  const undoButton = document.getElementById("undo");
  const UNDO_KEY = "assay-undo";
  let locked = false;

  reviewer.value = localStorage.getItem("assay-reviewer") || "";
  reviewer.addEventListener("input", () => localStorage.setItem("assay-reviewer", reviewer.value.trim()));

  function say(text, kind) {
    message.textContent = text;
    message.className = kind || "info";
    message.hidden = !text;
  }

  function undoStack() {
    try { return JSON.parse(sessionStorage.getItem(UNDO_KEY) || "[]"); } catch (e) { return []; }
  }
  function setUndo(stack) {
    sessionStorage.setItem(UNDO_KEY, JSON.stringify(stack.slice(-50)));
    undoButton.hidden = stack.length === 0;
  }
  setUndo(undoStack());

  async function post(url, body) {
    const response = await fetch(url, {
      method: "POST",
      credentials: "same-origin",
      headers: { "Content-Type": "application/json", "X-CSRF-Token": csrf },
      body: JSON.stringify(body),
    });
    let data = {};
    try { data = await response.json(); } catch (e) { data = { error: response.status + " " + response.statusText }; }
    return { status: response.status, data: data };
  }

  function showConflict(c) {
    const box = document.getElementById("conflict");
    const text = "Changed by " + (c.reviewer || "someone") + " at " + (c.timestamp || "?") +
      " (now " + (c.status || "?") + ") since you loaded this page. Reload to see it before deciding.";
    if (box) {
      box.textContent = text;
      const again = document.createElement("button");
      again.type = "button";
      again.textContent = "reload";
      again.addEventListener("click", () => location.reload());
      box.appendChild(document.createTextNode(" "));
      box.appendChild(again);
      box.hidden = false;
    } else {
      say(text, "error");
    }
    locked = true;
    if (form) form.querySelectorAll("button").forEach((b) => { b.disabled = true; });
  }

  function name() {
    const who = reviewer.value.trim();
    if (!who) {
      say("Enter your name as reviewer first (top right).", "error");
      reviewer.focus();
      return null;
    }
    localStorage.setItem("assay-reviewer", who);
    return who;
  }

  async function decide(decision) {
    if (!form || locked) return;
    const who = name();
    if (!who) return;
    const body = {
      probe_id: form.dataset.probe,
      version: parseInt(form.dataset.version, 10),
      decision: decision,
      reviewer: who,
      note: document.getElementById("note").value,
    };
    if (decision === "edit") {
      const text = document.getElementById("edited_text");
      if (text) body.edited_text = text.value;
      body.edited_target = document.getElementById("edited_target").value;
    }
    say("saving…", "info");
    const r = await post("/api/decide", body);
    if (r.status === 200) {
      const stack = undoStack();
      stack.push({ probe_id: body.probe_id, version: r.data.version, url: form.dataset.self });
      setUndo(stack);
      location.assign(form.dataset.next || form.dataset.self);
    } else if (r.status === 409) {
      say("", "");
      showConflict(r.data.conflict || {});
    } else {
      say(r.data.error || ("error " + r.status), "error");
    }
  }

  async function undo() {
    const stack = undoStack();
    const last = stack[stack.length - 1];
    if (!last) { say("Nothing to undo.", "info"); return; }
    const who = name();
    if (!who) return;
    const r = await post("/api/undo", { probe_id: last.probe_id, version: last.version, reviewer: who });
    if (r.status === 200) {
      stack.pop();
      setUndo(stack);
      location.assign(last.url);
    } else if (r.status === 409) {
      const c = r.data.conflict || {};
      stack.pop();
      setUndo(stack);
      say("Cannot undo: " + (c.reviewer || "someone") + " decided on this probe since (" +
        (c.status || "?") + " at " + (c.timestamp || "?") + ").", "error");
    } else {
      say(r.data.error || ("error " + r.status), "error");
    }
  }

  function openEdit() {
    const box = document.getElementById("edit-box");
    if (!box) return;
    box.hidden = false;
    (document.getElementById("edited_text") || document.getElementById("edited_target")).focus();
  }

  function go(id) {
    // on a probe page: the next / previous probe; on the queue: its first probe
    const link = document.getElementById(id) || (id === "next" && document.querySelector("tr[data-href]"));
    if (link) location.assign(link.getAttribute(link.dataset.href ? "data-href" : "href"));
  }

  if (form) {
    form.addEventListener("click", (ev) => {
      const button = ev.target.closest("button");
      if (!button) return;
      if (button.dataset.decision) decide(button.dataset.decision);
      else if (button.dataset.action === "edit") openEdit();
    });
    form.addEventListener("submit", (ev) => ev.preventDefault());
    // Someone else's decision on this probe shows up without a reload.
    const poll = async () => {
      if (locked || document.hidden) return;
      try {
        const r = await fetch("/api/probe/" + encodeURIComponent(form.dataset.probe), { credentials: "same-origin" });
        if (!r.ok) return;
        const s = await r.json();
        if (s.version !== parseInt(form.dataset.version, 10) && s.latest) {
          showConflict({ reviewer: s.latest.reviewer, status: s.latest.status, timestamp: s.latest.timestamp });
        }
      } catch (e) { /* server gone: nothing to show */ }
    };
    setInterval(poll, 5000);
  }
  undoButton.addEventListener("click", undo);

  document.querySelectorAll("tr[data-href]").forEach((row) => {
    row.addEventListener("click", (ev) => {
      if (!ev.target.closest("a")) location.assign(row.dataset.href);
    });
  });

  document.addEventListener("keydown", (ev) => {
    const t = ev.target;
    const typing = t && (t.tagName === "INPUT" || t.tagName === "TEXTAREA" || t.tagName === "SELECT");
    if (typing) {
      if (ev.key === "Escape") t.blur();
      else if (ev.key === "Enter" && (ev.ctrlKey || ev.metaKey) && form && form.contains(t)) {
        ev.preventDefault();
        decide("edit");
      }
      return;
    }
    if (ev.ctrlKey || ev.metaKey || ev.altKey) return;
    const shortcuts = {
      a: () => decide("accept"),
      r: () => decide("reject"),
      e: openEdit,
      j: () => go("next"),
      k: () => go("prev"),
      u: undo,
    };
    if (!(ev.key in shortcuts)) return;
    // A shortcut may move the focus into a text field (the reviewer's name, when missing; the
    // edit box): the key must not be typed there as well.
    ev.preventDefault();
    shortcuts[ev.key]();
  });
  document.body.dataset.ready = "1"; // shortcuts are live (tests wait for this)
})();
