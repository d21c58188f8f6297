// Drives the real `turngraph bridge` as an extension would and validates every request and
// every reply against the shipped JSON Schemas (schemas/json) with ajv. The schemas must
// agree with the bridge: a request the schema accepts is never refused as invalid, and a
// request it rejects is always refused.
import { test } from "node:test";
import assert from "node:assert/strict";
import { BridgeProcess, SKIP_REASON } from "./bridge_process.mjs";
import { check, loadValidators } from "./schemas.mjs";

const WORKSPACE = process.env.TURNGRAPH_TEST_WORKSPACE;
const QUERY = process.env.TURNGRAPH_TEST_QUERY;
const REFUSED = new Set(["INVALID_REQUEST", "UNKNOWN_OP", "INVALID_JSON", "INVALID_ENCODING"]);
const OPS = new Set([
  "publish", "recall", "flush", "status", "summarize", "recap", "summary", "promote", "context",
]);
const WAIT = 60_000; // distill ops: the maintenance worker may still be starting
const SECRET = "sk-proj-" + "Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4z";

function promotion(overrides = {}) {
  return {
    op: "promote",
    kind: "preference",
    text: "Prefer small pull requests with one concern each.",
    workspace: WORKSPACE,
    user: "node-user",
    session_id: "earlier-session",
    deadline_ms: WAIT,
    ...overrides,
  };
}

function turn(overrides = {}) {
  return {
    session_id: "node-session-1",
    workspace: WORKSPACE,
    user: "node-user",
    turn_index: 0,
    role: "user",
    content: "We chose drop_oldest for the ingest queue — café ☕ included.",
    client: { name: "node-test", version: "1.0.0" },
    ...overrides,
  };
}

// [request (or a function of the replies so far, by id), what the bridge must answer: "ok"
// or an error code]
const CASES = [
  [{ id: 1, op: "status" }, "ok"],
  [{ id: "p1", op: "publish", event: turn() }, "ok"],
  [
    {
      id: "p2",
      op: "publish",
      event: turn({
        turn_index: 1,
        role: "assistant",
        occurred_at: "2026-11-20T10:00:00+01:00",
        git: { branch: "main", commit: "abc1234", dirty: false },
        references: [{ kind: "file", value: "src/queue.ts" }],
        tags: ["decision"],
        importance: 0.9,
      }),
    },
    "ok",
  ],
  [{ id: 2, op: "flush", timeout_s: 10 }, "ok"],
  [{ id: 3, op: "recall", query: QUERY, workspace: WORKSPACE }, "ok"],
  [
    {
      id: 4,
      op: "recall",
      query: QUERY,
      workspace: WORKSPACE,
      session_id: "node-session-1",
      user: "node-user",
      scopes: ["workspace", "session"],
      conversation_context: [{ role: "user", content: "and the queue?" }],
      max_results: 500,
      max_tokens: 10,
      half_life_days: 1000,
      include_superseded: true,
      deadline_ms: 5000,
    },
    "ok",
  ],
  [{ id: 5, op: "publish", event: turn({ workspace: "/never/consented" }) }, "CONSENT_REQUIRED"],
  [{ id: 6, op: "recall", query: "q", max_results: "5" }, "INVALID_REQUEST"],
  [{ id: 7, op: "recall", query: "" }, "INVALID_REQUEST"],
  [{ id: 8, op: "status", verbose: true }, "INVALID_REQUEST"],
  [{ id: 9, op: "publish", event: turn({ content: undefined }) }, "INVALID_REQUEST"],
  [{ id: 10, op: "publish", event: turn({ occurred_at: "2026-11-20T10:00:00" }) }, "INVALID_REQUEST"],
  [{ id: 11, op: "publish", event: turn({ turn_index: -1 }) }, "INVALID_REQUEST"],
  [{ id: 12, op: "publish", event: turn({ workspace: "" }) }, "INVALID_REQUEST"],
  [{ id: 13, op: "flush", timeout_s: -1 }, "INVALID_REQUEST"],
  [{ id: true, op: "status" }, "INVALID_REQUEST"],
  [{ id: 14, op: "dance" }, "UNKNOWN_OP"],
  [{ id: 15 }, "UNKNOWN_OP"],
  [[1, 2, 3], "INVALID_REQUEST"],
  [Buffer.from("{not json"), "INVALID_JSON"],
  [Buffer.from([0x7b, 0xff, 0xfe, 0x7d]), "INVALID_ENCODING"],
  // Distilled memory, answered by the maintenance worker (the fixture ingested two turns of
  // "earlier-session").
  [{ id: "sum", op: "summarize", session_id: "earlier-session", last_n: 5, deadline_ms: WAIT }, "ok"],
  [(byId) => ({ id: "full", op: "summary", memory_id: byId.sum.summary.id, deadline_ms: WAIT }), "ok"],
  [{ id: "ctx", op: "context", session_id: "earlier-session" }, "ok"],
  [{ id: "ctx0", op: "context", session_id: "never-seen" }, "ok"],
  [
    { id: "recap", op: "recap", workspace: WORKSPACE, current_session_id: "node-session-1",
      budget_tokens: 300, deadline_ms: WAIT },
    "ok",
  ],
  [{ id: "prom", ...promotion({ scope: "user" }) }, "ok"],
  [{ id: "secret", ...promotion({ text: `deploy with OPENAI_API_KEY=${SECRET}` }) }, "REFUSED"],
  [{ id: 30, ...promotion({ workspace: "/never/consented" }) }, "CONSENT_REQUIRED"],
  [{ id: "nf", op: "summary", memory_id: "sum_nothing_here", deadline_ms: WAIT }, "NOT_FOUND"],
  [{ id: "cl", op: "summarize", session_id: "nobody", deadline_ms: 1_000_000_000 }, "NOT_FOUND"],
  [{ id: 31, op: "recap", budget_tokens: 300 }, "INVALID_REQUEST"],
  [{ id: 32, ...promotion({ kind: "opinion" }) }, "INVALID_REQUEST"],
  [{ id: 33, ...promotion({ scope: "session" }) }, "INVALID_REQUEST"],
  [{ id: 34, op: "summary", memory_id: "../etc/passwd" }, "INVALID_REQUEST"],
  [{ id: 35, op: "summarize", session_id: "s", last_n: 0 }, "INVALID_REQUEST"],
  [{ id: 36, op: "context" }, "INVALID_REQUEST"],
  [{ id: 16, op: "flush", timeout_s: 120 }, "ok"],
  [{ id: 17, op: "status" }, "ok"],
];

test("types/*.d.ts are generated from the current schemas", async () => {
  const { readFileSync } = await import("node:fs");
  const { join } = await import("node:path");
  const { renderAll, TYPES_DIR } = await import("../scripts/generate-types.mjs");
  for (const [name, text] of await renderAll()) {
    assert.equal(readFileSync(join(TYPES_DIR, name), "utf8"), text, `stale types/${name}`);
  }
});

test("every request and reply of a bridge session matches the shipped schemas", { skip: SKIP_REASON }, async () => {
  const validators = loadValidators();
  const bridge = new BridgeProcess();
  const replies = [];
  try {
    const answered = {};
    for (const [make, expected] of CASES) {
      const request = typeof make === "function" ? make(answered) : make;
      const reply = await bridge.send(request);
      if (reply.id !== undefined) answered[reply.id] = reply;
      replies.push(reply);
      const label = `${JSON.stringify(request).slice(0, 80)} -> ${JSON.stringify(reply).slice(0, 300)}`;
      if (expected === "ok") assert.equal(reply.success, true, label);
      else assert.equal(reply.error_code, expected, label);

      const isObject = !Buffer.isBuffer(request) && !Array.isArray(request);
      if (isObject) {
        // The schema accepts exactly what the bridge does not refuse as malformed.
        const schemaAccepts = validators.bridge_request(request);
        assert.equal(schemaAccepts, !REFUSED.has(reply.error_code), `schema vs bridge: ${label}`);
        if (typeof request.id === "string" || (Number.isInteger(request.id))) {
          assert.equal(reply.id, request.id, `id echoed: ${label}`);
        }
      }
      const op = isObject && OPS.has(request.op) ? request.op : null;
      check(validators, op ? `bridge_${op}_reply` : "bridge_error_reply", reply);
    }
  } finally {
    const code = await bridge.close();
    assert.equal(code, 0, bridge.stderr.slice(-2000));
  }
  const byId = Object.fromEntries(replies.filter((r) => r.id !== undefined).map((r) => [r.id, r]));
  assert.equal(byId.p1.buffered, true);
  assert.match(byId.p1.event_id, /^t_[0-9a-f]{32}$/);
  assert.equal(byId[2].pending, 0);
  assert.ok(byId[3].results.length >= 1, "recall finds the pre-ingested turn");
  assert.match(byId[3].memory_block, /<memory/);
  for (const result of byId[3].results) assert.ok(result.source_event_ids.length >= 1);
  assert.deepEqual(byId[4].clamped, {
    max_results: { requested: 500, used: 50 },
    max_tokens: { requested: 10, used: 100 },
    half_life_days: { requested: 1000, used: 90 },
  });
  assert.deepEqual(byId[16].clamped, { timeout_s: { requested: 120, used: 30 } });
  assert.equal(byId[17].publisher.published, 2);

  // Real content from the distill ops.
  assert.equal(byId.sum.summary.status, "Final");
  assert.equal(byId.sum.summary.source_event_ids.length, 2);
  assert.match(byId.sum.text, /^Topic: .*\n[\s\S]*Decisions:\n- .*drop_oldest/);
  assert.match(byId.sum.text, /NextSteps:\n- .*dropped events/);
  assert.equal(byId.full.kind, "summary");
  assert.equal(byId.full.text, byId.sum.text);
  assert.equal(byId.ctx.available, true);
  assert.deepEqual(byId.ctx.recent.map((turn) => turn.turn_index), [0, 1]);
  assert.ok(byId.ctx.tokens <= 1100);
  assert.ok(byId.ctx.conversation_context.length >= 2);
  check(validators, "bridge_recall_request", {
    op: "recall", query: QUERY, conversation_context: byId.ctx.conversation_context,
  });
  assert.equal(byId.ctx0.available, false);
  assert.ok(byId.recap.recap.tokens <= 300);
  assert.match(byId.recap.text.split("\n").at(-1), /^Where we stopped.*dropped events/);
  assert.equal(byId.prom.memory.scope, "user");
  assert.equal(byId.prom.memory.kind, "preference");
  assert.ok(!JSON.stringify(byId.secret).includes(SECRET));
  assert.deepEqual(byId.cl.clamped, { deadline_ms: { requested: 1_000_000_000, used: 120_000 } });
  assert.ok(byId[17].queue.enqueued >= 2, JSON.stringify(byId[17].queue));
});
