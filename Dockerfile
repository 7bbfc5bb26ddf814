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
    && useradd --system --uid 10001 --create-home agentsmith \
    && mkdir -p /home/agentsmith/.local/state \
    && chown -R 10001:0 /home/agentsmith && chmod -R g=u /home/agentsmith
COPY --from=build /out/ /usr/local/bin/
# The example pipeline deploy/kubernetes/configmap.yaml points at.
COPY --chmod=0755 deploy/pipelines/ /usr/local/share/agentsmithd/pipelines/
USER 10001:10001
# Under an arbitrary UID in group 0 with HOME=/ (OpenShift's restricted
# SCC), ~/.local/state is /.local/state: the state dir the default work
# dir sits in (lifecycle.DefaultWorkRoot) is set here instead, inside the
# home the RUN above makes group 0 writable (chgrp 0, chmod g=u: OpenShift's
# "Support arbitrary user ids" guideline). UID 10001 gets the same path it
# had by HOME, and the Kubernetes manifests' work volume is mounted there.
ENV TMPDIR=/home/agentsmith
ENV XDG_STATE_HOME=/home/agentsmith/.local/state
EXPOSE 8080
ENTRYPOINT ["/usr/local/bin/agentsmithd"]
CMD ["serve", "-c", "/etc/agentsmithd/config.yaml"]
