# xnic build and test entry points. `make test` is what CI runs (.ci/run).
GO       ?= go
PKGS     ?= ./...
STATICCHECK_VERSION ?= v0.8.2
# Align functions to 64 bytes: the interpreter's hot loop runs 20-25% slower
# when the linker happens to place it across a 64-byte boundary.
LDFLAGS  ?= -funcalign=64

.PHONY: all build setup test tidy unit arm64 arm cachemodel vmtest bench bench-kernel bench-smoke lint generate clean

all: build

build:
	$(GO) build -ldflags=$(LDFLAGS) -o bin/xnic ./cmd/xnic

# Everything CI runs, after installing what the tiers need (as root): go.mod
# tidy, lint, unit and privileged tests (privileged ones skip with a message
# when not root), the benchmark smoke run, the arm64 tier and the VM tiers.
# Ends with a line per tier: passed, FAILED, or not run and why.
test:
	MAKE="$(MAKE)" bash scripts/test.sh

# Installs clang, libbpf-dev, qemu-user-static, the VM tiers' QEMU and guest
# kernels (idempotent, cached; root only).
setup:
	bash scripts/setup.sh

tidy:
	$(GO) mod tidy -diff

# The JIT is the default engine on amd64 and arm64; the end-to-end and
# kernel-differential suites run once more on the interpreter, the reference.
unit:
	$(GO) vet $(PKGS)
	$(GO) test -count=1 -timeout 20m $(PKGS)
	XNIC_ENGINE=interp $(GO) test -count=1 -timeout 10m ./examples ./dataplane

# The VM tiers (QEMU TCG guests, internal/vmtest): xnic's igb through VFIO
# against QEMU's igb, the fec against imx.enet on the i.MX8M Plus (and the
# i.MX hand-over from a kernel that had the MAC) and the i.MX6UL, Linux's igb
# and dwmac-intel against the served models, xnic's dwmac through VFIO
# against the served model. About 12 minutes on a quiet 2-core machine.
vmtest:
	$(GO) test -count=1 -timeout 40m -v ./internal/vmtest/ -run . -vmtest

# The arm64 code paths (cache maintenance, barriers, single-width register and
# descriptor accesses) run as arm64 binaries under qemu-user: the unit tests
# of dma, physmem, sim, nic, igb, dwmac, fec, dataplane and dataplane/bpf,
# -short (internal/vmtest/qemu-user-unit.sh; setup-arm64.sh installs
# qemu-user-static >= 10).
arm64:
	bash internal/vmtest/arm64-unit.sh

# The 32-bit ARMv7 build (GOARM=7: i.MX6, i.MX7, Vybrid) run as arm binaries
# under qemu-user: the unit tests of dma, physmem, sim, nic, fec, dataplane and
# dataplane/bpf, -short (the same qemu-user-static package ships
# qemu-arm-static).
arm:
	bash internal/vmtest/qemu-user-unit.sh arm

# The non-coherent drivers' whole test suites under sim's CPU cache model
# (sim.CacheEnv), one run per seed: both ForCPU operations, 64/128-byte lines,
# with and without refetches of clean lines.
CACHE_SEEDS ?= 1,refetch 2,128 3,64,invalidate,refetch 4,128,invalidate
cachemodel:
	for s in $(CACHE_SEEDS); do echo "XNIC_SIM_CACHE=$$s"; XNIC_SIM_CACHE=$$s $(GO) test -count=1 -timeout 10m ./dwmac ./fec || exit 1; done

# Benchmarks of every package; the benchmark binaries that compare xnic with
# the kernel (the examples', the dataplane's) each end with their table and
# append their samples to BENCH_REPORT, which the run ends with as one table:
# the reference parser and every example against the kernel's JIT test run,
# the whole path against its live-frames XDP, ratios and geometric means.
BENCH_REPORT ?= $(CURDIR)/bin/bench-report.jsonl
bench:
	@mkdir -p bin && rm -f $(BENCH_REPORT)
	XNIC_BENCH_REPORT=$(BENCH_REPORT) $(GO) test -ldflags=$(LDFLAGS) -run '^$$' -bench . -benchmem -count 5 -timeout 60m $(PKGS)
	@$(GO) run ./internal/kernelxdp/benchtable $(BENCH_REPORT)

# xnic against the kernel alone (root): every example and the reference parser
# against the kernel's JIT test run, the whole path against its live-frames XDP,
# each binary ending with its table (medians, ratios, geometric mean), then all
# of them as one table (BENCH_REPORT, as make bench). The JIT's
# figures do not depend on -funcalign (measured: geometric mean 1.97 with it,
# 1.98 without, same machine and hour); the flag stays for the interpreter.
bench-kernel:
	@mkdir -p bin && rm -f $(BENCH_REPORT)
	XNIC_BENCH_REPORT=$(BENCH_REPORT) $(GO) test -ldflags=$(LDFLAGS) -run '^$$' -bench 'BenchmarkExamples|BenchmarkVsKernel' -count 5 -timeout 30m ./examples ./dataplane
	@$(GO) run ./internal/kernelxdp/benchtable $(BENCH_REPORT)

bench-smoke:
	$(GO) test -run '^$$' -bench . -benchtime 1x -timeout 20m $(PKGS)

# Also builds and vets (test files included) for the 32-bit targets: arm
# (ARMv7: the i.MX6/7 and Vybrid SoCs) and 386 (a second 32-bit target for
# int overflow at 2^31, uintptr-sized addresses and 64-bit atomic alignment),
# and checks that the generated code is what `make generate` would write
# (the interpreter's ALU, jump, load and store cases, from dataplane/bpf's
# opTable).
lint:
	$(GO) test -count=1 -run 'TestInterpGenerated' ./dataplane/bpf
	$(GO) vet $(PKGS)
	$(GO) run honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION) $(PKGS)
	CGO_ENABLED=0 GOARCH=arm GOARM=7 $(GO) build $(PKGS)
	CGO_ENABLED=0 GOARCH=arm GOARM=7 $(GO) vet $(PKGS)
	CGO_ENABLED=0 GOARCH=386 $(GO) build $(PKGS)
	CGO_ENABLED=0 GOARCH=386 $(GO) vet $(PKGS)

# Rebuild the example XDP objects from their C sources (needs clang) and the
# generated code (the interpreter's ALU, jump, load and store cases from
# opTable; alone: go generate -run TestInterpGenerated ./dataplane/bpf).
generate:
	$(GO) generate $(PKGS)

clean:
	rm -rf bin
