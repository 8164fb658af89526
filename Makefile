# Two commands on a fresh machine: `make demo` and `make test`.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
PIP := $(PY) -m pip
TORCH_PIN := torch==2.13.0
STAMP := $(VENV)/.installed

.PHONY: install chromium test test-slow demo bench bench-quick bench-quality clean

$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PIP) install --quiet --upgrade pip
	# torch first and pinned: an unpinned torch resolves to a multi-GB CUDA build.
	$(PIP) install --quiet "$(TORCH_PIN)"
	$(PIP) install --quiet -e '.[dev,sbert,serve,dask,tune,pyterrier,mlflow]'
	touch $(STAMP)

install: $(STAMP)

# Debian's chromium, which the report.html test drives headless (skipped without it; CI installs it). Needs root.
chromium:
	command -v chromium >/dev/null 2>&1 || (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium)

test: $(STAMP)
	$(VENV)/bin/ruff check ltrfeat tests benchmarks
	$(VENV)/bin/ruff format --check ltrfeat tests benchmarks
	$(VENV)/bin/mypy
	$(PY) -m pytest -q -n 2 --cov=ltrfeat --cov-report=
	@echo "coverage of ltrfeat by the default suite: $$($(PY) -m coverage report --format=total)% of lines"

test-slow: $(STAMP)
	$(PY) -m pytest -q -m slow

demo: $(STAMP)
	$(VENV)/bin/ltrfeat demo --out demo-out

# Every benchmark (9-17 minutes on 2 shared cores, 30 at most) -> benchmarks/results/*.json and SUMMARY.md.
bench: $(STAMP)
	$(PY) benchmarks/run_all.py

# Smaller sizes, for a loaded machine.
bench-quick: $(STAMP)
	$(PY) benchmarks/run_all.py --quick

# Single-feature ranking quality on Home Depot (about 28 minutes; not part of `make bench`).
bench-quality: $(STAMP)
	$(PY) benchmarks/quality_homedepot.py

clean:
	rm -rf $(VENV) build *.egg-info
