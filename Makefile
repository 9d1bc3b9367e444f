# lineage-listener: everything runs from a local virtualenv created on first use.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
DEMO_STAMP := $(VENV)/.installed-demo
SUDO   := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

.PHONY: install install-demo jars demo test test-spark35 test-lakehouse lakehouse-3.5 lakehouse-4.1 docs wheel bench bench-history bench-history-quick clean

## Everything to develop and test: the package (editable) with the test extras, and Debian's chromium.
install: $(STAMP)

## Only what the demo runs: the package (editable) and its CLI, with the server its ending points to.
install-demo: $(DEMO_STAMP)

$(DEMO_STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[server]'
	touch $(DEMO_STAMP)

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[test]'
	@# The UI tests drive Debian's chromium (no browser download from elsewhere).
	command -v chromium >/dev/null || { $(SUDO) apt-get update -qq && \
	  DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq chromium >/dev/null; }
	touch $(STAMP) $(DEMO_STAMP)

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

## Run a real sample PySpark job with zero-code capture, print lineage from the store, and show it in a browser.
demo: install-demo
	bash examples/demo.sh

## Spark's JVM classes archived per virtualenv (tests/jvm_cds.py): every Spark application of the suite starts
## faster; a JVM that cannot use the archive runs without it.
$(VENV)/spark-cds.jsa: $(STAMP)
	$(BIN)/python -m tests.jvm_cds $@

## The full test suite (real Spark local[2], real DuckDB files).
test: install jars $(VENV)/spark-cds.jsa
	LINEAGE_TEST_OTHER_SPARK_HOME=$$([ -x $(VENV35)/bin/python ] && $(VENV35)/bin/python -c \
	  'import os, pyspark; print(os.path.dirname(pyspark.__file__))') \
	$(BIN)/python -m pytest -q -p no:cacheprovider --ignore tests/lakehouse

## The suite on PySpark 3.5 in its own virtualenv. Run on the newest line only, to keep CI short: TPC-DS
## (the slowest file), and tests that exercise no version-specific code (UI, export formats, CLI errors
## over hand-made stores, store faults, graph queries, the lineage server and remote writer, redaction,
## the capture queue's bound, the copies/influence/window rules over stores, labels, policies and diffs
## over stores, access control, many writers of one store and batches that cannot be written, the store's
## rows, the bridge worker's adapter without a JVM, dataset names, SQL text and the walker on stored plans,
## the benchmarks' doctests, the docs and the package's structure); everything else that captures runs on both
## (labels read from Spark's metadata, and previews checked edge for edge against capture, included).
VENV35  := .venv-spark35
STAMP35 := $(VENV35)/.installed
SPARK35 ?= pyspark>=3.5,<3.6

$(STAMP35): pyproject.toml
	$(PYTHON) -m venv $(VENV35)
	$(VENV35)/bin/pip install --quiet --upgrade pip
	$(VENV35)/bin/pip install --quiet -e '.[test-core,lakehouse]' '$(SPARK35)' 'delta-spark==3.3.2'
	touch $(STAMP35)

$(VENV35)/spark-cds.jsa: $(STAMP35)
	$(VENV35)/bin/python -m tests.jvm_cds $@

test-spark35: $(STAMP35) jars $(VENV35)/spark-cds.jsa
	LINEAGE_TEST_OTHER_SPARK_HOME=$$([ -x $(BIN)/python ] && $(BIN)/python -c \
	  'import os, pyspark; print(os.path.dirname(pyspark.__file__))') \
	$(VENV35)/bin/python -m pytest -q -p no:cacheprovider --ignore tests/lakehouse \
	  --deselect tests/test_plan_reader.py::test_every_tpcds_query \
	  --ignore tests/test_tpcds.py --ignore tests/test_ui.py --ignore tests/test_datahub.py \
	  --ignore tests/test_openlineage.py --ignore tests/test_cli_errors.py --ignore tests/test_faults.py \
	  --ignore tests/test_query_graph.py --ignore tests/test_query_sql_macros.py --ignore tests/test_server.py \
	  --ignore tests/test_secrets.py --ignore tests/test_capture_queue.py \
  --ignore tests/test_openlineage_runs.py --ignore tests/test_openlineage_input.py \
  --ignore tests/test_cli_surface.py --ignore tests/test_newcomer.py --ignore tests/test_history.py \
  --ignore tests/test_kafka.py --ignore tests/test_export_tables.py --ignore tests/test_impact_semantics.py \
  --ignore tests/test_kept_paths.py --ignore tests/test_docs.py --ignore tests/test_structure.py \
  --ignore tests/test_diff.py --ignore tests/test_govern_doctests.py --ignore tests/test_governance.py \
  --ignore tests/test_governance_store.py --ignore tests/test_lookups.py --ignore tests/test_preview.py \
  --ignore tests/test_tls.py --ignore tests/test_file_modes.py --ignore tests/test_sql_text.py \
  --ignore tests/test_access.py --ignore tests/test_access_oidc.py \
  --ignore tests/test_docs_commands.py --ignore tests/docs_commands.py \
  --ignore tests/test_concurrent_writers.py --ignore tests/test_server_writers.py \
  --ignore tests/test_poison_batches.py --ignore tests/test_store_rows.py --ignore tests/test_bridge_worker.py \
  --ignore tests/test_labels_walk.py --ignore tests/test_naming.py --ignore tests/test_sqltext.py \
  --ignore tests/test_plan_fixtures.py --ignore tests/test_bench_doctests.py

## Delta Lake and Apache Iceberg (tests/lakehouse): real jars (`make jars`), a session of their own per
## Spark line. No Delta or Iceberg release supports PySpark 4.3 (the main virtualenv), so they run on
## PySpark 3.5 (Delta 3.3, Iceberg 1.12) and on the newest line both support, PySpark 4.1 (Delta 4.4,
## Iceberg 1.12), in its own virtualenv. delta-spark pins PySpark: installed with it, it cannot move it.
VENV41  := .venv-spark41
STAMP41 := $(VENV41)/.installed
SPARK41 ?= pyspark>=4.1,<4.2

$(STAMP41): pyproject.toml
	$(PYTHON) -m venv $(VENV41)
	$(VENV41)/bin/pip install --quiet --upgrade pip
	$(VENV41)/bin/pip install --quiet -e '.[test-core,lakehouse]' '$(SPARK41)' 'delta-spark==4.4.0'
	touch $(STAMP41)

## The two lines run side by side, each its own pytest process, JVM and temporary folder (a line's
## Spark session drives one core at a time most of the time); each line's output is printed whole when it ends.
test-lakehouse:
	$(MAKE) --no-print-directory -j2 --output-sync=target lakehouse-3.5 lakehouse-4.1

lakehouse-3.5: $(STAMP35) jars
	mkdir -p .pytest-tmp
	$(VENV35)/bin/python -m pytest -q -p no:cacheprovider --basetemp=$(CURDIR)/.pytest-tmp/lakehouse-3.5 tests/lakehouse

lakehouse-4.1: $(STAMP41) jars
	mkdir -p .pytest-tmp
	$(VENV41)/bin/python -m pytest -q -p no:cacheprovider --basetemp=$(CURDIR)/.pytest-tmp/lakehouse-4.1 tests/lakehouse

## The documentation site (docs/, mkdocs.yml) into site/, offline; any warning fails the build (a broken link,
## a page missing from the navigation, a cross-reference in a docstring). Not --quiet: it hides warnings from
## --strict.
docs: install
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --site-dir site

## A wheel with the bridge jar compiled in, against .venv's PySpark, offline (needs a JDK; the jar is never
## committed). Release pipelines run `python -m build` instead: it installs [build-system] requires, PySpark too.
wheel: install
	$(BIN)/pip wheel --quiet --no-build-isolation --no-deps -w dist .
	@ls dist/*.whl

## Benchmarks: walker speed on TPC-DS plans, capture cost per query and per micro-batch, query speed on a 10M-edge store,
## the lineage server under 200 concurrent writers for 5 minutes and bursts of 1,000 posts, Kafka (a real KRaft
## broker from the kafka-broker jar set: catch-up, latency, fail-over, outages, producer cost).
BENCH_STORE ?= /tmp/lineage-bench-10m.duckdb

bench: install
	$(BIN)/python bench/walker_bench.py
	$(BIN)/python bench/pycode_bench.py --runs 30
	$(BIN)/python bench/trips.py
	$(BIN)/python bench/bridge_overhead.py
	$(BIN)/python bench/startup_bench.py --pairs 5
	$(BIN)/python bench/capture_bench.py --quiet
	$(BIN)/python bench/concurrent_writers.py
	$(BIN)/python bench/streaming_bench.py --batches 20 --growth 1000
	$(BIN)/python bench/make_synthetic_store.py $(BENCH_STORE) --edges 10000000
	$(BIN)/python bench/query_bench.py $(BENCH_STORE) --runs 20
	$(BIN)/python bench/labels_bench.py $(BENCH_STORE) --runs 20
	$(BIN)/python bench/current_state_bench.py
	$(BIN)/python bench/server_bench.py $(BENCH_STORE) --runs 20
	$(BIN)/python bench/writers_bench.py --seconds 300 --clients 200 --burst 1000
	$(BIN)/python bench/ui_bench.py
	$(MAKE) jars $(STAMP35)
	$(BIN)/python bench/kafka_bench.py
	$(VENV35)/bin/python bench/merge_bench.py
	$(MAKE) bench-history
	$(BIN)/python bench/labels_bench.py $(HISTORY_STORE) --runs 20

## A year of history: 365 days x 300 daily jobs x ~1,000 edges (~110M edge rows) written through
## write_batch, depth-10 questions measured at day 30 and day 365. Hours on 2 cores (30 runs a batch, as a
## server grouping commits would; HISTORY_GROUP=1 writes one batch per run as capture does: ~3x slower);
## resumable: run it again to continue after the last finished day (progress in
## $(HISTORY_STORE).progress.json; FRESH=--fresh restarts).
HISTORY_STORE ?= /tmp/lineage-year.duckdb
HISTORY_GROUP ?= 30
bench-history: install
	$(BIN)/python bench/history_bench.py --days 365 --jobs 300 --edges 1000 --measure-at 30,last \
	  --group $(HISTORY_GROUP) --out $(HISTORY_STORE) $(FRESH)

## The same shape in minutes: 45 days of 60 jobs of ~300 edges, measured at day 30 and day 45.
bench-history-quick: install
	$(BIN)/python bench/history_bench.py --days 45 --jobs 60 --edges 300 --measure-at 30,last \
	  --out /tmp/lineage-history-quick.duckdb --fresh
	$(BIN)/python bench/labels_bench.py /tmp/lineage-history-quick.duckdb --runs 20

clean:
	rm -rf $(VENV) $(VENV35) $(VENV41) demo-output test-artifacts .pytest_cache .pytest-tmp build dist site *.egg-info
