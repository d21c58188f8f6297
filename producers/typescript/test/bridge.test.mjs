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
const OPS = new Set(["publish", "recall", "flush", "status"]);

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

// [request, what the bridge must answer: "ok" or an error code]
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
    for (const [request, expected] of CASES) {
      const reply = await bridge.send(request);
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
  assert.ok(byId[17].queue.enqueued >= 2, JSON.stringify(byId[17].queue));
});
