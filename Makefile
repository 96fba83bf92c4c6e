GO ?= go

.PHONY: build test bench lint figures

build:
	$(GO) build ./...

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
