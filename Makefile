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

## run: the seed's walk, decoded from a capture on disk
run: $(STAMP)
	$(BIN)/dshkit decode examples/seed-walk.sse --pretty

## test: the whole suite, in parallel workers, each with its own servers and ports
test: $(STAMP)
	HYPOTHESIS_PROFILE=ci $(BIN)/python -m pytest -n auto -q

bench: $(STAMP)
	$(BIN)/python bench/decode.py

lint: $(STAMP)
	$(BIN)/python -m pip install --quiet ruff mypy types-PyYAML
	$(BIN)/ruff check harness mock_server conformance tests bench
	$(BIN)/mypy

clean:
	rm -rf $(VENV) .hypothesis build *.egg-info
