# The whole set-up is `make test` and `make serve`: each creates .venv when
# missing and installs into it, from pyproject.toml, what it needs:
#   make serve     the project alone: what one machine needs to serve
#   make test      the project with its test and cluster extras (the tests start SeaweedFS and Ray),
#                  and the official Python client (clients/python, editable: tests/clients run it)
#   make cluster   the project with its cluster extra (Ray Serve, obstore, SeaweedFS)
#   make bench     the project with its test and bench extras (Embree through embreex)
# Each set has its stamp in .venv (.installed for the project alone, .installed-<extras>),
# remade when pyproject.toml changes; a set with extras also stamps the project
# alone, which it installed too. So a .venv made by `make serve` gets the test
# extras at the next `make test`.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
INSTALLED := $(VENV)/.installed

.PHONY: test test-slow test-container serve bench cluster cluster-down

$(PY):
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip

$(INSTALLED): pyproject.toml | $(PY)
	$(PY) -m pip install --quiet -e .
	touch $@

$(INSTALLED)-test: pyproject.toml clients/python/pyproject.toml | $(PY)
	$(PY) -m pip install --quiet -e '.[test,cluster]' -e clients/python
	touch $@ $(INSTALLED)

$(INSTALLED)-cluster: pyproject.toml | $(PY)
	$(PY) -m pip install --quiet -e '.[cluster]'
	touch $@ $(INSTALLED)

$(INSTALLED)-bench: pyproject.toml | $(PY)
	$(PY) -m pip install --quiet -e '.[test,bench]'
	touch $@ $(INSTALLED)

test: $(INSTALLED)-test
	$(PY) -m pytest -q -m "not slow and not container"

# The long runs (a real server against a small tmpfs it fills): some minutes more.
test-slow: $(INSTALLED)-test
	$(PY) -m pytest -q -m "slow and not container"

# The Dockerfile built and run by a Docker engine (tests/test_container.py): the engine that answers,
# or a dockerd the test starts and stops (root and Debian's docker.io needed); on a base image made
# from Debian's packages (debootstrap) when no image registry answers. -s shows the build time and
# the time to /ready. Some 6 minutes, 2 more the first time (the base image).
test-container: $(INSTALLED)-test
	$(PY) -m pytest -q -s -m container

# A first start in ./data creates the sample scenes (PICK_SAMPLE_SCENES).
serve: $(INSTALLED)
	PICK_SAMPLE_SCENES=$${PICK_SAMPLE_SCENES:-true} $(PY) -m service

bench: $(INSTALLED)-bench
	$(PY) -m bench.rays

# Past one machine (issue 18): SeaweedFS, a Ray head and two workers on this machine, the API on
# Serve at http://127.0.0.1:8000 (cluster/local.py; everything under ./cluster-data, PIDs in
# cluster-data/pids.json). `make cluster-down` stops those processes by their PIDs.
CLUSTER_PORT ?= 8000
cluster: $(INSTALLED)-cluster
	$(PY) -m cluster.local up --port $(CLUSTER_PORT)

cluster-down: $(INSTALLED)-cluster
	$(PY) -m cluster.local down
