# The two README commands. Each installs missing Debian packages first, then
# configures and builds what it needs.

PRESET ?= release
JOBS ?= $(shell nproc)
BUILD := build/$(PRESET)

.PHONY: all deps configure build demo test bench fuzz install python-install clean

all: build

deps:
	@scripts/install-deps.sh

configure: deps
	@cmake --preset $(PRESET) >/dev/null

build: configure
	@cmake --build $(BUILD) -j $(JOBS)

## Runs nuvec's main job: trains a CNN on Fashion-MNIST (nuvec train; weights, checkpoint and curves in DEMO_OUT).
DEMO_OUT ?= runs/fashion-mnist
demo: configure
	@cmake --build $(BUILD) -j $(JOBS) --target nuvec_cli
	@$(BUILD)/apps/nuvec train --output $(DEMO_OUT)

## Builds everything and runs the whole test suite.
test: build
	@ctest --preset $(PRESET) -j $(JOBS)

## Times nuvec against NumPy side by side.
bench: configure
	@cmake --build $(BUILD) -j $(JOBS) --target nuvec_bench
	@/usr/bin/python3 bench/run_core.py --build $(BUILD)

## Builds the parsers' libFuzzer targets (clang, ASan, UBSan) and runs each for FUZZ_SECONDS.
FUZZ_SECONDS ?= 60
fuzz: deps
	@JOBS=$(JOBS) fuzz/run.sh $(FUZZ_SECONDS)

PREFIX ?= /usr/local
install: build
	@cmake --install $(BUILD) --prefix $(PREFIX)

## Builds the Python package and installs it with the library under PREFIX, in the folder this Python reads
## (/usr/local/lib/python3.11/dist-packages on Debian): then `python3 -c 'import nuvec'`.
python-install: build
	@cmake --install $(BUILD) --prefix $(PREFIX)

clean:
	@rm -rf build
