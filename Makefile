GO ?= go

.PHONY: build test bench lint figures

# make build writes bin/bursar-sweep and bin/bursar with their VCS revision
# stamped, whatever GOFLAGS says: -buildvcs=true on the command line beats a
# GOFLAGS=-buildvcs=false from a CI image, and the revision is also passed
# with -ldflags -X (internal/manifest.Revision), which the binaries use when
# the build recorded none. Outside a git checkout both are left out.
PKG := github.com/bursar-hpc/bursar/internal/manifest
REV := $(shell git rev-parse HEAD 2>/dev/null)
ifneq ($(REV),)
REVTIME := $(shell git log -1 --format=%cI HEAD 2>/dev/null)
REVMOD := $(shell test -z "$$(git status --porcelain --untracked-files=no 2>/dev/null)" && echo false || echo true)
BUILDFLAGS := -buildvcs=true -ldflags "-X $(PKG).Revision=$(REV) -X $(PKG).RevisionTime=$(REVTIME) -X $(PKG).RevisionModified=$(REVMOD)"
endif

build:
	$(GO) build $(BUILDFLAGS) -o bin/ ./cmd/bursar-sweep ./cmd/bursar

test:
	$(GO) test -race ./...

bench:
	$(GO) test -run '^$$' -bench . -benchmem ./policy/ ./engine/ ./sweep/

lint:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt would change: $$out"; exit 1; fi
	$(GO) vet ./...
	$(GO) run honnef.co/go/tools/cmd/staticcheck@v0.8.2 ./...

figures:
	$(GO) run ./cmd/bursar-sweep paper --out results/paper
