# kinst: build and test entry points. `make help` lists the targets.

GO     ?= go
SERIES ?= 6.1 6.12
# tcg (software emulation) is the safe default; auto uses KVM where a probe
# boot shows that it works.
ACCEL  ?= tcg
BIN    := $(CURDIR)/bin

# Every binary is static, so that the QEMU guests can run it.
export CGO_ENABLED := 0

.PHONY: help test vet hosttest vmtest kernels vmrun kinst

help:
	@echo "make test      go vet, host tests, then the whole suite in each guest kernel"
	@echo "make hosttest  go test ./... on the host"
	@echo "make vmtest    go test ./... inside Debian $(SERIES) kernels under QEMU"
	@echo "make kernels   fetch the newest kernel of each series into .cache/kernels"

test: vet hosttest vmtest

vet:
	$(GO) vet ./...

hosttest:
	$(GO) test ./...

vmrun:
	$(GO) build -o $(BIN)/vmrun ./cmd/vmrun

# cmd/kinst arrives with the first working pipeline; until then there is
# nothing to build or to pass to the guests.
kinst:
	@if [ -d cmd/kinst ]; then echo "$(GO) build -o $(BIN)/kinst ./cmd/kinst"; $(GO) build -o $(BIN)/kinst ./cmd/kinst; \
	else echo "no ./cmd/kinst yet: guests run without a kinst binary"; rm -f $(BIN)/kinst; fi

kernels: vmrun
	$(BIN)/vmrun kernels $(SERIES)

# The guests get kinst (when built) and Debian's static busybox on their PATH.
# All paths are absolute: go test runs vmrun from each package's folder.
vmtest: vmrun kinst kernels
	@status=0; for k in $(SERIES); do \
		echo "=== guest kernel $$k: $$($(BIN)/vmrun kernels $$k | cut -d' ' -f2)"; \
		files=""; \
		if [ -x $(BIN)/kinst ]; then files="$$files --file $(BIN)/kinst"; fi; \
		bb=$$(command -v busybox || true); if [ -n "$$bb" ]; then files="$$files --file $$bb"; fi; \
		$(GO) test -exec "$(BIN)/vmrun --kernel $$k --accel $(ACCEL) $$files --" ./... || status=1; \
	done; exit $$status
