# pathkit: `make run` (set up + demo), `make test`, `make bench`, `make lint`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.pathkit-installed
PIP := $(BIN)/python -m pip
PLUGINS := plugins/encoders plugins/generators plugins/datasets plugins/metrics
EXAMPLE := examples/pathkit-example-plugin
INSTALL_INPUTS := pyproject.toml constraints.txt requirements-dev.txt $(addsuffix /pyproject.toml,$(PLUGINS)) $(EXAMPLE)/pyproject.toml $(wildcard $(EXAMPLE)/pathkit_example_plugin/*.py)

.PHONY: install run test test-all bench lint clean

$(STAMP): $(INSTALL_INPUTS)
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(PIP) install -q --upgrade pip
	$(PIP) install -q -c constraints.txt torch==2.14.1 torchvision==0.29.1
	$(PIP) install -q -c constraints.txt -r requirements-dev.txt -e . $(addprefix -e ,$(PLUGINS))
	# the example third-party plugin goes in as a regular (non-editable) package, as a user would install it
	$(PIP) install -q -c constraints.txt --no-deps --force-reinstall $(EXAMPLE)
	touch $(STAMP)

install: $(STAMP)

run: install
	$(BIN)/pathkit run

test: install
	$(BIN)/python -m pytest -q -m "not slow"

test-all: install
	$(BIN)/python -m pytest -q

bench: install
	@for script in benchmarks/bench_*.py; do echo "== $$script"; $(BIN)/python $$script || exit 1; done

lint: install
	$(BIN)/ruff check pathkit_core plugins tests benchmarks examples

clean:
	rm -rf $(VENV) pathkit-work
