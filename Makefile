# The two commands of the README: `make demo` and `make test`. Both install what is missing
# first (scripts/install-deps), then build only what they need.
SHELL := /bin/bash
.DEFAULT_GOAL := demo
GENERATOR := -G Ninja

.PHONY: demo test test-long deps build build-asan build-tsan bench-overhead bench-reclaim bench-prefill bench-nr bench-bst bench-hash bench-queue bench-dedup bench-zset-server clean

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

# The trees build one after the other, each with ninja's own parallelism. Building the three at
# once (make -j3: 12 compilers on 2 cores) took 35 minutes on a fresh 2-core machine, where one
# after the other had taken 27 on the commit before.
test: build build-asan build-tsan
	@scripts/run-tests

demo: build
	@scripts/demo

# The experiments behind docs/results-*.md, through the runner (resumable: the same command goes
# on where it stopped; results, database and report in results/NAME/). Each experiment's
# docstring names the CDSBENCH_* variables that shrink it.
# The harness's own cost per operation (--ds null), then each generator's and distribution's
# isolated cost per sample (~2 min).
bench-overhead: build
	@.venv/bin/cdsbench-run experiments/overhead.py --out docs/results-overhead.md
	@build/cdsbench-rng-bench --trials 5

# Reclaimers and allocation policies: guard cost, list throughput, memory boundedness (~9 min).
bench-reclaim: build
	@.venv/bin/cdsbench-run experiments/reclaim.py --out docs/results-reclaim.md

# Steady prefill against a tree aged by 10 x R updates: time, search depth, throughput (~10 min).
bench-prefill: build
	@.venv/bin/cdsbench-run experiments/prefill.py --out docs/results-prefill.md

# Node Replication and the black-box baselines: the grid of issue 8 (1,665 runs, ~15 min on 2 cores).
bench-nr: build
	@.venv/bin/cdsbench-run experiments/nr.py --out docs/results-nr.md

# The BSTs beside libcds's and oneTBB's structures: the parts of issues 5 and 6 (~6 hours on 2 cores).
bench-bst: build
	@.venv/bin/cdsbench-run experiments/bst.py --out docs/results-bst.md

# The hash maps beside libcds's, oneTBB's and libcuckoo's, their memory, and the dedup study's
# synthetic test: the parts of issue 15 (about half a day on 2 cores at full size; see its docstring).
bench-hash: build
	@.venv/bin/cdsbench-run experiments/hash.py --out docs/results-hash.md

# The queues and stacks beside oneTBB's, moodycamel's, Boost's and libcds's queues: single items
# and batches of 20, pairs and split modes, memory per item: the parts of issue 16 (~20 min on 2 cores).
bench-queue: build
	@.venv/bin/cdsbench-run experiments/queue.py --out docs/results-queue.md

# Dedup with every map and queue, the dedup study's figures and the goals: issue 17 (~30 min on
# 2 cores; its inputs, 1.6 GB, are made once into results/dedup-inputs).
bench-dedup: build
	@.venv/bin/cdsbench-run experiments/dedup.py --out docs/results-dedup.md

bench-zset-server: build
	@.venv/bin/cdsbench-run experiments/zset_server.py --out docs/results-zset-server.md

# What make test leaves out for time: dedup's full product of pipeline choices and a 1 GiB round
# trip, a Slurm task stopped at its time limit, the sorted-set server's soak test (tests/long;
# about 25 minutes on 2 cores).
test-long: build
	@CDSBENCH_BUILD="$$PWD/build" .venv/bin/python -m pytest -q tests/long

clean:
	rm -rf build build-asan build-tsan
