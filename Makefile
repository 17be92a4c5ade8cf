# One entry point for people and CI. Every target installs what it needs (Debian packages, the
# virtualenv in .venv, node_modules) and is quick when it is already there.
SHELL := /bin/bash
PY := .venv/bin/python
VENV_STAMP := .venv/.installed-stamp
NODE_STAMP := node_modules/.installed-stamp
export BENCHFLEET_REPO := $(CURDIR)

.PHONY: demo test check lint system-deps browser-deps python-deps node-deps synth test-python test-cdk perf clean

demo: system-deps python-deps
	.venv/bin/benchfleet run workloads/comparisons/demo-durability.yaml

test: system-deps browser-deps python-deps node-deps
	$(MAKE) --no-print-directory test-python test-cdk

check: lint test

system-deps:
	@.ci/system-deps

browser-deps:
	@BENCHFLEET_NEED_BROWSER=1 .ci/system-deps

python-deps: $(VENV_STAMP)
$(VENV_STAMP): pyproject.toml
	@test -x $(PY) || python3 -m venv .venv
	.venv/bin/pip install -q --upgrade pip
	.venv/bin/pip install -q -e '.[dev]'
	@touch $@

node-deps: $(NODE_STAMP)
$(NODE_STAMP): package.json $(wildcard package-lock.json)
	npm ci --no-audit --no-fund --loglevel=error
	@touch $@

test-python: python-deps node-deps
	$(PY) -m pytest -q -p no:cacheprovider tests

test-cdk: node-deps python-deps
	npm test --silent

synth: node-deps
	npm run synth --silent

lint: python-deps node-deps
	.venv/bin/ruff check lambdas tests workloads/agent
	.venv/bin/mypy
	npm run lint --silent

perf: python-deps system-deps
	$(PY) tests/perf/harness_overhead.py

clean:
	rm -rf .venv node_modules cdk.out .benchfleet
