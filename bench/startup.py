"""Command start-up: how long a person waits for ``turngraph --help`` and an editor for
``turngraph mcp`` to answer ``initialize``, against the bare interpreter in the same run.

``python -m bench.startup [--runs N]`` runs each row N times (new process each time) and
prints p50 and max wall time and the ratio of the p50 to ``python -c pass``:

- ``python -c pass``: the interpreter alone, the reference of this run;
- ``turngraph --help``: the command listing (no command module imported);
- ``turngraph mcp --help``: one command's own help (its module imported);
- ``turngraph mcp`` to ``initialize``: process start to the ``initialize`` reply on
  stdout (the MCP SDK loaded, the bridge built; no services needed, a fresh data folder);
- ``turngraph up`` to its handlers: process start until SIGTERM is caught (``/proc``),
  the moment from which a Ctrl-C stops it in one line;
- the local model loaded: a process that builds the shipped embedding pair and exits,
  what every ingest, recall and maintenance worker and ``turngraph doctor`` do before
  their first turn or check (``workers/embeddings/factory.py``).

Also the modules ``turngraph --help`` imports (``-X importtime``). Ends with
``RESULT startup ...``. Run it on an idle machine for figures to compare: under load every
row, the reference included, grows.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from bench.report import percentile, result_line, table

INITIALIZE = json.dumps(
    {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "bench.startup", "version": "1"},
        },
    }
)


LOAD_MODEL = (
    "from turngraph.workers.embeddings.factory import default_local_embedder; "
    "default_local_embedder()"
)
"""What a worker does to load the local model (the shipped pair)."""


def _env(data_dir: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("TURNGRAPH_")}
    env.update(TURNGRAPH_DATA_DIR=str(data_dir), TURNGRAPH_LOG_LEVEL="ERROR")
    return env


def _timed_run(argv: list[str], env: dict[str, str]) -> float:
    started = time.perf_counter()
    subprocess.run(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    return time.perf_counter() - started


def _mcp_initialize(env: dict[str, str]) -> float:
    started = time.perf_counter()
    server = subprocess.Popen(
        [sys.executable, "-m", "turngraph", "mcp"],
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    assert server.stdin is not None and server.stdout is not None
    try:
        server.stdin.write(INITIALIZE + "\n")
        server.stdin.flush()
        reply = json.loads(server.stdout.readline())
        elapsed = time.perf_counter() - started
        assert reply.get("id") == 1 and "result" in reply, reply
        return elapsed
    finally:
        server.stdin.close()
        server.terminate()
        server.wait(timeout=30)


def _sigterm_caught(pid: int) -> bool:
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return False
    caught = next(line for line in status.splitlines() if line.startswith("SigCgt:"))
    return bool(int(caught.split()[1], 16) & (1 << (signal.SIGTERM - 1)))


def _up_handlers(env: dict[str, str]) -> float:
    started = time.perf_counter()
    up = subprocess.Popen(
        [sys.executable, "-m", "turngraph", "up"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        while not _sigterm_caught(up.pid):
            if up.poll() is not None:
                raise RuntimeError("`turngraph up` ended before its handlers were in place")
            time.sleep(0.001)  # polling another process's state
        return time.perf_counter() - started
    finally:
        up.send_signal(signal.SIGTERM)
        up.wait(timeout=60)


def _modules_of_help(env: dict[str, str]) -> int:
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "turngraph", "--help"],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    return sum(1 for line in done.stderr.splitlines() if line.startswith("import time:")) - 1


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.startup", description=__doc__)
    parser.add_argument("--runs", type=int, default=5, help="runs per row (default 5)")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="bench-startup-") as folder:
        env = _env(Path(folder) / "data")
        python = [sys.executable]
        rows: dict[str, Callable[[], float]] = {
            "python -c pass": lambda: _timed_run([*python, "-c", "pass"], env),
            "turngraph --help": lambda: _timed_run([*python, "-m", "turngraph", "--help"], env),
            "turngraph mcp --help": lambda: _timed_run(
                [*python, "-m", "turngraph", "mcp", "--help"], env
            ),
            "turngraph mcp to initialize": lambda: _mcp_initialize(env),
            "turngraph up to its handlers": lambda: _up_handlers(env),
            "the local model loaded": lambda: _timed_run([*python, "-c", LOAD_MODEL], env),
        }
        times = {name: [measure() for _ in range(args.runs)] for name, measure in rows.items()}
        modules = _modules_of_help(env)
    load = os.getloadavg()[0]
    reference = percentile(times["python -c pass"], 50)
    print(
        table(
            ["row", "p50 s", "max s", "p50 / python -c pass"],
            [
                [name, percentile(ts, 50), max(ts), percentile(ts, 50) / reference]
                for name, ts in times.items()
            ],
        )
    )
    print(f"modules imported by `turngraph --help`: {modules}; load average {load:.1f}")
    print(
        result_line(
            "startup",
            runs=args.runs,
            python_p50_s=reference,
            help_p50_s=percentile(times["turngraph --help"], 50),
            mcp_help_p50_s=percentile(times["turngraph mcp --help"], 50),
            mcp_initialize_p50_s=percentile(times["turngraph mcp to initialize"], 50),
            up_handlers_p50_s=percentile(times["turngraph up to its handlers"], 50),
            model_p50_s=percentile(times["the local model loaded"], 50),
            help_modules=modules,
            load_1m=load,
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
