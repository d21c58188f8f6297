// A spawned `turngraph bridge`, as an editor extension runs it: one JSON request per line
// on stdin, one reply per line on stdout, in order.
import { spawn } from "node:child_process";
import { once } from "node:events";

export const PYTHON = process.env.TURNGRAPH_TEST_PYTHON;

export const SKIP_REASON = PYTHON
  ? false
  : "needs the services: run through pytest tests/integration/test_node_clients.py";

export class BridgeProcess {
  constructor(env = {}) {
    this.proc = spawn(PYTHON, ["-m", "turngraph.cli", "bridge"], {
      env: { ...process.env, ...env },
      stdio: ["pipe", "pipe", "pipe"],
    });
    this.pending = [];
    this.buffer = Buffer.alloc(0);
    this.stderr = "";
    this.proc.stderr.on("data", (chunk) => {
      this.stderr += chunk.toString("utf8");
    });
    this.proc.stdout.on("data", (chunk) => this.#take(chunk));
  }

  #take(chunk) {
    this.buffer = Buffer.concat([this.buffer, chunk]);
    let end;
    while ((end = this.buffer.indexOf(0x0a)) >= 0) {
      const line = this.buffer.subarray(0, end).toString("utf8");
      this.buffer = this.buffer.subarray(end + 1);
      const waiter = this.pending.shift();
      if (waiter) waiter.resolve(JSON.parse(line));
    }
  }

  /** Send one line (an object is JSON-encoded; a Buffer goes as raw bytes) and await its reply. */
  send(request) {
    const bytes = Buffer.isBuffer(request) ? request : Buffer.from(JSON.stringify(request), "utf8");
    return new Promise((resolve, reject) => {
      this.pending.push({ resolve, reject });
      this.proc.stdin.write(Buffer.concat([bytes, Buffer.from("\n")]));
    });
  }

  async close() {
    this.proc.stdin.end();
    const [code] = await once(this.proc, "exit");
    return code;
  }
}
