# Set-up and every task of the project. `make demo` and `make test` do the whole set-up themselves.
SHELL := /bin/bash
PYTHON ?= python3.11
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
STACK_DIR := cdktf.out/stacks/segment-data-lake
TF_PLUGIN_DIR ?= /opt/tf-plugins
export JSII_SILENCE_WARNING_DEPRECATED_NODE_VERSION := 1
export BC_SKIP_MAPPING := TRUE
export CHECKOV_RUN_SCA_PACKAGE_SCAN_V2 := false

.PHONY: setup synth validate scan demo test clean

setup: $(STAMP)

$(STAMP): requirements.lock pyproject.toml workload/pyproject.toml
	@command -v $(PYTHON) >/dev/null || { echo "$(PYTHON) not found: install Python 3.11"; exit 1; }
	@command -v java >/dev/null || { echo "java not found: Spark needs Java 17 (apt-get install openjdk-17-jre-headless)"; exit 1; }
	@command -v node >/dev/null || { echo "node not found: cdktf (jsii) needs Node.js 20 or newer"; exit 1; }
	@command -v terraform >/dev/null || { echo "terraform not found: install terraform 1.11.4 (validation needs it)"; exit 1; }
	@test -d $(TF_PLUGIN_DIR) || { echo "$(TF_PLUGIN_DIR) not found: terraform validate needs the hashicorp/aws 5.100.0 provider mirror"; exit 1; }
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -r requirements.lock
	$(PY) -m pip install --quiet --no-deps --no-build-isolation -e . -e ./workload
	touch $@

synth: setup
	$(PY) main.py

validate: synth
	cd $(STACK_DIR) && terraform init -backend=false -input=false -plugin-dir=$(TF_PLUGIN_DIR) >/dev/null && terraform validate

scan: synth
	$(PY) policies/scan.py cdktf.out

demo: validate scan

test: setup
	$(PY) -m pytest
	$(MAKE) --no-print-directory scan

clean:
	rm -rf cdktf.out .cache .pytest_cache
