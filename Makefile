# The two commands of the README: `make demo` and `make test`. Both install what is missing
# first (scripts/install-deps), then build only what they need.
SHELL := /bin/bash
.DEFAULT_GOAL := demo
GENERATOR := -G Ninja

.PHONY: demo test deps build build-asan build-tsan bench-overhead bench-reclaim bench-nr bench-bst clean

deps:
	@scripts/install-deps

build: deps
	@cmake -S . -B build $(GENERATOR) -DCMAKE_BUILD_TYPE=Release >/dev/null
	@cmake --build build

# ASan + UBSan and TSan trees: the multi-threaded tests run in them too.
build-asan: deps
	@cmake -S . -B build-asan $(GENERATOR) -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCDSBENCH_SANITIZE=asan >/dev/null
	@cmake --build build-asan

build-tsan: deps
	@cmake -S . -B build-tsan $(GENERATOR) -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCDSBENCH_SANITIZE=tsan >/dev/null
	@cmake --build build-tsan

test: build build-asan build-tsan
	@scripts/run-tests

demo: build
	@scripts/demo

# Harness overhead with the `null` structure and per-sample cost of each generator.
bench-overhead: build
	@scripts/bench-overhead

# Reclaimers and allocation policies: guard cost, list throughput, memory boundedness (Markdown).
bench-reclaim: build
	@scripts/bench-reclaim

# Node Replication and the black-box baselines: the grid of issue 8 -> docs/results-nr.md.
bench-nr: build
	@scripts/bench-nr

# The BSTs beside libcds's and oneTBB's structures: the runs of issues 5 and 6 -> docs/results-bst.md
# (hours on 2 cores; scripts/bench-bst --help measures one run or shrinks it).
bench-bst: build
	@for run in external internal sizes; do scripts/bench-bst --run $$run || exit 1; done

clean:
	rm -rf build build-asan build-tsan
