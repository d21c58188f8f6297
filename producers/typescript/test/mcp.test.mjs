// `turngraph mcp` driven by the MCP Inspector's CLI (@modelcontextprotocol/inspector, a
// client no one here wrote); each tool's structured result is checked against the
// bridge's reply schemas with ajv: the MCP server answers through the bridge's core
// (recap, summarize_recent and promote through a real maintenance worker).
import { test } from "node:test";
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { PYTHON, SKIP_REASON } from "./bridge_process.mjs";
import { check, loadValidators } from "./schemas.mjs";

const INSPECTOR = join(fileURLToPath(new URL("..", import.meta.url)), "node_modules", ".bin", "inspector");
const WORKSPACE = process.env.TURNGRAPH_TEST_WORKSPACE;
const QUERY = process.env.TURNGRAPH_TEST_QUERY;
const TOOLS = ["forget", "promote", "recall", "recap", "remember", "status", "summarize_recent"];

function inspector(...args) {
  // The Inspector passes the server only a safe default environment: hand over ours.
  const env = Object.entries(process.env)
    .filter(([key]) => key.startsWith("TURNGRAPH_") && !key.startsWith("TURNGRAPH_TEST_"))
    .flatMap(([key, value]) => ["-e", `${key}=${value}`]);
  const server = [PYTHON, "-m", "turngraph.cli", "mcp", "--workspace", WORKSPACE];
  // `turngraph mcp` answers `initialize` 2.8 s after its start at load 14 on two cores;
  // CI at load ~20 ran past the Inspector's 15 s default, so the bound is the call's own.
  const timeouts = ["--connect-timeout", "50000"];
  return new Promise((resolve) => {
    execFile(INSPECTOR, ["--cli", ...timeouts, ...env, ...server, ...args], { timeout: 60_000 }, (error, stdout, stderr) => {
      resolve({ code: error ? error.code ?? 1 : 0, stdout, stderr });
    });
  });
}

function parsed(run) {
  assert.ok(run.stdout.trim(), `no output; stderr: ${run.stderr.slice(-1500)}`);
  return JSON.parse(run.stdout);
}

test("the Inspector lists the memory's tools, portable as it judges them", { skip: SKIP_REASON }, async () => {
  const run = await inspector("--method", "tools/list", "--strict");
  assert.equal(run.code, 0, run.stderr.slice(-2000));
  const { tools } = parsed(run);
  assert.deepEqual(tools.map((tool) => tool.name).sort(), TOOLS);
  for (const tool of tools) {
    assert.ok(tool.description && !tool.description.includes("\n    "), tool.name);
    assert.equal(tool.inputSchema.type, "object");
  }
});

test("tool results through the Inspector match the bridge's reply schemas", { skip: SKIP_REASON }, async () => {
  const validators = loadValidators();
  const call = async (name, ...args) =>
    parsed(await inspector("--method", "tools/call", "--tool-name", name, ...(args.length ? ["--tool-arg", ...args] : [])));

  const recall = await call("recall", `query=${QUERY}`, "max_results=80");
  check(validators, "bridge_recall_reply", recall.structuredContent);
  assert.equal(recall.isError ?? false, false, JSON.stringify(recall));
  assert.ok(recall.structuredContent.results.length >= 1);
  assert.deepEqual(recall.structuredContent.clamped, { max_results: { requested: 80, used: 50 } });
  assert.match(recall.content[0].text, /<memory/);

  const remember = await call("remember", "content=Preference: tabs, not spaces, in Makefiles.");
  check(validators, "bridge_publish_reply", remember.structuredContent);
  assert.equal(remember.structuredContent.success, true);

  const status = await call("status");
  check(validators, "bridge_status_reply", status.structuredContent);
  assert.equal(status.structuredContent.redis_available, true);

  // Distilled memory, answered by the maintenance worker the fixture runs.
  const recap = await call("recap");
  check(validators, "bridge_recap_reply", recap.structuredContent);
  assert.equal(recap.isError ?? false, false, JSON.stringify(recap));
  assert.match(recap.content[0].text.split("\n").at(-1), /^Where we stopped/);

  const summarized = await call("summarize_recent", "session_id=earlier-session");
  check(validators, "bridge_summarize_reply", summarized.structuredContent);
  assert.equal(summarized.structuredContent.summary.status, "Final");
  assert.match(summarized.content[0].text, /^Topic: /);

  const promoted = await call("promote", "text=Prefer squash merges.", "kind=preference");
  check(validators, "bridge_promote_reply", promoted.structuredContent);
  assert.equal(promoted.structuredContent.memory.kind, "preference");

  const refused = await call("promote", `text=key ${"ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"}`, "kind=procedure");
  assert.equal(refused.isError, true);
  check(validators, "bridge_error_reply", refused.structuredContent);
  assert.equal(refused.structuredContent.error_code, "REFUSED");

  const forget = await call("forget");
  assert.equal(forget.isError, true);
  check(validators, "bridge_error_reply", forget.structuredContent);
  assert.equal(forget.structuredContent.error_code, "CONFIRMATION_REQUIRED");
  assert.match(forget.structuredContent.confirmation_token, /^[0-9a-f]{12}$/);
});
