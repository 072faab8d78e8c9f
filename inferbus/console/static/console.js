// The inferbus console: polls the JSON endpoints and renders them. Every value is set with
// textContent (never as HTML): event data is user input.
"use strict";

const API = "api/";
const POLL_MS = 2000;
const TOKEN = document.querySelector('meta[name="inferbus-token"]').content;
const rendered = {};  // section -> the JSON it shows: a section is rebuilt only when its data changed

function el(tag, attributes, children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes || {})) {
    if (name === "text") node.textContent = value === null || value === undefined ? "" : String(value);
    else node.setAttribute(name, String(value));
  }
  for (const child of children || []) node.append(child);
  return node;
}

function table(headings, rows) {
  if (rows.length === 0) return el("p", {class: "empty", text: "none"});
  const head = el("tr", {}, headings.map((h) => el("th", {text: h})));
  const body = rows.map((cells) => el("tr", {}, cells.map((cell) => {
    if (cell instanceof Node) return el("td", {}, [cell]);
    return el("td", typeof cell === "number" ? {class: "number", text: cell} : {text: cell});
  })));
  return el("table", {}, [el("thead", {}, [head]), el("tbody", {}, body)]);
}

function ms(value) {
  return value === null || value === undefined ? "" : Math.round(value) + " ms";
}

function say(text, good) {
  const status = document.getElementById("status");
  status.textContent = text;
  status.className = good ? "good" : "bad";
}

async function post(endpoint, body) {
  const response = await fetch(API + endpoint, {
    method: "POST",
    headers: {"Content-Type": "application/json", "X-Inferbus-Token": TOKEN},
    body: JSON.stringify(body),
  });
  const answer = await response.json();
  if (!response.ok) throw new Error(answer.error || response.statusText);
  return answer;
}

function renderTopology(data) {
  document.getElementById("summary").textContent =
    "bus " + data.bus + " in " + data.region + "; refreshed every " + POLL_MS / 1000 + " s";
  return [
    el("h3", {text: "Rules"}),
    table(["rule", "state", "targets", "events matched"],
      data.rules.map((r) => [r.name, r.state, r.targets.join(", "), r.matched])),
    el("h3", {text: "Queues"}),
    table(["queue", "component", "role", "visible", "in flight"],
      data.queues.map((q) => [q.name, q.component, q.role, q.visible, q.in_flight])),
    el("h3", {text: "Consumers"}),
    table(["consumer", "invocations", "records", "records failed", "invocation errors"],
      data.consumers.map((c) => [c.name, c.invocations, c.records, c.failed_records, c.errors])),
    el("h3", {text: "Workflows"}),
    table(["workflow", "executions by status"],
      data.workflows.map((w) => [w.name, Object.entries(w.executions).map(([s, n]) => s + " " + n).join(", ") || "none yet"])),
  ];
}

function decisionButton(review, decision) {
  const button = el("button", {type: "button", "data-action": decision, "data-workflow": review.workflow,
                               "data-transaction": review.transaction_id, text: decision});
  button.addEventListener("click", async () => {
    const note = document.querySelector('input[data-note="' + CSS.escape(review.transaction_id) + '"]');
    button.disabled = true;
    try {
      const answer = await post("reviews/decide", {
        workflow: review.workflow, transaction_id: review.transaction_id, decision: decision,
        reviewer: document.getElementById("reviewer").value, note: note ? note.value : "",
      });
      say(review.transaction_id + ": " + answer.outcome + (answer.detail ? " (" + answer.detail + ")" : ""), true);
    } catch (error) {
      say(review.transaction_id + ": " + error.message, false);
    }
    refresh();
  });
  return button;
}

function renderReviews(reviews) {
  const notes = {};  // keep what a reviewer typed across a refresh
  for (const input of document.querySelectorAll("input[data-note]")) notes[input.dataset.note] = input.value;
  return [table(["workflow", "case", "note", "decide"], reviews.map((review) => {
    if (!review.case) return [review.workflow, review.problem, "", ""];
    const details = el("dl", {}, Object.entries(review.case).flatMap(([key, value]) => [
      el("dt", {text: key}), el("dd", {text: typeof value === "object" ? JSON.stringify(value) : value})]));
    const note = el("input", {"data-note": review.transaction_id, placeholder: "note", autocomplete: "off"});
    note.value = notes[review.transaction_id] || "";
    return [review.workflow, details, note,
            el("span", {}, [decisionButton(review, "approve"), decisionButton(review, "reject")])];
  }))];
}

function redriveButton(queue) {
  const button = el("button", {type: "button", "data-action": "redrive", "data-queue": queue.queue,
                               text: "redrive to " + queue.source});
  button.addEventListener("click", async () => {
    button.disabled = true;
    try {
      const answer = await post("dead-letters/redrive", {queue: queue.queue});
      const kept = answer.not_moved.length ? "; kept: " + answer.not_moved.join("; ") : "";
      say(answer.queue + ": moved " + answer.moved + " back to " + answer.source + kept, !kept);
    } catch (error) {
      say(queue.queue + ": " + error.message, false);
    }
    refresh();
  });
  return button;
}

function renderDeadLetters(queues) {
  // Queues holding messages in full; the empty ones in one line (a stack has a DLQ per queue and per target).
  const empty = queues.filter((q) => q.messages.length === 0);
  return queues.filter((q) => q.messages.length > 0).flatMap((queue) => [
    el("h3", {text: queue.queue + (queue.component ? " (" + queue.component + ")" : "") + ": " +
                    queue.messages.length + " " + queue.kind}),
    queue.source ? redriveButton(queue) : el("p", {class: "hint", text: queue.why_not}),
    table(["event id", "verdict", "reason"], queue.messages.map((m) => [
      m.event_id || "?", el("span", {class: m.valid ? "good" : "bad", text: m.verdict}), m.reason])),
  ]).concat([el("p", {class: "empty", text: empty.length + " of " + queues.length + " queues empty: " +
                                            empty.map((q) => q.queue).join(", ")})]);
}

function renderExecutions(executions) {
  return [table(["workflow", "execution", "status", "started", "duration", "stages", "error"], executions.map((x) => [
    x.workflow, x.name,
    el("span", {class: "status-" + x.status, text: x.status + (x.waiting_for_review ? " (waiting for review)" : "")}),
    x.started, ms(x.duration_ms),
    el("ol", {class: "stages"}, x.stages.map((s) => el("li", {
      text: s.name + (s.duration_ms === null ? " (running)" : " " + ms(s.duration_ms)) + (s.visits > 1 ? " x" + s.visits : "")}))),
    [x.error, x.cause].filter(Boolean).join(": "),
  ]))];
}

function renderEvents(events) {
  return [table(["time", "source", "detail-type", "id", "subject"],
    events.map((e) => [e.time, e.source, e.detail_type, e.id, e.subject]))];
}

const SECTIONS = {
  "overview": ["topology", renderTopology],
  "reviews": ["reviews", renderReviews],
  "dead-letters": ["dead-letters", renderDeadLetters],
  "executions": ["executions", renderExecutions],
  "events": ["events", renderEvents],
};

async function refreshOne(endpoint) {
  const [id, render] = SECTIONS[endpoint];
  const response = await fetch(API + endpoint);
  const text = await response.text();
  if (!response.ok) throw new Error(endpoint + ": " + text);
  if (rendered[endpoint] === text) return;
  rendered[endpoint] = text;
  document.getElementById(id).replaceChildren(...render(JSON.parse(text)));
}

let refreshing = null;
function refresh() {
  // One refresh at a time; a click during one waits for it, then refreshes again.
  refreshing = (refreshing || Promise.resolve()).then(() =>
    Promise.all(Object.keys(SECTIONS).map(refreshOne)).catch((error) => say(error.message, false)));
  return refreshing;
}

refresh();
setInterval(refresh, POLL_MS);
