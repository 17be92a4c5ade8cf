# One entry point for people and CI. Every target installs what it needs (Debian packages, the
# virtualenv in .venv, node_modules) and is quick when it is already there.
SHELL := /bin/bash
PY := .venv/bin/python
VENV_STAMP := .venv/.installed-stamp
# uv installs exactly uv.lock (every package, with hashes); uv itself is pinned by hash in .ci/uv.txt and
# lives beside the environment it manages, so an exact sync never removes it.
UV := .venv/.uv/bin/uv
export UV_PYTHON_DOWNLOADS := never
export UV_PROJECT_ENVIRONMENT := $(CURDIR)/.venv
NODE_STAMP := node_modules/.installed-stamp
# The second test environment: the deployed Lambdas' imports (the runtime's boto3 floor; Powertools and
# pydantic as the layer has them, which are uv.lock's), from .ci/lambda-runtime.txt.
LAMBDA_ENV := .venv-lambda
LAMBDA_STAMP := $(LAMBDA_ENV)/.installed-stamp
export BENCHFLEET_REPO := $(CURDIR)
# pytest-xdist workers: most of the suite's time is spent waiting on real servers (sysbench steps of
# fixed seconds, MariaDB start-up, a booted host), so three share two cores. Each test file stays on one
# worker (--dist loadfile): a module's fixtures (a Galera cluster, a booted fleet) are made once, as in
# one process. `make test TEST_WORKERS=0` runs in one process.
TEST_WORKERS ?= 3

.PHONY: demo test check lint lock lock-check lambda-runtime-lock system-versions test-latest test-lambda-runtime system-deps browser-deps python-deps node-deps synth test-python test-cdk perf clean go-tpc

demo: system-deps python-deps
	.venv/bin/benchfleet run workloads/comparisons/demo-durability.yaml

test: system-deps browser-deps python-deps node-deps go-tpc
	$(MAKE) --no-print-directory test-python test-lambda-runtime test-cdk

check: lock-check lint test

system-deps:
	@.ci/system-deps

browser-deps:
	@BENCHFLEET_NEED_BROWSER=1 .ci/system-deps

# go-tpc (TPC-C workloads: tool: go-tpc): its version and every module it needs are pinned in
# workloads/gotpc/go.mod and go.sum (a tools module), built with this machine's Go toolchain from the Go
# module proxy only (GOTOOLCHAIN=local: no toolchain download; the proxy list without its "direct"
# fallback: never from a repository), for both EC2 architectures. Static binaries: the agent bundle ships
# them and each host runs the one for its architecture (benchfleet_run.gotpc_binary), so every host of
# either architecture runs the same version without a Go toolchain or the network.
GOTPC_DIR := workloads/gotpc
GOTPC_VERSION := $(shell sed -n 's|^[[:space:]]*github.com/pingcap/go-tpc \(v[^ ]*\).*|\1|p' $(GOTPC_DIR)/go.mod)
go-tpc: $(GOTPC_DIR)/bin/go-tpc-amd64 $(GOTPC_DIR)/bin/go-tpc-arm64
$(GOTPC_DIR)/bin/go-tpc-%: $(GOTPC_DIR)/go.mod $(GOTPC_DIR)/go.sum
	cd $(GOTPC_DIR) && GOTOOLCHAIN=local GOFLAGS=-mod=readonly CGO_ENABLED=0 GOOS=linux GOARCH=$* \
	  GOPROXY="$$(go env GOPROXY | sed 's/[,|]direct$$//')" \
	  go build -trimpath -ldflags "-s -w -X main.version=$(GOTPC_VERSION)" -o bin/go-tpc-$* \
	  github.com/pingcap/go-tpc/cmd/go-tpc

python-deps: $(VENV_STAMP)
$(VENV_STAMP): pyproject.toml uv.lock .ci/uv.txt
	@test -x $(PY) || python3 -m venv .venv
	@test -x $(UV) && $(UV) --version | grep -qF "$$(sed -n 's/^uv==\([^ ]*\).*/\1/p' .ci/uv.txt)" || \
	  python3 -m pip install -q --disable-pip-version-check --root-user-action=ignore --require-hashes --no-deps --upgrade \
	    --target .venv/.uv -r .ci/uv.txt
	$(UV) sync --locked --extra dev --python $(PY) -q
	@touch $@

$(UV):
	@test -x $(PY) || python3 -m venv .venv
	python3 -m pip install -q --disable-pip-version-check --root-user-action=ignore --require-hashes --no-deps --target .venv/.uv -r .ci/uv.txt

# Refresh uv.lock on purpose (newest releases allowed by pyproject.toml and its [tool.uv] holds); the diff
# is a reviewed change with the whole suite green. Then `make test`.
lock: $(UV)
	$(UV) lock --upgrade --python python3
	@$(MAKE) --no-print-directory lambda-runtime-lock
	@echo "uv.lock refreshed: review 'git diff uv.lock', run make check, commit. uv itself: edit .ci/uv.txt."

# .ci/lambda-runtime.txt: pyproject's dev set at uv.lock's versions, but boto3/botocore at
# .ci/lambda-runtime.in's floor (and what that floor needs: s3transfer, urllib3), with hashes. The
# constraints file's temporary path is named for what it holds, so that a refresh that changes no
# version changes no line.
lambda-runtime-lock: $(UV)
	@tmp=$$(mktemp -d) && trap 'rm -rf $$tmp' EXIT && \
	$(UV) export --frozen --extra dev --no-hashes --no-emit-project --no-header -q -o $$tmp/locked.txt && \
	grep -vE '^(boto3|botocore|s3transfer|urllib3)==' $$tmp/locked.txt > $$tmp/constraints.txt && \
	$(UV) pip compile pyproject.toml --extra dev --python-version 3.11 --generate-hashes -q \
	  -c $$tmp/constraints.txt --override .ci/lambda-runtime.in --custom-compile-command 'make lock' \
	  -o .ci/lambda-runtime.txt && \
	sed -i "s|$$tmp/constraints.txt|uv.lock (without boto3, botocore, s3transfer, urllib3)|" .ci/lambda-runtime.txt

# Fails naming each package pyproject.toml asks for that uv.lock does not satisfy (and when uv finds the
# lock stale for any other reason).
lock-check: $(UV)
	python3 .ci/check_lock.py
	$(UV) lock --check --python python3 -q

# Early warning, never in CI: the newest releases of everything in a separate environment, the tests that
# use moto and the AWS SDK. A failure here is drift to look at before `make lock`, not a broken build.
test-latest: $(UV) system-deps node-deps
	@rm -rf .venv-latest
	$(UV) venv -q --python python3 .venv-latest
	VIRTUAL_ENV=.venv-latest $(UV) pip install -q --no-config -e '.[dev]'
	@.venv-latest/bin/python -c 'import boto3, botocore, moto, pydantic; print("newest releases: boto3", boto3.__version__, "botocore", botocore.__version__, "moto", moto.__version__, "pydantic", pydantic.__version__)'
	@.venv-latest/bin/python -m pytest -q -p no:cacheprovider tests/functional tests/statemachine \
	  && echo "test-latest: the newest releases pass the moto-based tests; 'make lock' may move to them" \
	  || { echo "WARNING (test-latest): the newest releases fail the moto-based tests above; uv.lock keeps the versions that pass. Not a CI failure." >&2; }

node-deps: $(NODE_STAMP)
$(NODE_STAMP): package.json $(wildcard package-lock.json)
	npm ci --no-audit --no-fund --loglevel=error
	@touch $@

test-python: python-deps node-deps
	$(PY) -m pytest -q -p no:cacheprovider -n $(TEST_WORKERS) --dist loadfile tests

# Record the Debian packages this machine has as the ones the suite is green with (.ci/system-versions.txt,
# read by `benchfleet doctor`): run after a green `make test` on new versions, and commit the diff.
system-versions:
	@{ sed -n '/^#/p' .ci/system-versions.txt; dpkg-query -W -f '$${Package} $${Version}\n' \
	  $$(sed -n '/^[^#]/s/ .*//p' .ci/system-versions.txt); } > .ci/system-versions.txt.new
	@mv .ci/system-versions.txt.new .ci/system-versions.txt && git diff --stat -- .ci/system-versions.txt

# The handlers through the deployed API and state-machine tasks, in the Lambdas' own import set.
test-lambda-runtime: $(LAMBDA_STAMP) node-deps
	PYTHONPATH=lambdas $(LAMBDA_ENV)/bin/python -m pytest -q -p no:cacheprovider \
	  tests/functional/test_api.py tests/functional/test_cloud_handlers.py

$(LAMBDA_STAMP): .ci/lambda-runtime.txt $(VENV_STAMP)
	@rm -rf $(LAMBDA_ENV)
	$(UV) venv -q --python python3 $(LAMBDA_ENV)
	VIRTUAL_ENV=$(LAMBDA_ENV) $(UV) pip sync -q --require-hashes .ci/lambda-runtime.txt
	@touch $@

test-cdk: node-deps python-deps
	npm test --silent

synth: node-deps go-tpc
	npm run synth --silent

lint: python-deps node-deps
	.venv/bin/ruff check lambdas tests workloads/agent
	.venv/bin/mypy
	npm run lint --silent

perf: python-deps system-deps
	$(PY) tests/perf/harness_overhead.py

clean:
	rm -rf .venv .venv-lambda .venv-latest node_modules cdk.out .benchfleet
