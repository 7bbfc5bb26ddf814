.PHONY: demo test lint fuzz build chaos soak image

# The one image name (compose, Kubernetes, Helm, .goreleaser.yaml use it too).
IMAGE ?= ghcr.io/agentsmithd/agentsmithd
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo devel)
COMMIT ?= $(shell git rev-parse HEAD 2>/dev/null || echo unknown)

build:
	go build -o bin/ ./cmd/...

# The image from the Dockerfile, tagged with the version.
image:
	docker build --build-arg VERSION=$(VERSION) --build-arg COMMIT=$(COMMIT) -t $(IMAGE):$(VERSION) .

demo:
	go run ./cmd/agentsmithd demo

test:
	go test -race -count=1 -timeout 20m ./...

lint:
	gofmt -l . | tee /dev/stderr | (! read)
	go vet ./...
	staticcheck ./...

# Every Fuzz* target in the repository, one minute each (FUZZTIME=10s for less).
FUZZTIME ?= 60s
fuzz:
	@grep -rl --include='*_test.go' '^func Fuzz' . | xargs -n1 dirname | sort -u | while read -r d; do \
		for f in $$(grep -ho '^func Fuzz[A-Za-z0-9_]*' $$d/*_test.go | cut -c6-); do \
			echo "== $$d $$f"; go test -run '^$$' -fuzz "^$$f$$" -fuzztime $(FUZZTIME) $$d || exit 1; \
		done; \
	done

chaos:
	go run ./cmd/chaos

# The soak: chaos at a steady rate for SOAK (30m by default; SOAK=2h), sampling
# RSS, goroutines, fds and Redis every minute; fails on unbounded growth or a
# lost ticket, prints the table and writes soak.png in its work dir (docs/soak.md).
SOAK ?= 30m
soak:
	go run ./cmd/chaos -soak $(SOAK)
