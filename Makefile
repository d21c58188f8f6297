# The commands the README shows. `make run` and `make test` do all the set-up themselves.
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: install install-dev run demo test test-wheel lint typecheck unit bench schemas count-lines

DEV_STAMP := $(VENV)/.installed-dev
PROGRESS := sh ops/with-progress.sh

## What running needs: the package and its runtime dependencies, nothing of the tests.
install: $(STAMP)

$(STAMP): pyproject.toml
	@echo "==> [1/2] Python virtual environment in $(VENV)"
	python3 -m venv $(VENV)
	$(PROGRESS) "pip" $(PY) -m pip install --quiet --upgrade pip
	@echo "==> [2/2] turngraph and its runtime packages (~500 MB in all: the graph server with its"
	@echo "    Java runtime in arcadedb-embedded, ONNX Runtime, numpy, usearch, the OpenAI and MCP"
	@echo "    clients). A first install takes a few minutes."
	$(PROGRESS) "pip install ." $(PY) -m pip install --progress-bar on -e .
	touch $(STAMP)
	@echo "==> installed: $(VENV)/bin/turngraph (add $(CURDIR)/$(VENV)/bin to PATH for editors;"
	@echo "    'make test' adds the test toolchain)"

## The test toolchain on top: the dev extra (pytest, ruff, mypy, the grammar engine, the
## graph view), Node packages for the Node clients' tests, headless Chromium, Neo4j's jars.
install-dev: $(DEV_STAMP)

NEO4J_POM := turngraph/embedded/neo4j-server.pom.xml

$(DEV_STAMP): $(STAMP) producers/typescript/package-lock.json ops/cypher-lint/package-lock.json tests/clients/package-lock.json $(NEO4J_POM)
	@echo "==> [1/6] the dev extra: pytest, ruff, mypy, import-linter, llguidance, neo4j-viz"
	$(PROGRESS) "pip install .[dev]" $(PY) -m pip install --progress-bar on -e '.[dev]'
	@# Neo4j's own Cypher parser (Node) for the Neo4j-only statements' lint test.
	@echo "==> [2/6] Node packages for the Cypher lint test (skipped without npm)"
	if command -v npm >/dev/null; then $(PROGRESS) "npm ci" npm ci --prefix ops/cypher-lint --no-audit --no-fund; fi
	@# The bridge's TypeScript types and the Node clients of the bridge and MCP server (tests).
	@echo "==> [3/6] Node packages for the bridge and MCP client tests (skipped without npm)"
	if command -v npm >/dev/null; then $(PROGRESS) "npm ci" npm ci --prefix producers/typescript --no-audit --no-fund; fi
	@# The editors' own CLIs (Claude Code, Codex, Gemini CLI) for the real-client tests (~900 MB).
	@echo "==> [4/6] Claude Code, Codex and Gemini CLI for the real-client tests (skipped without npm)"
	if command -v npm >/dev/null; then $(PROGRESS) "npm ci" npm ci --prefix tests/clients --no-audit --no-fund; fi
	@# Headless Chromium for the graph view's browser test (Debian's package; root only, else skipped).
	@echo "==> [5/6] headless Chromium for the graph view's browser test (root with apt-get only)"
	if [ "$$(id -u)" = 0 ] && [ ! -x /usr/bin/chromium ] && command -v apt-get >/dev/null; then \
	  $(PROGRESS) "apt-get install chromium" sh -c 'apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null' \
	  || echo "chromium not installed: the graph view's browser test will be skipped"; fi
	@# Neo4j 5.26 Community and Browser into Maven's cache, for the Neo4j tier of the tests and
	@# `turngraph services --graph neo4j` (which copies them into the data folder's cache).
	@echo "==> [6/6] Neo4j 5.26 Community and Browser through Maven (skipped without Java and Maven)"
	if command -v mvn >/dev/null && command -v java >/dev/null; then \
	  $(PROGRESS) "mvn dependency:resolve" mvn --batch-mode --quiet --no-transfer-progress --file $(NEO4J_POM) dependency:resolve \
	  || echo "Neo4j not fetched now: the Neo4j tier of the tests fetches it again"; \
	else echo "no Java or Maven: the Neo4j tier of the tests will be skipped"; fi
	touch $(DEV_STAMP)
	@echo "==> test toolchain installed: 'make test' runs the tests"

## Run the whole system on embedded defaults, show the demo, keep serving until Ctrl-C.
run: install
	$(VENV)/bin/turngraph up

## The same, ending after the demo (for scripts).
demo: install
	$(VENV)/bin/turngraph up --exit-after-demo

## import-linter and mypy read packages from folders: they run on the package laid out as it
## installs (schemas/ as turngraph/schemas, ...; ops/package_tree.py), so mypy's paths read
## turngraph/workers/... for workers/..., turngraph/schemas/... for schemas/...
TREE := build/package-tree

lint: install-dev
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(PY) ops/package_tree.py $(TREE)
	cd $(TREE) && PYTHONPATH=. $(CURDIR)/$(VENV)/bin/lint-imports

typecheck: install-dev
	$(PY) ops/package_tree.py $(TREE)
	cd $(TREE) && $(CURDIR)/$(VENV)/bin/mypy --cache-dir $(CURDIR)/.mypy_cache turngraph bench

## Lint, type-check and run the whole test suite (starts its own Redis and graph servers).
test: lint typecheck
	$(VENV)/bin/pytest -q -p no:cacheprovider -n 4 --dist loadfile --no-loadscope-reorder --durations=30

## The same suite against a non-editable wheel install (the tests that read the source
## folders themselves run in `make test` only): ops/test-wheel.sh.
test-wheel: install-dev
	VENV=$(VENV) bash ops/test-wheel.sh -n 4 --dist loadfile --no-loadscope-reorder

## Re-export the JSON Schemas from the pydantic models, the TypeScript types from them, and
## the ontology as Turtle.
schemas: install-dev
	$(PY) ops/schema_export.py
	$(PY) ops/ontology_export.py
	npm run --silent types --prefix producers/typescript

unit: install-dev
	$(VENV)/bin/pytest -q tests/unit

## Production lines of Python (non-blank, non-comment) in turngraph/ schemas/ producers/ workers/.
count-lines:
	python3 ops/count_lines.py
