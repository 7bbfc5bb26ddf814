# syntax=docker/dockerfile:1
# Build a static binary, run it as a non-root user. The runtime image keeps a
# shell, git and CA certificates because pipelines are commands run by the
# daemon; add your pipeline's tools in an image built FROM this one.
FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
# agentsmithd version and agentsmith_build_info: docker build --build-arg VERSION=v1.2.3 --build-arg COMMIT=$(git rev-parse HEAD)
ARG VERSION=devel COMMIT=unknown
RUN CGO_ENABLED=0 go build -trimpath -ldflags="-s -w -X github.com/agentsmithd/agentsmithd/internal/buildinfo.Version=${VERSION} -X github.com/agentsmithd/agentsmithd/internal/buildinfo.Commit=${COMMIT}" -o /out/ ./cmd/agentsmithd ./cmd/agentsmithctl ./cmd/trackersim

FROM debian:bookworm-slim
RUN apt-get update && apt-get install -y --no-install-recommends ca-certificates git \
    && rm -rf /var/lib/apt/lists/* \
    && useradd --system --uid 10001 --create-home agentsmith
COPY --from=build /out/ /usr/local/bin/
# The example pipeline deploy/kubernetes/configmap.yaml points at.
COPY --chmod=0755 deploy/pipelines/ /usr/local/share/agentsmithd/pipelines/
USER 10001:10001
ENV TMPDIR=/home/agentsmith
EXPOSE 8080
ENTRYPOINT ["/usr/local/bin/agentsmithd"]
CMD ["serve", "-c", "/etc/agentsmithd/config.yaml"]
