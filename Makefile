# gostachio — build, test, benchmark, demo.
#
# giouring (the io_uring binding) reaches into package syscall with
# go:linkname, which Go >= 1.23 refuses to link unless -checklinkname=0 is
# passed. Every go command below gets it through GOFLAGS; run plain `go test`
# the same way: GOFLAGS=-ldflags=-checklinkname=0 go test ./...
export GOFLAGS := -ldflags=-checklinkname=0
GO ?= go
BIN := bin/gostachio
DEMO_DATA ?= out/data/sf0.01

.PHONY: all build build-rdma deps-rdma peer test test-rdma test-peer race bench bench-io bench-gen bench-sim bench-tpch demo docs validate calibrate lint fmt vet deps clean

# The DuckDB peer (cgo) lives in its own module so the main one stays
# cgo-free; `make test` runs its cross-check of our engine against DuckDB.
PEER := experiments/peers/duckdb
PEER_BIN := bin/duckdb-tpch
BENCH_DATA ?= out/data/sf1

all: build

build:
	$(GO) build -o $(BIN) ./cmd/gostachio

# The RDMA transport (engine/rdma, cluster's exchange_rdma.go) is cgo over
# libibverbs, behind the build tag rdma: the default build stays cgo-free;
# build-rdma makes bin/gostachio-rdma (needs libibverbs at run time).
VERBS_H := /usr/include/infiniband/verbs.h

build-rdma: deps-rdma
	$(GO) build -tags rdma ./...
	$(GO) build -tags rdma -o $(BIN)-rdma ./cmd/gostachio

# Vet of the rdma-tagged code, and its tests that need no RDMA hardware
# (the verbs themselves cannot run without it); skipped without headers.
test-rdma:
	@if [ -f $(VERBS_H) ]; then \
	  echo "$(GO) vet -tags rdma ./engine/rdma/... ./engine/cluster/..."; \
	  $(GO) vet -tags rdma ./engine/rdma/... ./engine/cluster/... && \
	  $(GO) test -tags rdma -count=1 -run 'RDMA|NewExchange' ./engine/cluster/; \
	else echo "note: $(VERBS_H) missing (apt-get install libibverbs-dev): rdma-tagged code not vetted"; fi

peer:
	cd $(PEER) && $(GO) build -o $(CURDIR)/$(PEER_BIN) ./cmd/duckdb-tpch

# gofmt check + vet + every test (the SF1 dbgen-exactness tests included).
# calibrate runs alone, after the rest: its held-out test times the engine
# against the simulator, and beside the other packages on 2 cores the engine
# ran 10x slower than simulated (CI, 2026-11-26) while the profile, fitted
# earlier in the same test binary, had been timed under a different load.
# The emulated cluster's launch-time measurements (TestMeasure*: the network
# stack's CPU, the co-location, the fabric's bursts) run alone too: they
# weigh the machine's busy time with and without their work, and beside the
# other packages the network's came out at 0.02 ns/B (CI, 2026-11-27).
test: deps
	@unformatted=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$unformatted" ]; then echo "gofmt needed:"; echo "$$unformatted"; exit 1; fi
	$(GO) vet ./...
	$(MAKE) test-rdma
	$(GO) test -count=1 -timeout 30m -skip '^TestMeasure' $$($(GO) list ./... | grep -v '/calibrate$$')
	$(GO) test -count=1 -timeout 10m -run '^TestMeasure' ./engine/cluster
	$(GO) test -count=1 -timeout 10m ./calibrate
	$(MAKE) test-peer

# DuckDB on our Parquet export: its answers, and our engine's results equal
# to DuckDB's at fractional scale factors.
test-peer:
	cd $(PEER) && $(GO) vet ./... && $(GO) test -count=1 -timeout 20m ./...

race:
	$(GO) test -race -short -count=1 -timeout 30m ./...

bench: build
	$(GO) test -run '^$$' -bench . -benchtime 3x -timeout 60m ./...

# The data plane's framing against Arrow IPC and Arrow Flight, measured side by side.
bench-wire:
	$(GO) test -run '^$$' -bench WireFormats -benchtime 2s -count 3 ./engine/cluster

bench-gen:
	$(GO) test -run '^$$' -bench GenSF1 -benchtime 1x ./tpch/

# The simulator's own cost as the cluster grows (weak scaling: SF per node
# constant): q3 under overlap on dgx-a100 from 8 to 128 nodes, exact (fluid
# network) and approximate (analytic network), beside the recorded runs of
# the simulator before its scaling work; then all 22 queries on 128 nodes at
# SF10,000 with the analytic network. Prints wall time, CPU time, peak RSS,
# tasks, time per task and the makespan against the base. Minutes: the
# fluid runs on 64 and 128 nodes are the slow ones
# (BENCH_SIM_FLUID_CASES=... to trim them).
BENCH_SIM_RECORDED ?= docs/figures/sim-scale-before.tsv
BENCH_SIM_FLUID_CASES ?= 8:500,16:1000,32:2000,64:4000
BENCH_SIM_CASES ?= 8:500,16:1000,32:2000,64:4000,128:10000
bench-sim: build
	$(BIN) bench sim --label fluid --net fluid --cases $(BENCH_SIM_FLUID_CASES) --queries q3 --recorded $(BENCH_SIM_RECORDED)
	$(BIN) bench sim --label analytic --net analytic --cases $(BENCH_SIM_CASES) --queries q3 --recorded $(BENCH_SIM_RECORDED)
	$(BIN) bench sim --label analytic --net analytic --cases 128:10000 --queries all

# All 22 queries at SF1, cold, serial vs overlap, side by side with DuckDB.
bench-tpch: build peer
	$(BIN) gen --sf 1 --out $(BENCH_DATA) --if-missing
	$(BIN) bench tpch --data $(BENCH_DATA) --duckdb $(PEER_BIN) --rounds 3

bench-io: build deps
	$(BIN) gen --sf 1 --out out/data/sf1 --if-missing
	$(BIN) bench io --data out/data/sf1 --pattern seq --bs 1MiB --qd 32 --vs-fio
	$(BIN) bench io --data out/data/sf1 --pattern rand --bs 4KiB --qd 32 --vs-fio

demo: build
	$(BIN) demo --data $(DEMO_DATA) --out out/demo

# The command-line reference in docs/cli, generated from the command tree
# (a test fails when it is out of date).
docs: build
	$(BIN) docs --out docs/cli

# Simulator vs engine: the calibrated devbox profile predicts every
# query x {serial, overlap} x two chunk sizes on the small dataset; prints the
# error table, writes out/validate-sf0.01/{results.csv,sim-vs-engine.png,svg}.
# `make validate VALIDATE_DATA=out/data/sf1 VALIDATE_ROUNDS=3` runs it at SF1.
# PROFILE unset: the shipped profile calibrated on a machine like this one
# (else devbox-calibrated); `make calibrate` writes PROFILE or devbox-calibrated.
VALIDATE_DATA ?= $(DEMO_DATA)
VALIDATE_ROUNDS ?= 1
PROFILE ?=
validate: build
	$(BIN) gen --sf 0.01 --out $(DEMO_DATA) --if-missing
	$(BIN) validate $(if $(PROFILE),--profile $(PROFILE)) --data $(VALIDATE_DATA) --queries all --policies serial,overlap \
	  --sets "chunk=16MiB;chunk=64MiB" --rounds $(VALIDATE_ROUNDS) --out out/validate-$(notdir $(VALIDATE_DATA))

# Re-calibrate the devbox profile from micro-benchmarks on this machine
# (storage reads on the SF1 lineitem file, kernels on its tables).
calibrate: build
	$(BIN) gen --sf 1 --out $(BENCH_DATA) --if-missing
	$(BIN) calibrate --micro --data $(BENCH_DATA) --out $(or $(PROFILE),sim/profiles/devbox-calibrated.yaml)

lint: vet
	@unformatted=$$(gofmt -l $$(git ls-files '*.go')); \
	if [ -n "$$unformatted" ]; then echo "gofmt needed:"; echo "$$unformatted"; exit 1; fi

vet:
	$(GO) vet ./...

fmt:
	gofmt -w $$(git ls-files '*.go')

# Tools the tests and benchmarks call (fio for `bench io --vs-fio`, iperf3
# for `cluster bench-exchange`), and the verbs headers for the rdma build tag.
deps: deps-rdma
	@command -v fio >/dev/null 2>&1 || { \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq fio) >/dev/null 2>&1 || echo "note: could not install fio (bench io --vs-fio needs it)"; \
	  else echo "note: fio is not installed (bench io --vs-fio needs it)"; fi; }
	@command -v iperf3 >/dev/null 2>&1 || { \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq iperf3) >/dev/null 2>&1 || echo "note: could not install iperf3 (cluster bench-exchange needs it)"; \
	  else echo "note: iperf3 is not installed (cluster bench-exchange needs it)"; fi; }

deps-rdma:
	@[ -f $(VERBS_H) ] || { \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq libibverbs-dev) >/dev/null 2>&1 || echo "note: could not install libibverbs-dev (the rdma build tag needs it)"; \
	  else echo "note: libibverbs-dev is not installed (the rdma build tag needs it)"; fi; }

clean:
	rm -rf bin out

# CUDA kernels. `make ptx` builds kernels/cuda/ptx/*.ptx from
# kernels/cuda/*.cu with nvcc (on a GPU machine) and records the sha256 of
# every source and PTX file in ptx/SOURCES.sha256; the PTX is checked in
# and embedded. `make ptx-check` (a Go test, also run by `make test`)
# fails when the sources changed since. PTX_ARCH is the virtual
# architecture the driver JIT-compiles forward from: compute_70 with nvcc
# 12, compute_75 with nvcc 13 (which dropped Volta).
CUDA_DIR := kernels/cuda
NVCC ?= nvcc
PTX_ARCH ?=

.PHONY: ptx ptx-check

ptx:
	@command -v $(NVCC) >/dev/null 2>&1 || { echo "make ptx: $(NVCC) not found: the PTX is built with the CUDA toolkit's nvcc, on a GPU machine; the checked-in PTX is unchanged" >&2; exit 1; }
	@set -e; cd $(CUDA_DIR); \
	arch="$(PTX_ARCH)"; \
	if [ -z "$$arch" ]; then \
	  major=$$($(NVCC) --version | sed -n 's/.*release \([0-9][0-9]*\)\..*/\1/p'); \
	  if [ "$${major:-0}" -ge 13 ]; then arch=compute_75; else arch=compute_70; fi; \
	fi; \
	rm -f ptx/*.ptx; \
	for f in *.cu; do \
	  echo "$(NVCC) -ptx -arch=$$arch -o ptx/$${f%.cu}.ptx $$f"; \
	  $(NVCC) -ptx -arch=$$arch -o ptx/$${f%.cu}.ptx $$f; \
	done; \
	sha256sum *.cu *.cuh ptx/*.ptx > ptx/SOURCES.sha256; \
	echo "wrote $(CUDA_DIR)/ptx/*.ptx and ptx/SOURCES.sha256 (-arch=$$arch)"

ptx-check:
	$(GO) test -count=1 -v -run '^TestPTXManifest$$' ./$(CUDA_DIR)

# GPU validation: the GPU machines have no Go toolchain, so the
# binaries are built here into gpucarry/ (git-ignored, xz-compressed to fit
# a carried working tree) and scripts/gpu-validate.sh runs them there.
.PHONY: gpu-carry
gpu-carry:
	rm -rf gpucarry && mkdir -p gpucarry
	$(GO) build -ldflags='-s -w -checklinkname=0' -o gpucarry/gostachio ./cmd/gostachio
	$(GO) test -c -ldflags='-s -w -checklinkname=0' -o gpucarry/cuda.test ./$(CUDA_DIR)
	$(GO) test -c -ldflags='-s -w -checklinkname=0' -o gpucarry/gpu.test ./engine/gpu
	$(GO) test -c -ldflags='-s -w -checklinkname=0' -o gpucarry/engine.test ./engine
	xz -T0 -6 gpucarry/gostachio gpucarry/*.test
	@ls -l gpucarry
