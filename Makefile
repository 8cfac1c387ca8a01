# Set-up and every task of the project. `make demo` and `make test` do the whole set-up themselves.
SHELL := /bin/bash
PYTHON ?= python3.11
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
PIP := $(VENV)/.pip
STACK_DIR := cdktf.out/stacks/segment-data-lake
TF_PLUGIN_DIR ?= /opt/tf-plugins
# jsii prints a banner on every synth unless this lists the running Node's major version (20 here)
export JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION := $(shell node -p 'process.versions.node.split(".")[0]' 2>/dev/null)
export BC_SKIP_MAPPING := TRUE
export CHECKOV_RUN_SCA_PACKAGE_SCAN_V2 := false
# hadoop-aws and the AWS SDK bundle give pyspark an s3a:// filesystem; no Maven here, so they
# come from the PyPI sdist of sagemaker-pyspark, extracted into a cache that is never committed.
JARS_DIR := .cache/jars
SAGEMAKER_SDIST := .cache/downloads/sagemaker_pyspark-1.4.5.tar.gz
JARS := $(JARS_DIR)/hadoop-aws-3.3.1.jar $(JARS_DIR)/aws-java-sdk-bundle-1.11.901.jar
export SEGMENT_LAKE_SPARK_JARS := $(abspath $(JARS_DIR)/hadoop-aws-3.3.1.jar),$(abspath $(JARS_DIR)/aws-java-sdk-bundle-1.11.901.jar)
# Apache Iceberg for local Spark (EMR brings its own): the runtime jar from the PyPI wheel snowpark-connect-deps-iceberg,
# and the relocated Jackson it expects beside it, written from pyspark's own Jackson (workload/local/iceberg_jars.py)
ICEBERG_WHEEL := .cache/downloads/snowpark_connect_deps_iceberg-1.0.3-py3-none-any.whl
ICEBERG_RUNTIME := $(JARS_DIR)/iceberg-spark-runtime-3.5_2.12-1.10.2.jar
ICEBERG_JACKSON := $(JARS_DIR)/iceberg-jackson-2.15.2.jar
ICEBERG_JARS := $(ICEBERG_RUNTIME) $(ICEBERG_JACKSON)
# the Iceberg lakes' local Spark (iceberg_tables.local_jars)
export SEGMENT_LAKE_ICEBERG_JARS := $(abspath $(ICEBERG_RUNTIME)),$(abspath $(ICEBERG_JACKSON))
# Iceberg's Glue catalog with the AWS SDK v2 it calls, for a local Spark that keeps Iceberg tables in Glue (the tests,
# against the local endpoint): Iceberg 1.9.0 from the jar inside the PyPI sdist of sagemaker-feature-store-pyspark
# (360 MB), its Iceberg classes moved back to org.apache.iceberg (workload/local/iceberg_jars.py --glue-jar). It
# replaces the two jars above in a JVM: SEGMENT_LAKE_ICEBERG_JARS=$(abspath $(ICEBERG_GLUE)).
GLUE_SDIST := .cache/downloads/sagemaker_feature_store_pyspark-2.2.2.tar.gz
GLUE_SOURCE_JAR := sagemaker-feature-store-spark-sdk-3.5.jar
ICEBERG_GLUE := $(JARS_DIR)/iceberg-glue-runtime-1.9.0.jar
export SEGMENT_LAKE_ICEBERG_GLUE_JAR := $(abspath $(ICEBERG_GLUE))
# DuckDB 1.5.5 and its Iceberg and Avro extensions, apart from the project's DuckDB: the tests' second Iceberg reader
DUCKDB_ICEBERG := .cache/duckdb-iceberg
export SEGMENT_LAKE_DUCKDB_ICEBERG := $(abspath $(DUCKDB_ICEBERG))
DEMO := .demo
DEMO_SOURCE := Kq8dV1bX2c
# the demo lake's table format: parquet (Segment's layout) or iceberg (make demo TABLE_FORMAT=iceberg)
TABLE_FORMAT ?= parquet
LAKE := $(VENV)/bin/segment-lake
# uv installs the same pinned set as pip (pip freeze agrees) in 2 min 3 s where pip took 3 min 24 s here, caches warm.
# The bytecode is compiled at set-up, as pip does: where PYTHONDONTWRITEBYTECODE is set (this machine), no process would
# write it, and each would compile checkov, botocore and pyspark anew (the suite took 7 minutes longer so). Not for
# CDK Terrain's provider (200 MB of source; it loads only the modules used) nor sympy (no command imports it): the
# compiling took 77 s here, 55 s so (make setup on a clean clone: 2 min 22 s -> 1 min 41 s). A file that does not compile
# is named and skipped, as pip and uv do.
NOT_COMPILED := site-packages/(cdktn_provider_aws|sympy)/
UV_VERSION := 0.13.9
UV := $(VENV)/bin/uv

# The sync app's bundle for EMR (workload/emr/build_bundle.py): the app and the runtime wheels pinned with
# hashes in workload/emr/runtime.lock, downloaded once; the build itself is offline and reproducible.
EMR_WHEELS := .cache/emr-wheels
BUNDLE := constructs/segment_data_lake/app/segment-lake-app.zip
BUNDLE_INPUTS := $(shell find workload/emr workload/src/segment_lake contract -type f -not -path '*__pycache__*' 2>/dev/null)

.PHONY: setup setup-parts bundle dist synth validate scan demo sync-demo test test-fast soak bench clean

# The downloads (jars, wheels) need only pip: they run while the packages install and compile (12-15 s sooner here)
setup:
	@$(MAKE) --no-print-directory --jobs=4 setup-parts

setup-parts: $(STAMP) $(JARS) $(ICEBERG_JARS) $(ICEBERG_GLUE) $(DUCKDB_ICEBERG)/.complete $(BUNDLE)
	@:

bundle: $(BUNDLE)

# Three wheels: the contract, the constructs (with the bundle and policy templates inside) and the sync app.
# The constructs: pip install dist/segment_lake_contract-*.whl dist/segment_data_lake_cdktf-*.whl
dist: setup
	rm -rf build dist && $(PY) -m pip wheel --quiet --no-deps --no-build-isolation --wheel-dir dist ./contract . ./workload
	@ls dist/*.whl

$(EMR_WHEELS)/.complete: workload/emr/runtime.lock | $(PIP)
	rm -rf $(EMR_WHEELS) && mkdir -p $(EMR_WHEELS)
	$(PY) -m pip download --quiet --no-deps --require-hashes --only-binary=:all: --python-version 3.11 \
		--implementation cp --platform manylinux2014_x86_64 --dest $(EMR_WHEELS) --requirement workload/emr/runtime.lock
	touch $@

$(BUNDLE): $(EMR_WHEELS)/.complete $(BUNDLE_INPUTS)
	$(PY) workload/emr/build_bundle.py --wheels $(EMR_WHEELS) --output $@

$(SAGEMAKER_SDIST): | $(PIP)
	mkdir -p $(dir $@)
	$(PY) -m pip download --quiet --no-deps --no-binary :all: sagemaker-pyspark==1.4.5 -d $(dir $@)

$(JARS): $(SAGEMAKER_SDIST)
	mkdir -p $(JARS_DIR)
	tar -xzf $(SAGEMAKER_SDIST) -C $(JARS_DIR) --strip-components=3 sagemaker_pyspark-1.4.5/deps/jars/$(notdir $@)
	touch $@

$(ICEBERG_WHEEL): | $(PIP)
	mkdir -p $(dir $@)
	$(PY) -m pip download --quiet --no-deps --only-binary=:all: snowpark-connect-deps-iceberg==1.0.3 -d $(dir $@)

$(ICEBERG_JARS) &: $(ICEBERG_WHEEL) workload/local/iceberg_jars.py | $(STAMP)
	$(PY) workload/local/iceberg_jars.py --wheel $(ICEBERG_WHEEL) --output $(JARS_DIR)

$(GLUE_SDIST): | $(PIP)
	mkdir -p $(dir $@)
	$(PY) -m pip download --quiet --no-deps --no-binary :all: sagemaker-feature-store-pyspark==2.2.2 -d $(dir $@)

$(ICEBERG_GLUE): $(GLUE_SDIST) workload/local/iceberg_jars.py | $(STAMP)
	tar -xzf $(GLUE_SDIST) -C $(dir $(GLUE_SDIST)) --strip-components=3 \
		sagemaker_feature_store_pyspark-2.2.2/deps/jars/$(GLUE_SOURCE_JAR)
	$(PY) workload/local/iceberg_jars.py --glue-jar $(dir $(GLUE_SDIST))$(GLUE_SOURCE_JAR) --output $(JARS_DIR)
	rm $(dir $(GLUE_SDIST))$(GLUE_SOURCE_JAR)

$(DUCKDB_ICEBERG)/.complete: tests/duckdb-iceberg.lock | $(PIP)
	rm -rf $(DUCKDB_ICEBERG)
	$(PY) -m pip install --quiet --no-deps --require-hashes --only-binary=:all: --target $(DUCKDB_ICEBERG) --requirement $<
	touch $@

$(PIP):
	@command -v $(PYTHON) >/dev/null || { echo "$(PYTHON) not found: install Python 3.11"; exit 1; }
	@command -v java >/dev/null || { echo "java not found: Spark needs Java 17 (apt-get install openjdk-17-jre-headless)"; exit 1; }
	@command -v node >/dev/null || { echo "node not found: cdktf (jsii) needs Node.js 20 or newer"; exit 1; }
	@command -v terraform >/dev/null || { echo "terraform not found: install terraform 1.11.4 (validation needs it)"; exit 1; }
	@test -d $(TF_PLUGIN_DIR) || { echo "$(TF_PLUGIN_DIR) not found: terraform validate needs the hashicorp/aws 5.100.0 provider mirror"; exit 1; }
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip uv==$(UV_VERSION)
	touch $@

$(STAMP): requirements.lock pyproject.toml workload/pyproject.toml contract/pyproject.toml | $(PIP)
	$(UV) pip install --quiet --python $(PY) -r requirements.lock
	$(PY) -c 'import compileall, re, sysconfig; compileall.compile_dir(sysconfig.get_paths()["purelib"], quiet=1, workers=0, rx=re.compile("$(NOT_COMPILED)"))'
	$(UV) pip install --quiet --python $(PY) --no-deps --no-build-isolation -e ./contract -e . -e ./workload
	touch $@

synth: setup
	$(PY) main.py

validate: synth
	cd $(STACK_DIR) && terraform init -backend=false -input=false -plugin-dir=$(TF_PLUGIN_DIR) >/dev/null && terraform validate

scan: synth
	$(PY) -m segment_data_lake_scan cdktf.out

demo: validate scan sync-demo

# The sync on the bundled sample events, twice (the second run finds nothing new), then the report and two queries.
sync-demo: setup
	rm -rf $(DEMO) && mkdir -p $(DEMO)/input
	cp -r workload/samples/segment-logs $(DEMO)/input/
	gzip $(DEMO)/input/segment-logs/$(DEMO_SOURCE)/1704240000000/events-0002.json
	$(LAKE) sync --source-id $(DEMO_SOURCE) --source-slug demo-web --input $(DEMO)/input/segment-logs/$(DEMO_SOURCE) --lake $(DEMO)/lake --table-format $(TABLE_FORMAT)
	$(LAKE) sync --source-id $(DEMO_SOURCE) --source-slug demo-web --input $(DEMO)/input/segment-logs/$(DEMO_SOURCE) --lake $(DEMO)/lake --table-format $(TABLE_FORMAT)
	@echo "--- report of the first run"; ls -tr $(DEMO)/lake/segment-data/reports/source_id=$(DEMO_SOURCE)/day=*/run_id=*/report.json | head -1 | xargs cat
	@echo "--- orders per day"; $(LAKE) sql --lake $(DEMO)/lake "select day, count(*) as orders, sum(properties_revenue) as revenue from demo_web.track_order_completed group by day order by day"
	@echo "--- tables"; $(LAKE) sql --lake $(DEMO)/lake "show tables in demo_web"
	@echo "--- sync history"; $(LAKE) history --lake $(DEMO)/lake
ifeq ($(TABLE_FORMAT),iceberg)
	@echo "--- the orders table's Iceberg snapshots, one per run that wrote to it"; $(LAKE) sql --lake $(DEMO)/lake "select committed_at, operation, summary['segment-run-id'] as run_id, summary['added-records'] as added from demo_web.track_order_completed.snapshots order by committed_at"
endif

# The suite scans every example stack, main.py's included (tests/test_policy_scan.py), as make scan does. It runs on
# TEST_WORKERS pytest-xdist workers: on two cores, three left a quarter of the CPU idle while tests waited (on
# terraform's provider, moto, sleeps between kills, pip's index), and four keep it busy (in place, 2026-11-28: the
# parallel part 17 min 30 s at 1.55 cores busy with three, 14 min 50 s at 1.88 with four). Then the tests that bound a
# time (marker timing: a signal stops a sync within 15 s; a lock's wait) run alone, on a machine the other tests no
# longer load. That run collects only the files that mark a test so (collecting them all imports the AWS provider).
TEST_WORKERS ?= 4
TIMING_FILES = $(shell grep -l 'mark\.timing' tests/test_*.py)
# The tests' JVMs (each worker's Spark, every command a test starts) each run seconds of many small queries: the
# optimizing JIT compiler's work never pays back there, and stopping at the first tier takes a third or more off a
# command's CPU (a sync of the sample events here: 42.8 -> 23.4-26.1 CPU-s). The product's own default is unchanged.
# With the first tier only, Java reserves 48 MB for compiled code, not 240: a worker's JVM, which runs a module's tests,
# filled it (46.9 MB used) and stopped compiling (test_compaction and test_deletion, one worker: 147-152 -> 129-131 CPU-s).
test test-fast: export SEGMENT_LAKE_JAVA_OPTIONS ?= -XX:TieredStopAtLevel=1 -XX:ReservedCodeCacheSize=128m
# terraform and its AWS provider (which the tests' commands reattach rather than start: tests/terraform_cli.py) spend a
# fifth of their CPU collecting garbage at Go's default: terraform validate of the main stack here, 5.8-6.6 -> 4.8 CPU-s at GOGC=400
test test-fast: export GOGC ?= 400
test: setup
	$(PY) -m ruff check .
	$(VENV)/bin/lint-imports
	$(PY) -m pytest -n $(TEST_WORKERS) --dist loadgroup -m "not timing"
	$(PY) -m pytest -m timing $(TIMING_FILES)

# A few minutes for your own loop: unit tests of the stages and values, and one small end-to-end sync. The lanes are
# markers (pyproject.toml): pytest -m constructs, -m spark, -m aws. CI runs make test.
test-fast: setup
	$(PY) -m ruff check .
	$(VENV)/bin/lint-imports
	$(PY) -m pytest -m fast

# The long runs of what make test samples: whole sync processes killed at seeded random moments (kill_harness),
# a death at every write of storage and catalog, three ways (crash_points; deletion_crash_points for a user
# deletion; compaction_crash_points for a compaction, sampled; iceberg_crash_points at an Iceberg lake's commits and compactions),
# and payload fuzzing; each prints its summary. Quicker: make soak SOAK_ARGS="--trials 5 --events 50000" CRASH_ARGS="--trials 20" FUZZ_EXAMPLES=50.
SOAK_ARGS ?= --trials 30 --events 300000 --seed 1
CRASH_ARGS ?= --events 3000 --seed 1
# a compaction of that lake writes several hundred times (four writes per partition): a seeded sample, every kind first
COMPACTION_TRIALS ?= --trials 40
FUZZ_EXAMPLES ?= 500
soak: setup
	$(PY) tests/kill_harness.py $(SOAK_ARGS)
	$(PY) tests/crash_points.py $(CRASH_ARGS)
	$(PY) tests/deletion_crash_points.py $(CRASH_ARGS)
	$(PY) tests/compaction_crash_points.py $(CRASH_ARGS) $(COMPACTION_TRIALS)
	$(PY) tests/iceberg_crash_points.py $(CRASH_ARGS)
	SEGMENT_LAKE_FUZZ_EXAMPLES=$(FUZZ_EXAMPLES) $(PY) -m pytest -q tests/test_hostile_input.py

# The sync CLI against DuckDB on the same generated files, end to end (about 25 minutes on 2 cores):
# bench/results/<date>.json and .png, and the table of docs/performance.md. Quicker: make bench BENCH_ARGS="--sizes 250000".
# Then Iceberg against Parquet (about 10 minutes; bench/results/<date>-iceberg.json). Quicker: ICEBERG_BENCH_ARGS="--events 250000".
bench: setup
	$(PY) bench/run.py $(BENCH_ARGS)
	$(PY) bench/iceberg_lake.py $(ICEBERG_BENCH_ARGS)
	$(PY) bench/round_trips.py --table-format iceberg $(ICEBERG_ROUND_TRIPS_ARGS)

clean:
	rm -rf cdktf.out .cache .pytest_cache build dist $(DEMO) $(dir $(BUNDLE))
