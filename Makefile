# The whole set-up is `make test` and `make serve`: each creates .venv when
# missing and installs the project into it from pyproject.toml.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: test serve bench cluster cluster-down

$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[test,cluster]'
	touch $(STAMP)

test: $(STAMP)
	$(PY) -m pytest -q

# A first start in ./data creates the sample scenes (PICK_SAMPLE_SCENES).
serve: $(STAMP)
	PICK_SAMPLE_SCENES=$${PICK_SAMPLE_SCENES:-true} $(PY) -m service

bench: $(STAMP)
	$(PY) -m pip install --quiet -e '.[test,bench]'
	$(PY) -m bench.rays

# Past one machine (issue 18): SeaweedFS, a Ray head and two workers on this machine, the API on
# Serve at http://127.0.0.1:8000 (cluster/local.py; everything under ./cluster-data, PIDs in
# cluster-data/pids.json). `make cluster-down` stops those processes by their PIDs.
CLUSTER_PORT ?= 8000
cluster: $(STAMP)
	$(PY) -m cluster.local up --port $(CLUSTER_PORT)

cluster-down: $(STAMP)
	$(PY) -m cluster.local down
