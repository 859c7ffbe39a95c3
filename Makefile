# qoelab — the two commands: `make demo` and `make test` (both set everything up).
# Needs: Rust via rustup (toolchain pinned in rust-toolchain.toml) and Python >= 3.11.

PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
PIP    := $(VENV)/bin/pip
STAMP  := $(VENV)/.deps-stamp
OUT    ?= results/demo

.PHONY: help demo test lint venv build test-rust test-py bench clean setup-real

help: ## list targets
	@grep -E '^[a-z-]+:.*##' $(MAKEFILE_LIST) | sed 's/:.*##/\t/'

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PIP) install -q --upgrade pip
	$(PIP) install -q "maturin>=1.5,<2" "pytest>=7" "numpy>=1.26" "pyarrow>=15" "pandas>=2.1" \
		"imageio-ffmpeg>=0.5" "av>=12" "matplotlib>=3.7" "duckdb>=1.0" "atheris>=3.0"
	touch $(STAMP)

venv: $(STAMP) ## create/update the virtual environment

build: venv ## build the Rust extension (release, profile-guided: tools/build-core) into the venv and the emulator binary (target/release)
	VENV=$(VENV) tools/build-core
	cargo build --release -q -p qoelab-net --bin qoelab-netemu

demo: build ## set up, then run the main job on built-in defaults
	$(VENV)/bin/qoelab demo --out $(OUT)

test: build lint ## set up, then run every check (rustfmt, clippy, cargo test, pytest)
	cargo test --workspace --exclude qoelab-py -q
	$(PY) -m pytest -q

setup-real: build ## real-network extras: Debian's Chromium (apt, as root) and the pinned dash.js + playwright-core (npm)
	@command -v chromium >/dev/null 2>&1 || (apt-get update -q && apt-get install -y -q chromium)
	cd browser && npm ci --no-audit --no-fund

lint: ## cargo fmt --check and clippy with warnings as errors
	cargo fmt --all --check
	cargo clippy --workspace --all-targets -q -- -D warnings

bench: build ## packets/s, events/s and peak memory of the fixed benchmark suite
	$(VENV)/bin/qoelab bench

clean:
	rm -rf $(VENV) target results
