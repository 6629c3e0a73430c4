# The two commands a new user runs: `make demo` and `make test`. Everything else is set-up they call.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
JARS   := build/jars
MVN    ?= mvn
JVM_GROUPS := $(notdir $(patsubst %/pom.xml,%,$(wildcard jvm/*/pom.xml)))
UDF_SOURCES := $(shell find jvm/udf/src -name '*.java' 2>/dev/null) jvm/udf/build.sh $(wildcard jvm/udf/*.py)

export PYSPARK_PYTHON := $(abspath $(BIN)/python)

.PHONY: all env jars wheel test test-chaos test-unit test-compat lint demo bench-trending bench-windows bench-hashtags bench-scale bench-sensors bench-temporal bench-temporal-core bench-library bench-latency soak broker clean check-tools check-test-tools docs docs-serve

all: env jars

check-tools:
	@scripts/check-tools

# The tools above and the programs the tests run (prometheus, promtool, docker-compose); as root
# with apt-get it installs missing ones, otherwise it says what to run.
check-test-tools:
	@scripts/check-tools --test

env: check-tools $(VENV)/.installed

# setuptools and wheel in the venv build the package's wheel offline (pip wheel
# --no-build-isolation, as tests/integration/test_installed_wheel.py does). setuptools is 77 or
# newer (the SPDX license string of pyproject.toml) and below 80.9: twitter-text-parser imports
# pkg_resources, which 80.9 deprecates with a UserWarning (an error under the tests' warning
# filter) and 81 removes. PYTHONWARNINGS keeps setuptools' notes on editable installs off the
# screen.
$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet 'setuptools>=77,<80.9' wheel
	PYTHONWARNINGS=ignore $(BIN)/pip install --quiet -e '.[dev,docs]'
	@touch $@

# JVM jars from Maven Central, declared once in jvm/*/pom.xml, copied into build/jars/<group>.
jars: check-tools $(foreach g,$(JVM_GROUPS),$(JARS)/$(g)/.fetched) $(JARS)/udf/trending-udf.jar

$(JARS)/%/.fetched: jvm/%/pom.xml
	@echo "fetching JVM jars: $*"
	@mkdir -p $(JARS)/$* && find $(JARS)/$* -name '*.jar' ! -name 'trending-*.jar' -delete
	@# Maven's output (colour codes even when quiet) is shown only when it fails
	@cd jvm/$* && $(MVN) -q -B dependency:copy-dependencies -DoutputDirectory=$(abspath $(JARS)/$*) \
	  > $(abspath $(JARS))/$*.mvn.log 2>&1 || { cat $(abspath $(JARS))/$*.mvn.log; exit 1; }
	@touch $@

$(JARS)/udf/trending-udf.jar: $(VENV)/.installed $(UDF_SOURCES) $(JARS)/udf/.fetched
	bash jvm/udf/build.sh $(abspath $(BIN)/python)

# The installable package: dist/trending-<version>-py3-none-any.whl, the project's jar inside
# (setup.py builds it); its users need no checkout, Maven or JDK compiler.
wheel: env jars
	rm -rf dist
	PYTHONWARNINGS=ignore $(BIN)/pip wheel --quiet --no-deps --no-build-isolation -w dist .
	@ls dist/*.whl

# The suite but its long fault-injection runs, on one worker per core (whole modules each)
test: check-test-tools env jars
	$(BIN)/pytest -m "not chaos" -n auto --dist loadfile

# The long fault-injection runs, one at a time: each already runs its jobs side by side
test-chaos: check-test-tools env jars
	$(BIN)/pytest -m chaos

test-unit: $(VENV)/.installed
	$(BIN)/pytest tests/unit -m "not tools"

# The library's tests (spl_window, temporal_window, SlidingTopK) on other pyspark versions, each
# in a venv of its own under build/compat (built once per version, a stamp file each), with the
# project's jar built for the pinned Spark: make test-compat PYSPARK_VERSIONS="4.1.0 4.3.0"
PYSPARK_VERSIONS ?= 4.1.0 4.3.0
test-compat: check-tools $(JARS)/udf/trending-udf.jar
	$(PYTHON) tests/compat/run.py $(PYSPARK_VERSIONS)

lint: env
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy

demo: env jars
	$(BIN)/trending demo

broker: env jars
	$(BIN)/trending broker

bench-trending: env jars
	$(BIN)/python bench/trending_bench.py --markdown docs/benchmarks/trending.md

bench-scale: env jars
	$(BIN)/python bench/scale_bench.py --markdown docs/benchmarks/scale.md

bench-sensors: env jars
	$(BIN)/python bench/sensors_bench.py --markdown docs/benchmarks/sensors.md

bench-windows: env jars
	$(BIN)/python bench/windows_bench.py --markdown docs/benchmarks/windows.md

bench-temporal: env jars
	$(BIN)/python bench/temporal_bench.py --markdown docs/benchmarks/temporal.md

bench-temporal-core: env
	$(BIN)/python bench/temporal_core_bench.py --markdown docs/benchmarks/temporal-core.md

bench-hashtags: env jars
	$(BIN)/python bench/hashtags_bench.py --markdown docs/benchmarks/hashtags.md

bench-library: env jars  # also writes the documentation's table (docs/benchmarks.md includes it)
	$(BIN)/python bench/library_bench.py --markdown docs/benchmarks/library.md

bench-latency: env jars  # steady live tweets: event-to-result latency, the job beside Spark's window count
	$(BIN)/python bench/latency_bench.py --markdown docs/benchmarks/latency.md

soak: env jars
	$(BIN)/python bench/soak_bench.py --markdown docs/benchmarks/soak.md

# The documentation site (mkdocs.yml, docs/): built --strict into build/site, or served with live
# reload on http://127.0.0.1:8000. The packages come with the package's docs extra.
docs: $(VENV)/.installed
	@$(BIN)/python -c 'import mkdocs, material, mkdocstrings_handlers.python' 2>/dev/null \
	  || PYTHONWARNINGS=ignore $(BIN)/pip install --quiet -e '.[docs]'
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --site-dir build/site

docs-serve: $(VENV)/.installed
	@$(BIN)/python -c 'import mkdocs, material, mkdocstrings_handlers.python' 2>/dev/null \
	  || PYTHONWARNINGS=ignore $(BIN)/pip install --quiet -e '.[docs]'
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs serve

clean:
	rm -rf build $(VENV) checkpoints data .pytest_cache .mypy_cache .ruff_cache
