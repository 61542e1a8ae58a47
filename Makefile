# Two commands a new machine needs: `make run` and `make test`. Both create .venv on first use.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed-stamp

.PHONY: run test bench lint clean

$(STAMP): pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[test,openai]'
	@touch $(STAMP)

## run: the seed's walk on this repository's README.md, against the embedded mock server
run: $(STAMP)
	$(BIN)/dshkit run "Read README.md and tell me what the project does." --workspace .

## test: the whole suite, in parallel workers, each with its own servers and ports
test: $(STAMP)
	HYPOTHESIS_PROFILE=ci $(BIN)/python -m pytest -n auto -q

bench: $(STAMP)
	for b in bench/*.py; do $(BIN)/python $$b || exit 1; done

## lint: ruff and mypy --strict (also run by the suite, tests/test_lint.py)
lint: $(STAMP)
	$(BIN)/ruff check harness mock_server conformance dshkit_view tests bench
	$(BIN)/mypy

clean:
	rm -rf $(VENV) .hypothesis build *.egg-info
