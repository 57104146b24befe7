# `make run` and `make test` set up .venv themselves from requirements.lock.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: run test test-dml lint export-models clean dml-setup

$(STAMP): requirements.lock pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -r requirements.lock
	$(PY) -m pip install --quiet --no-deps -e .
	touch $(STAMP)

# The seed examples, run on the CPU EP (EP=dml, EP=directml ... another engine), printing their
# results; then each checked against the numpy reference, and a verdict.
run: $(STAMP)
	@for m in models/*.json; do \
		echo "== $$m"; \
		$(PY) -m dml2onnx run "$$m" --ep $${EP:-cpu} || exit $$?; \
	done
	@log=$$(mktemp); ok=0; total=0; \
	for m in models/*.json; do \
		total=$$((total + 1)); \
		if $(PY) -m dml2onnx check "$$m" --ep $${EP:-cpu} >"$$log" 2>&1; then ok=$$((ok + 1)); \
		else echo "== $$m: check failed"; cat "$$log"; fi; \
	done; rm -f "$$log"; \
	echo "== verdict: $$total models run on $${EP:-cpu}; $$ok of $$total match the numpy reference"; \
	test $$ok -eq $$total

# The suite on every core (pytest-xdist, one ONNX Runtime thread per worker, tests/conftest.py): the
# operator matrix runs one test per operator, 100 cases to a session (tests/matrix_runs.py).
test: $(STAMP)
	$(PY) -m ruff check dml2onnx tests tools
	$(PY) -m pytest -q -n auto --dist worksteal

# DirectML under Wine, seconds per session: every model in models/ and a case of each operator and
# data type of the matrix on the DirectML EP, the whole matrix through DirectML's API (tests marked
# dml). Needs `make dml-setup`.
test-dml: $(STAMP)
	$(PY) -m pytest -q -m dml

lint: $(STAMP)
	$(PY) -m ruff check dml2onnx tests tools

# Regenerate models/onnx/<model>/<dispatchable>.onnx and models/onnx/<model>.onnx (the whole
# command list as one graph, each operator an ONNX function) from models/*.json.
export-models: $(STAMP)
	@for m in models/*.json; do \
		n=$$(basename "$$m" .json); \
		$(PY) -m dml2onnx export "$$m" -o "models/onnx/$$n" || exit $$?; \
		$(PY) -m dml2onnx export "$$m" -o models/onnx --single-graph --functions || exit $$?; \
	done

# A Netron screenshot of a lowered multi-axis Hardmax1 (needs Debian's chromium and chromium-driver).
docs/netron-hardmax1.png: $(STAMP)
	$(PY) tools/netron_screenshot.py models/hardmax1.json hardmax_axes_0_2 $@

# ONNX Runtime's DirectML EP under Wine for `--ep dml` on Linux (Debian 12, as root): Debian packages,
# the pinned onnxruntime-directml DLLs, the host program, a Wine prefix (tools/dml-setup.sh).
dml-setup: $(STAMP)
	PY=$(PY) tools/dml-setup.sh

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache .hypothesis
