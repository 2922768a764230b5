# trainkit — every target runs from the repository root.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
TK     := $(BIN)/trainkit
# A CPU build by default; choose yours, e.g. TORCH='torch==2.5.1' or TORCH=torch.
TORCH  ?= torch==2.13.0
# Jobs in the benchmark's tree (make bench N=10000); several sizes show the growth.
N      ?= 1000
export JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION ?= 20

.PHONY: setup synth check lint test schemas bench help

help: ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-10s %s\n", $$1, $$2}'

$(BIN)/trainkit: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q '$(TORCH)'
	$(BIN)/pip install -q -e '.[dev,rehearse]'
	@touch $@

setup: $(BIN)/trainkit ## create .venv with trainkit, dev tools and torch

synth: setup ## write generated/ from jobs/
	$(TK) synth

schemas: setup ## write schemas/ (JSON Schema of each definition kind)
	$(TK) schema

lint: setup ## ruff and mypy --strict
	$(BIN)/ruff check lib tests jobs
	$(BIN)/ruff format --check lib tests jobs
	$(BIN)/mypy

check: lint ## the PR gate: lint, generated/ and schemas/ up to date and valid
	$(TK) check
	$(TK) schema --check

test: setup ## run the test suite
	$(BIN)/pytest -q

bench: setup ## speed of synth, check and validate as ratios of one run (N jobs, default 1000)
	$(BIN)/python tests/bench.py --jobs $(N)
