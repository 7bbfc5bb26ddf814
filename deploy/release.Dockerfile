# The release image (.goreleaser.yaml dockers_v2): the repository
# Dockerfile's runtime stage around binaries GoReleaser built, one per
# platform in the build context at $TARGETPLATFORM/. Keep the two runtime
# stages alike (deploy/image_test.go compares them).
FROM debian:bookworm-slim
RUN apt-get update && apt-get install -y --no-install-recommends ca-certificates git \
    && rm -rf /var/lib/apt/lists/* \
    && useradd --system --uid 10001 --create-home agentsmith
ARG TARGETPLATFORM
COPY ${TARGETPLATFORM}/agentsmithd ${TARGETPLATFORM}/agentsmithctl ${TARGETPLATFORM}/trackersim /usr/local/bin/
# The example pipeline deploy/kubernetes/configmap.yaml points at.
COPY --chmod=0755 deploy/pipelines/ /usr/local/share/agentsmithd/pipelines/
USER 10001:10001
ENV TMPDIR=/home/agentsmith
EXPOSE 8080
ENTRYPOINT ["/usr/local/bin/agentsmithd"]
CMD ["serve", "-c", "/etc/agentsmithd/config.yaml"]
