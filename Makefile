.PHONY: demo test lint fuzz build

build:
	go build -o bin/ ./cmd/...

demo:
	go run ./cmd/agentsmithd demo

test:
	go test -race -count=1 -timeout 20m ./...

lint:
	gofmt -l . | tee /dev/stderr | (! read)
	go vet ./...
	staticcheck ./...

fuzz:
	go test -run '^$$' -fuzz FuzzParse -fuzztime 60s ./platforms/github
	go test -run '^$$' -fuzz FuzzParse -fuzztime 60s ./config
