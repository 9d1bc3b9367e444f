# lineage-listener: everything runs from a local virtualenv created on first use.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
SUDO   := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

.PHONY: install jars demo test test-spark35 wheel bench clean

install: $(STAMP)

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[test]'
	@# The UI tests drive Debian's chromium (no browser download from elsewhere).
	command -v chromium >/dev/null || { $(SUDO) apt-get update -qq && \
	  DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq chromium >/dev/null; }
	touch $(STAMP)

## Test jars (Delta, Iceberg, Kafka) from Maven Central into .cache/jars/<set>, once per set; tests only.
## A set that cannot be fetched is reported and its tests skip with the reason (the rest still runs).
JARS := .cache/jars
jars:
	@for pom in tests/jars/*/pom.xml; do [ -f "$$pom" ] || continue; set=$$(basename $$(dirname $$pom)); \
	  [ -f $(JARS)/$$set/.fetched ] && continue; \
	  echo "fetching test jars: $$set"; rm -rf $(JARS)/$$set; \
	  if mvn -q -B -f $$pom dependency:copy-dependencies -DincludeScope=runtime \
	       -DoutputDirectory=$(CURDIR)/$(JARS)/$$set; then touch $(JARS)/$$set/.fetched; \
	  else echo "WARNING: could not fetch jar set $$set; its tests will skip"; fi; done

## Run a real sample PySpark job with zero-code capture, then print lineage from the store.
demo: install
	bash examples/demo.sh

## The full test suite (real Spark local[2], real DuckDB files).
test: install jars
	LINEAGE_TEST_OTHER_SPARK_HOME=$$([ -x $(VENV35)/bin/python ] && $(VENV35)/bin/python -c \
	  'import os, pyspark; print(os.path.dirname(pyspark.__file__))') \
	$(BIN)/python -m pytest -q -p no:cacheprovider

## The suite on PySpark 3.5 in its own virtualenv. Run on the newest line only, to keep CI short: TPC-DS
## (the slowest file), and tests that exercise no version-specific code (UI, export formats, CLI errors
## over hand-made stores, store faults, graph queries, the lineage server and remote writer, redaction,
## the capture queue's bound); everything else that captures runs on both.
VENV35  := .venv-spark35
STAMP35 := $(VENV35)/.installed
SPARK35 ?= pyspark>=3.5,<3.6

$(STAMP35): pyproject.toml
	$(PYTHON) -m venv $(VENV35)
	$(VENV35)/bin/pip install --quiet --upgrade pip
	$(VENV35)/bin/pip install --quiet -e '.[test-core]' '$(SPARK35)'
	touch $(STAMP35)

test-spark35: $(STAMP35) jars
	LINEAGE_TEST_OTHER_SPARK_HOME=$$([ -x $(BIN)/python ] && $(BIN)/python -c \
	  'import os, pyspark; print(os.path.dirname(pyspark.__file__))') \
	$(VENV35)/bin/python -m pytest -q -p no:cacheprovider \
	  --ignore tests/test_tpcds.py --ignore tests/test_ui.py --ignore tests/test_datahub.py \
	  --ignore tests/test_openlineage.py --ignore tests/test_cli_errors.py --ignore tests/test_faults.py \
	  --ignore tests/test_query_graph.py --ignore tests/test_query_sql_macros.py --ignore tests/test_server.py \
	  --ignore tests/test_secrets.py --ignore tests/test_capture_queue.py

## A wheel with the bridge jar compiled in (needs the JDK and PySpark of .venv; the jar is never committed).
wheel: install
	$(BIN)/pip wheel --quiet --no-build-isolation --no-deps -w dist .
	@ls dist/*.whl

## Benchmarks: walker speed on TPC-DS plans, query speed on a 10M-edge store.
BENCH_STORE ?= /tmp/lineage-bench-10m.duckdb

bench: install
	$(BIN)/python bench/walker_bench.py
	$(BIN)/python bench/bridge_overhead.py
	$(BIN)/python bench/capture_bench.py --quiet
	$(BIN)/python bench/concurrent_writers.py
	$(BIN)/python bench/make_synthetic_store.py $(BENCH_STORE) --edges 10000000
	$(BIN)/python bench/query_bench.py $(BENCH_STORE) --runs 20
	$(BIN)/python bench/server_bench.py $(BENCH_STORE) --runs 20
	$(BIN)/python bench/ui_bench.py

clean:
	rm -rf $(VENV) $(VENV35) demo-output test-artifacts .pytest_cache build dist *.egg-info
