# The commands the README shows. `make run` and `make test` do all the set-up themselves.
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: install run demo test lint typecheck unit bench schemas

install: $(STAMP)

$(STAMP): pyproject.toml producers/typescript/package-lock.json
	python3 -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[dev]'
	# Neo4j's own Cypher parser (Node) for the Neo4j-only statements' lint test.
	if command -v npm >/dev/null; then npm ci --prefix ops/cypher-lint --no-audit --no-fund --silent; fi
	# The bridge's TypeScript types and the Node clients of the bridge and MCP server (tests).
	if command -v npm >/dev/null; then npm ci --prefix producers/typescript --no-audit --no-fund --silent; fi
	# Headless Chromium for the graph view's browser test (Debian's package; root only, else skipped).
	if [ "$$(id -u)" = 0 ] && [ ! -x /usr/bin/chromium ] && command -v apt-get >/dev/null; then \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null \
	  || echo "chromium not installed: the graph view's browser test will be skipped"; fi
	touch $(STAMP)

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
	$(VENV)/bin/mypy schemas producers workers turngraph bench

## Lint, type-check and run the whole test suite (starts its own Redis and graph servers).
test: lint typecheck
	$(VENV)/bin/pytest -q -p no:cacheprovider

## Re-export the JSON Schemas from the pydantic models and the TypeScript types from them.
schemas: install
	$(PY) -m schemas.export
	npm run --silent types --prefix producers/typescript

unit: install
	$(VENV)/bin/pytest -q tests/unit
