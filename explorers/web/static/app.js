// kafka-mc explore: the page. State lives in the URL (#/path/0.3.1, #/s/KEY/path/...,
// optionally /fp/HEX), the server recomputes everything from the initial state.
"use strict";

const S = {
  session: "main",
  full: [0],        // the path walked, including steps ahead of the current one (forward)
  pos: 0,           // how many steps of `full` are shown
  labels: [],       // labels[n]: the action of step n, where known
  trace: null,      // the trace opened: {path, violation_step, loop, title, ...}
  data: null,       // the last state answer
  pending: null,    // a trace refused for its configuration, kept for "open it in its own"
  busy: 0,
};

const $ = (id) => document.getElementById(id);
const el = (tag, attrs = {}, ...kids) => {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (k === "class") e.className = v;
    else if (k === "text") e.textContent = v;
    else e.setAttribute(k, v);
  }
  for (const k of kids) e.append(k);
  return e;
};

function showMessage(text, adopt = false) {
  $("message-text").textContent = text;
  $("adopt").hidden = !adopt;
  $("message").hidden = false;
}
function clearMessage() { $("message").hidden = true; $("adopt").hidden = true; }

async function api(url, options = {}) {
  S.busy++;
  document.body.dataset.busy = "1";
  try {
    const r = await fetch(url, options);
    let body;
    try { body = await r.json(); } catch { body = { error: `${r.status} ${r.statusText}` }; }
    if (!r.ok) {
      const err = new Error(body.error || `${r.status}`);
      err.status = r.status;
      err.body = body;
      throw err;
    }
    return body;
  } finally {
    if (--S.busy === 0) delete document.body.dataset.busy;
  }
}

const shownPath = () => S.full.slice(0, S.pos + 1);

function hashFor(path, fp) {
  const s = S.session === "main" ? "" : `/s/${encodeURIComponent(S.session)}`;
  return `#${s}/path/${path.join(".")}` + (fp ? `/fp/${fp}` : "");
}

function parseHash() {
  const m = location.hash.match(/^#(?:\/s\/([^/]+))?\/path\/([^/]*)(?:\/fp\/([0-9a-fA-F]+))?$/);
  if (!m) return null;
  return { session: m[1] ? decodeURIComponent(m[1]) : "main", path: m[2], fp: m[3] || null };
}

async function show(fp = null) {
  const path = shownPath();
  const q = new URLSearchParams({ s: S.session, path: path.join(".") });
  if (fp) q.set("fp", fp);
  let data;
  try {
    data = await api(`/api/state?${q}`);
  } catch (e) {
    showMessage(e.message);
    return false;
  }
  S.data = data;
  for (const c of data.crumbs) S.labels[c.step] = c.action;
  const hash = hashFor(path, data.fingerprint);
  if (location.hash !== hash) history.replaceState(null, "", hash);
  render();
  return true;
}

function onTrace() {
  const t = S.trace;
  if (!t || t.session !== S.session) return false;
  const p = shownPath();
  return p.length <= t.path.length && p.every((k, i) => k === t.path[i]);
}

// --- rendering -------------------------------------------------------------------------------

function render() {
  const d = S.data;
  document.body.dataset.steps = String(S.pos);
  $("label").textContent = d.label;
  $("fingerprint").textContent = d.fingerprint;
  $("link").href = hashFor(shownPath(), d.fingerprint);
  $("download").href = `/api/download?${new URLSearchParams({ s: S.session, path: shownPath().join(".") })}`;
  $("back").disabled = S.pos === 0;
  $("forward").disabled = S.pos >= S.full.length - 1;
  $("step-count").textContent = `step ${S.pos} of ${S.full.length - 1}`;
  $("bounds").textContent = d.within_bounds ? "" : "(outside the state constraint)";
  renderCrumbs();
  renderTrace();
  renderActions(d.actions);
  renderChanges(d.changes);
  renderComponents(d.components);
  renderProperties(d.properties);
  renderDiagram();
}

function renderCrumbs() {
  const ol = $("crumbs");
  ol.replaceChildren();
  const t = onTrace() || (S.trace && S.trace.session === S.session &&
    S.full.length === S.trace.path.length && S.full.every((k, i) => k === S.trace.path[i]))
    ? S.trace : null;
  for (let n = 0; n < S.full.length; n++) {
    const full = n === 0 ? "initial state" : `${n}. ${S.labels[n] || "…"}`;
    const label = n === 0 ? full : `${n}. ${(S.labels[n] || "…").split("(")[0]}`;
    const li = el("li", { "data-step": String(n), title: full }, el("span", { text: label }));
    if (n === S.pos) li.classList.add("current");
    if (n > S.pos) li.classList.add("ahead");
    if (t && t.violation_step === n) {
      li.classList.add("violation");
      li.append(el("span", { class: "badge bad", text: `✗ ${t.property}` }));
    }
    if (t && t.loop === n) {
      li.classList.add("loop-start");
      li.append(el("span", { class: "badge loop", text: "↻ loop starts here" }));
    }
    li.addEventListener("click", () => { S.pos = n; show(); });
    ol.append(li);
  }
  const current = ol.querySelector("li.current");
  if (current && current.scrollIntoView) current.scrollIntoView({ block: "nearest", inline: "nearest" });
}

function renderTrace() {
  const t = S.trace;
  const panel = $("trace-panel");
  if (!t || t.session !== S.session) { panel.hidden = true; return; }
  panel.hidden = false;
  $("trace-title").textContent = t.title;
  $("trace-sentence").textContent = t.message ? `${t.sentence} (${t.message})` : t.sentence;
  const n = t.path.length - 1;
  $("trace-where").textContent = onTrace()
    ? `on the trace: step ${S.pos} of ${n}` + (t.violation_step === S.pos ? " — the violation" : "")
      + (t.loop === S.pos ? " — where the loop starts" : "")
    : "off the trace (a different action was taken)";
  $("to-violation").hidden = t.violation_step == null;
}

function renderActions(actions) {
  const ol = $("actions");
  ol.replaceChildren();
  $("action-count").textContent = `(${actions.length})`;
  $("no-actions").hidden = actions.length > 0;
  const next = S.pos < S.full.length - 1 ? S.full[S.pos + 1] : null;
  for (const a of actions) {
    const b = el("button", { class: "action", "data-index": String(a.index), "data-name": a.name,
      "data-label": a.label, title: a.label }, el("span", { class: "name", text: a.name }));
    if (a.params.length) {
      const ps = el("span", { class: "params" });
      for (const p of a.params) ps.append(el("span", { class: "param" },
        el("span", { class: "pname", text: `${p.name}=` }), el("span", { text: p.value })));
      b.append(ps);
    }
    if (a.index === next) b.classList.add("next");
    b.addEventListener("click", () => take(a.index));
    ol.append(el("li", {}, b));
  }
}

function renderChanges(changes) {
  const ul = $("changes");
  ul.replaceChildren();
  $("changes-box").hidden = S.pos === 0;
  for (const c of changes) ul.append(el("li", {}, el("code", { text: c })));
  if (S.pos > 0 && !changes.length) ul.append(el("li", { text: "(no change)" }));
}

function renderComponents(components) {
  const box = $("components");
  box.replaceChildren();
  for (const c of components) {
    const panel = el("section", { class: "panel", "data-component": c.name },
      el("h3", { text: c.name }), tree(c.tree));
    if (c.tree.ch) panel.classList.add("has-change");
    if (panel.querySelector("table.records")) panel.classList.add("wide");
    box.append(panel);
  }
}

const mark = (e, node) => {
  if (node.ch === 2) e.classList.add("changed");
  else if (node.ch === 1) e.classList.add("has-change");
  return e;
};
const scalar = (n) => n.t !== "rec" && n.t !== "map" && n.t !== "seq" && n.t !== "set";

function tree(node) {
  if (scalar(node)) return mark(el("span", { class: `scalar t-${node.t}`, text: node.v }), node);
  if (!node.c.length) {
    const empty = { seq: "⟨⟩", set: "∅", rec: "[]", map: "()" }[node.t];
    return mark(el("span", { class: "empty", text: empty }), node);
  }
  if (node.t === "set" && node.c.every(([, k]) => scalar(k))) {
    const s = mark(el("span", { class: "set" }), node);
    s.append("{ ");
    node.c.forEach(([, k], i) => { if (i) s.append(", "); s.append(tree(k)); });
    s.append(" }");
    return s;
  }
  if (node.t === "seq" && isTable(node)) return table(node);
  const dl = mark(el("div", { class: `tree ${node.t}` }), node);
  for (const [k, v] of node.c) {
    dl.append(mark(el("div", { class: "row" },
      el("span", { class: "key", text: node.t === "seq" ? `[${k}]` : k }), tree(v)), v));
  }
  return dl;
}

function isTable(node) {  // a sequence of records with the same fields: a table (a partition log)
  const first = node.c[0][1];
  if (first.t !== "rec") return false;
  const keys = first.c.map(([k]) => k).join("\u0000");
  return node.c.every(([, r]) => r.t === "rec" && r.c.map(([k]) => k).join("\u0000") === keys);
}

function table(node) {
  const cols = node.c[0][1].c.map(([k]) => k);
  const t = mark(el("table", { class: "records" }), node);
  t.append(el("tr", {}, el("th", { text: "#" }), ...cols.map((c) => el("th", { text: c }))));
  for (const [i, r] of node.c) {
    const tr = mark(el("tr", {}, el("td", { class: "index", text: i })), r);
    for (const [, v] of r.c) {
      tr.append(mark(el("td", {}, scalar(v) ? tree(v) : el("span", { class: "compact", text: compact(v) })), v));
    }
    t.append(tr);
  }
  return t;
}

function compact(node) {  // a nested value on one line, inside a table cell
  if (scalar(node)) return node.v;
  const kids = node.c.map(([k, v]) => (node.t === "rec" || node.t === "map" ? `${k}=` : "") + compact(v));
  const [open, close] = { rec: ["(", ")"], map: ["(", ")"], seq: ["⟨", "⟩"], set: ["{", "}"] }[node.t];
  return open + kids.join(", ") + close;
}

// A long name may wrap after each underscore (a narrow column), never inside a word.
const breakable = (name) => name.split("_").flatMap((part, i, all) =>
  i < all.length - 1 ? [part + "_", document.createElement("wbr")] : [part]);

function renderProperties(props) {
  const body = $("properties").tBodies[0];
  body.replaceChildren();
  for (const p of props) {
    const cls = p.verdict === "violated" || p.verdict.startsWith("error") ? "bad"
      : p.verdict === "holds" || p.verdict === "witnessed" ? "ok" : "neutral";
    body.append(el("tr", { "data-property": p.name, "data-verdict": p.verdict, class: cls,
      title: p.claim || "" },
      el("td", { class: "pname" }, ...breakable(p.name)), el("td", { class: "kind", text: p.kind }),
      el("td", { class: "verdict", text: p.verdict })));
  }
}

function renderDiagram() {
  const t = S.trace && S.trace.session === S.session && onTrace() ? S.trace : null;
  const d = $("diagram");
  if (t) {
    $("diagram-title").textContent = "Sequence diagram of the trace";
    d.innerHTML = t.svg;  // drawn by traces.render, labels escaped there
    $("mermaid").textContent = t.mermaid;
    $("mermaid-box").hidden = false;
  } else {
    $("diagram-title").textContent = "Sequence diagram of the path";
    d.innerHTML = S.data.diagram || "<p class=\"hint\">Take a step to start the diagram.</p>";
    $("mermaid-box").hidden = true;
  }
}

// --- navigation --------------------------------------------------------------------------------

async function take(index) {
  clearMessage();
  if (S.full[S.pos + 1] !== index) {  // a new branch: drop what lay ahead
    S.full = S.full.slice(0, S.pos + 1).concat([index]);
    S.labels = S.labels.slice(0, S.pos + 1);
  }
  S.pos++;
  if (!(await show())) S.pos--;
}

async function move(delta) {
  const pos = S.pos + delta;
  if (pos < 0 || pos > S.full.length - 1) return;
  clearMessage();
  S.pos = pos;
  await show();
}

async function openTrace(text, name, adopt = false) {
  const q = new URLSearchParams({ s: S.session });
  if (adopt) q.set("adopt", "1");
  if (name) q.set("name", name);
  let t;
  try {
    t = await api(`/api/trace?${q}`, { method: "POST", body: text,
      headers: { "Content-Type": "application/json" } });
  } catch (e) {
    if (e.status === 409 && e.body && e.body.adopt) {
      S.pending = { text, name };
      showMessage(e.message, true);
    } else showMessage(e.message);
    return;
  }
  clearMessage();
  await loadTrace(t);
}

async function loadTrace(t) {
  S.trace = t;
  S.session = t.session;
  S.full = t.path.slice();
  S.labels = [""].concat(t.steps);
  S.pos = 0;
  await loadSessions();
  await show();
}

async function loadSessions() {
  const { sessions } = await api("/api/sessions");
  const sel = $("session");
  sel.replaceChildren(...sessions.map((s) => el("option", { value: s.key, text: s.label })));
  sel.value = S.session;
  sel.hidden = sessions.length < 2;
}

function wire() {
  $("back").addEventListener("click", () => move(-1));
  $("forward").addEventListener("click", () => move(1));
  $("to-violation").addEventListener("click", () => {
    if (!S.trace) return;
    S.session = S.trace.session;
    S.full = S.trace.path.slice();
    S.pos = S.trace.violation_step;
    show();
  });
  $("dismiss").addEventListener("click", clearMessage);
  $("adopt").addEventListener("click", () => {
    if (S.pending) openTrace(S.pending.text, S.pending.name, true);
  });
  $("trace-file").addEventListener("change", async (ev) => {
    const f = ev.target.files[0];
    if (!f) return;
    const text = await f.text();
    ev.target.value = "";
    openTrace(text, f.name);
  });
  $("session").addEventListener("change", (ev) => {
    S.session = ev.target.value;
    S.full = [0]; S.pos = 0; S.labels = [];
    clearMessage();
    show();
  });
  document.addEventListener("keydown", (ev) => {
    if (ev.target.tagName === "INPUT" || ev.target.tagName === "SELECT") return;
    if (ev.key === "ArrowLeft") move(-1);
    if (ev.key === "ArrowRight") move(1);
  });
  window.addEventListener("hashchange", () => fromHash());
}

async function fromHash() {
  const h = parseHash();
  if (!h) return false;
  const path = h.path === "" ? [0] : h.path.split(".").map(Number);
  // (already shown: a hash this page wrote; on a fresh load nothing is shown yet, not even a
  // link to the initial state)
  if (S.data && h.session === S.session && path.join(".") === shownPath().join(".")) return true;
  S.session = h.session;
  if (!(path.length <= S.full.length && path.every((k, i) => k === S.full[i]))) {
    S.full = path; S.labels = [];
  }
  S.pos = path.length - 1;
  await show(h.fp);
  return true;
}

async function start() {
  wire();
  try { await loadSessions(); } catch (e) { showMessage(e.message); }
  if (await fromHash()) return;
  try {
    const t = await api("/api/trace");
    await loadTrace(t);
    return;
  } catch (e) { if (e.status !== 404) showMessage(e.message); }
  await show();
}

start();
