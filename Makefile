# webcrawler: two commands for a fresh machine.
#   make demo   set up, then crawl the bundled synthetic web and print a report
#   make test   set up, then run every test
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed

.PHONY: setup demo test docs docs-screenshot bench clean redis-server realweb-packages scrapy-tests pywb

setup: $(STAMP) redis-server realweb-packages

# A real redis-server for the Redis store's tests (Debian's package, as
# root) when none is installed.
redis-server:
	@command -v redis-server >/dev/null || \
	  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq redis-server) >/dev/null
	@command -v redis-server >/dev/null || { echo "redis-server could not be installed" >&2; exit 1; }

# The real-web test (tests/test_realweb_e2e.py): Debian's nginx serving
# documentation sites from Debian's doc packages, openssl for its certificate.
# The real-application test (tests/test_realapp_e2e.py): Debian's cgit run by
# fcgiwrap behind that nginx, over repositories git makes at test time.
# The report test (tests/test_report.py): Debian's chromium, run headless.
REALWEB_PACKAGES := nginx-light openssl sphinx-doc python-django-doc nodejs-doc debian-reference-en
REALAPP_PACKAGES := cgit fcgiwrap git
BROWSER_PACKAGES := chromium
realweb-packages:
	@missing=$$(for p in $(REALWEB_PACKAGES) $(REALAPP_PACKAGES) $(BROWSER_PACKAGES); do \
	  dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q 'ok installed' || echo $$p; done); \
	test -z "$$missing" || \
	  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing) >/dev/null || \
	  { echo "could not install $$missing (needed by the real-web, real-application and report tests)" >&2; exit 1; }

# The virtualenv and every Python package; python3-venv from Debian if the
# interpreter lacks it.
$(STAMP): requirements.txt setup.py
	@$(PYTHON) -m venv $(VENV) 2>/dev/null || { \
	  (apt-get update -qq && apt-get install -y -qq python3-venv) >/dev/null && \
	  $(PYTHON) -m venv $(VENV); }
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -r requirements.txt
	touch $(STAMP)

demo: setup
	$(PY) -m bench.demo

# The documentation site (docs/, Sphinx with MyST), warnings as errors; no network.
docs: setup
	$(PY) -m sphinx -W --keep-going -q -b html docs docs/_build/html
	@echo "docs/_build/html/index.html"

# The screenshot of the built docs' start page the README shows
# (docs/_static/start.png), taken by Debian's chromium, headless.
docs-screenshot: docs
	$(PY) docs/_ext/screenshot.py

test: setup scrapy-tests pywb
	$(PY) -m pytest -q -p no:cacheprovider tests

# Scrapy's own tests/test_scheduler_base.py and tests/test_crawl.py, run by
# tests/test_scrapy_suite.py with our frontier as SCHEDULER: the tests, the
# root conftest.py and pyproject.toml (its pytest options) of the sdist of the
# installed Scrapy version (the wheel has no tests), and the pytest plugins
# they need in a directory of their own (requirements-scrapy-tests.txt says
# why). Once per Scrapy version; built aside, then swapped into place (a
# test run using the old copy meanwhile keeps it until the swap).
SCRAPY_SUITE := $(VENV)/scrapy-tests
$(SCRAPY_SUITE)/.ready: $(STAMP) requirements-scrapy-tests.txt
	@rm -rf $(SCRAPY_SUITE).tmp $(SCRAPY_SUITE).old && mkdir -p $(SCRAPY_SUITE).tmp/sdist
	@version=$$($(PY) -c 'import scrapy; print(scrapy.__version__)') && \
	  $(PY) -m pip download -q --no-deps --no-binary :all: "scrapy==$$version" -d $(SCRAPY_SUITE).tmp/sdist && \
	  tar -xzf $(SCRAPY_SUITE).tmp/sdist/scrapy-$$version.tar.gz -C $(SCRAPY_SUITE).tmp --strip-components=1 \
	    scrapy-$$version/tests scrapy-$$version/conftest.py scrapy-$$version/pyproject.toml && \
	  $(PY) -m pip install -q --no-deps --target $(SCRAPY_SUITE).tmp/deps -r requirements-scrapy-tests.txt && \
	  echo "$$version" > $(SCRAPY_SUITE).tmp/.ready
	@if [ -e $(SCRAPY_SUITE) ]; then mv $(SCRAPY_SUITE) $(SCRAPY_SUITE).old; fi
	@mv $(SCRAPY_SUITE).tmp $(SCRAPY_SUITE) && rm -rf $(SCRAPY_SUITE).old

scrapy-tests: $(SCRAPY_SUITE)/.ready

# pywb for the WARC replay tests, in a virtualenv of its own
# (requirements-pywb.txt says why); built in place (a virtualenv cannot be
# moved), marked ready only once complete.
PYWB_VENV := $(VENV)/pywb
$(PYWB_VENV)/.ready: $(STAMP) requirements-pywb.txt
	@rm -rf $(PYWB_VENV)
	@$(PYTHON) -m venv $(PYWB_VENV)
	@$(PYWB_VENV)/bin/python -m pip install -q --upgrade pip
	@$(PYWB_VENV)/bin/python -m pip install -q -r requirements-pywb.txt
	@touch $(PYWB_VENV)/.ready

pywb: $(PYWB_VENV)/.ready

# Benchmarks (figures in docs/benchmarks.md); extra packages only they need.
bench: setup
	$(PY) -m pip install -q -r requirements-bench.txt
	$(PY) -m bench.crawl_vs_scrapy

clean:
	rm -rf $(VENV) out jobs
