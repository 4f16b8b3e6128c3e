# Every target brings .venv up to date itself, so a fresh clone needs nothing else.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
TEST_PLUGIN_DIR := build/test-plugins
TEST_STAMP := $(TEST_PLUGIN_DIR)/.installed
TEST_PLUGINS := $(wildcard tests/fixtures/*/pyproject.toml)
TEST_PLUGIN_SOURCES := $(wildcard tests/fixtures/*/*/*.py)

.PHONY: run test lint typecheck layers unit bench clean pkgtree systemd-tools

$(STAMP): pyproject.toml setup.py
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[test]'
	# Older checkouts installed the test-only plugin packages here; they must not be seen.
	$(BIN)/python -m pip uninstall --quiet -y pumice-broken-plugin pumice-example-plugin 2>/dev/null || true
	touch $(STAMP)

# The third-party plugin packages that the tests load through entry points (one of them is
# broken on purpose) go into their own directory, never into .venv: tests/conftest.py puts it
# on sys.path and PYTHONPATH, so only the test run sees them and `make run` does not.
$(TEST_STAMP): $(STAMP) $(TEST_PLUGINS) $(TEST_PLUGIN_SOURCES)
	rm -rf $(TEST_PLUGIN_DIR) && mkdir -p $(TEST_PLUGIN_DIR)
	for p in $(dir $(TEST_PLUGINS)); do $(BIN)/python -m pip install --quiet --no-deps --no-build-isolation --target $(TEST_PLUGIN_DIR) "./$$p" || exit 1; done
	touch $(TEST_STAMP)

# The daemon on the bundled example cluster, simulated in-process: a line per bind, then the
# nodes' utilisation; exits once nothing more can be scheduled.
run: $(STAMP)
	$(BIN)/pumice run --sim --until-idle

lint: $(STAMP)
	$(BIN)/ruff check scheduler plugins actions tests bench
	$(BIN)/ruff format --check scheduler plugins actions tests bench

# mypy and import-linter cannot follow setuptools' editable finder for a remapped package,
# so they read a hard-link tree laid out exactly as the wheel is: build/pkgtree/pumice/...
TREE := build/pkgtree
pkgtree:
	rm -rf $(TREE) && mkdir -p $(TREE)/pumice
	cp -al scheduler/. $(TREE)/pumice/
	for d in plugins actions conf; do cp -al $$d $(TREE)/pumice/$$d; done
	find $(TREE) -name __pycache__ -prune -exec rm -rf {} +

typecheck: $(STAMP) pkgtree
	cd $(TREE) && ../../$(BIN)/mypy --config-file ../../pyproject.toml -p pumice

layers: $(STAMP) pkgtree
	PYTHONPATH=$(TREE) $(BIN)/lint-imports --config pyproject.toml

# systemd-analyze checks systemd/pumice.service (its tests skip without it). Debian's systemd
# package provides it: installed with apt-get only when missing, and only as root.
systemd-tools:
	@command -v systemd-analyze >/dev/null || { [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null \
		&& apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq systemd >/dev/null; } \
		|| echo "systemd-analyze is missing: the unit's tests will be skipped"

unit: $(TEST_STAMP) systemd-tools
	$(BIN)/pytest -q

test: lint typecheck layers unit

bench: $(STAMP)
	@for b in bench/bench_*.py; do echo "== $$b"; $(BIN)/python -P $$b || exit 1; done

clean:
	rm -rf $(VENV) build dist *.egg-info .mypy_cache .ruff_cache .pytest_cache
