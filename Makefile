# GridLedger: `make demo` (SQLite, tasks in-process) and `make test` (PostgreSQL + Redis). See README.md.
PYTHON ?= python3.11
VENV := .venv
PY := $(VENV)/bin/python
DEMO_ENV := DJANGO_DEBUG=1 DATABASE_URL= REDIS_URL=

.PHONY: venv demo test lint services browser bench-ingest bench-summaries bench-portal bench-quotas clean

# The history parser, compiled (needs a C compiler and Python's headers): its two hot loops
# (ingest/parsers/_adlines.pyx) and the module itself (ingest/parsers/htcondor_history.py, plain Python that
# Cython turns into C as it is; annotations stay hints). Without a compiler both run as Python.
EXT := $(shell $(PYTHON) -c "import sysconfig; print(sysconfig.get_config_var('EXT_SUFFIX'))" 2>/dev/null)
ADLINES := ingest/parsers/_adlines$(EXT)
HISTORY := ingest/parsers/htcondor_history$(EXT)
# The loader's record digest, compiled (ingest/services/_record_hash.pyx); without a compiler loader.py's own.
RECORD_HASH := ingest/services/_record_hash$(EXT)
# A batch of records as binary COPY data (ingest/services/_copy_rows.pyx); without a compiler psycopg writes their rows.
COPY_ROWS := ingest/services/_copy_rows$(EXT)

venv: $(VENV)/.installed $(ADLINES) $(HISTORY) $(RECORD_HASH) $(COPY_ROWS)

$(VENV)/.installed: requirements.txt requirements-dev.txt
	@command -v $(PYTHON) >/dev/null 2>&1 || { echo "$(PYTHON) not found: install Python 3.11"; exit 1; }
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install --quiet --upgrade pip
	$(VENV)/bin/pip install --quiet -r requirements-dev.txt
	touch $@

$(ADLINES): ingest/parsers/_adlines.pyx $(VENV)/.installed
	$(VENV)/bin/cythonize --inplace --force -3 -q $< >/dev/null || echo "WARNING: $< not built (no C compiler or Python headers?): the history parser runs its slower pure-Python loops"
	rm -rf build ingest/parsers/_adlines.c

$(HISTORY): ingest/parsers/htcondor_history.py $(VENV)/.installed
	$(VENV)/bin/cythonize --inplace --force -3 -q -X annotation_typing=False $< >/dev/null || echo "WARNING: $< not compiled (no C compiler or Python headers?): it runs as Python"
	rm -rf build ingest/parsers/htcondor_history.c

$(RECORD_HASH): ingest/services/_record_hash.pyx $(VENV)/.installed
	$(VENV)/bin/cythonize --inplace --force -3 -q $< >/dev/null || echo "WARNING: $< not built (no C compiler or Python headers?): records are hashed by loader.py's Python"
	rm -rf build ingest/services/_record_hash.c

$(COPY_ROWS): ingest/services/_copy_rows.pyx $(VENV)/.installed
	$(VENV)/bin/cythonize --inplace --force -3 -q $< >/dev/null || echo "WARNING: $< not built (no C compiler or Python headers?): psycopg writes the loader's rows one by one"
	rm -rf build ingest/services/_copy_rows.c

demo: venv
	env $(DEMO_ENV) $(PY) manage.py migrate --no-input -v0
	env $(DEMO_ENV) $(PY) manage.py demo
	env $(DEMO_ENV) $(PY) manage.py runserver 127.0.0.1:8000

services:
	bash scripts/services.sh

browser:
	bash scripts/browser.sh

test: venv services browser
	$(VENV)/bin/ruff check .
	$(VENV)/bin/pytest -q

lint: venv
	$(VENV)/bin/ruff check .

bench-ingest: venv services
	$(PY) bench/ingest.py

bench-summaries: venv services
	$(PY) bench/summaries.py

bench-portal: venv services
	$(PY) bench/portal.py

bench-quotas: venv services
	$(PY) bench/quotas.py

clean:
	rm -rf $(VENV) var
