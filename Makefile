# kinst: build and test entry points. `make help` lists the targets.

GO     ?= $(shell command -v go || echo /usr/local/go/bin/go)
SERIES ?= 6.1 6.12
# tcg (software emulation) is the safe default; auto uses KVM where a probe
# boot shows that it works.
ACCEL  ?= tcg
BIN    := $(CURDIR)/bin

# Every binary is static, so that the QEMU guests can run it.
export CGO_ENABLED := 0

.PHONY: help test deps vet hosttest fuzz vmtest kernels vmrun kinst kbench

# What the tests run besides Go: QEMU for the guest kernels, busybox for
# workloads inside them, bpftrace as the reference for differential tests,
# cpio to cross-check the initramfs writer, gcc and a static libc for the C
# program uprobe tests probe, <sys/sdt.h> for the USDT test program, the
# kernel's user-space headers for #include tests, and the real readers of
# what kinst writes: gdb (core files), protoc (Perfetto traces),
# Prometheus (metrics), bpftool (libbpf loading --emit-elf objects) and
# tcpdump (skboutput's pcap files). Each is a file that must exist, or a
# command on PATH, and the package that brings it.
DEPS := qemu-system-x86_64:qemu-system-x86 busybox:busybox-static bpftrace:bpftrace cpio:cpio \
	gcc:gcc /usr/lib/x86_64-linux-gnu/libc.a:libc6-dev \
	/usr/include/x86_64-linux-gnu/sys/sdt.h:systemtap-sdt-dev /usr/include/linux/socket.h:linux-libc-dev \
	gdb:gdb protoc:protobuf-compiler prometheus:prometheus bpftool:bpftool tcpdump:tcpdump
FUZZTIME ?= 20s

help:
	@echo "make test      install missing tools, go vet, host tests, fuzzing, then the suite in each guest kernel"
	@echo "make deps      install the Debian packages the tests need, if missing"
	@echo "make fuzz      run each fuzz target for FUZZTIME ($(FUZZTIME))"
	@echo "make kbench    kernel-function probe costs and attach times, inside each guest kernel"
	@echo "make hosttest  go test ./... on the host"
	@echo "make vmtest    go test ./... inside Debian $(SERIES) kernels under QEMU"
	@echo "make kernels   fetch the newest kernel of each series into .cache/kernels"

test: deps vet hosttest fuzz vmtest

deps:
	@missing=""; for d in $(DEPS); do w=$${d%%:*}; \
		if [ -e "$$w" ] || command -v "$$w" >/dev/null; then :; else missing="$$missing $${d#*:}"; fi; done; \
	if [ -n "$$missing" ]; then \
		echo "installing$$missing"; \
		sudo=""; [ "$$(id -u)" -eq 0 ] || sudo=sudo; \
		$$sudo apt-get update -q && DEBIAN_FRONTEND=noninteractive $$sudo apt-get install -y -q --no-install-recommends $$missing; \
	fi

# Each fuzz target runs from its seed corpus for a bounded time; the last
# takes programs from source through loading into the kernel. Each input
# that finds new coverage is minimized for at most a second (go test's
# default, a minute, left the workers minimizing, not fuzzing, for most
# of the 20 s: 120 k executions of FuzzCheck against 467 k).
FUZZ = $(GO) test -run '^$$' -fuzztime $(FUZZTIME) -fuzzminimizetime 1s
fuzz:
	$(FUZZ) -fuzz '^FuzzParse$$' ./syntax
	$(FUZZ) -fuzz '^FuzzPreprocess$$' ./preprocess
	$(FUZZ) -fuzz '^FuzzCacheEntry$$' ./preprocess
	$(FUZZ) -fuzz '^FuzzCheck$$' ./check
	$(FUZZ) -fuzz '^FuzzGenerate$$' ./codegen
	$(FUZZ) -fuzz '^FuzzParseArgs$$' ./usdt
	$(FUZZ) -fuzz '^FuzzPipeline$$' ./pipeline

vet:
	$(GO) vet ./...

hosttest:
	$(GO) test ./...

vmrun:
	$(GO) build -o $(BIN)/vmrun ./cmd/vmrun

# kinst, the workload command and the C program the uprobe tests probe go
# into the guests too (the guests have no compilers).
# kinst itself is built as released: without DWARF and the symbol table
# (-s -w), which Go's own stack traces do not need (they read pclntab),
# a third of the binary.
kinst:
	$(GO) build -trimpath -ldflags '-s -w' -o $(BIN)/kinst ./cmd/kinst
	$(GO) build -o $(BIN)/workload ./internal/workload
	gcc -O1 -g -static -o $(BIN)/kinst-target cmd/kinst/testdata/target.c

kernels: vmrun
	$(BIN)/vmrun kernels $(SERIES)

# The guests get kinst, workload, kinst-target, Debian's static busybox
# and bpftrace's shipped tools on their PATH.
# All paths are absolute: go test runs vmrun from each package's folder.
vmtest: vmrun kinst kernels
	@status=0; for k in $(SERIES); do \
		echo "=== guest kernel $$k: $$($(BIN)/vmrun kernels $$k | cut -d' ' -f2)"; \
		files="--file $(BIN)/kinst --file $(BIN)/workload --file $(BIN)/kinst-target"; \
		bb=$$(command -v busybox || true); if [ -n "$$bb" ]; then files="$$files --file $$bb"; fi; \
		for t in /usr/sbin/*.bt; do [ -e "$$t" ] && files="$$files --file $$t"; done; \
		$(GO) test -exec "$(BIN)/vmrun --kernel $$k --accel $(ACCEL) $$files --" ./... || status=1; \
	done; exit $$status

# The costs of the kernel-function mechanisms can only be measured in the
# guests: this host refuses kprobes and trampolines.
kbench: vmrun kinst kernels
	@for k in $(SERIES); do \
		echo "=== guest kernel $$k: $$($(BIN)/vmrun kernels $$k | cut -d' ' -f2)"; \
		$(GO) test -exec "$(BIN)/vmrun --kernel $$k --accel $(ACCEL) --file $(BIN)/kinst --file $(BIN)/workload --" \
			-run '^$$' -bench . -benchtime 3x ./attach || exit 1; \
	done
