# The release image (.goreleaser.yaml dockers_v2): the repository
# Dockerfile's runtime stage around binaries GoReleaser built, one per
# platform in the build context at $TARGETPLATFORM/. Keep the two runtime
# stages alike (deploy/image_test.go compares them).
FROM debian:bookworm-slim
RUN apt-get update && apt-get install -y --no-install-recommends ca-certificates git \
    && rm -rf /var/lib/apt/lists/* \
    && useradd --system --uid 10001 --create-home agentsmith \
    && mkdir -p /home/agentsmith/.local/state \
    && chown -R 10001:0 /home/agentsmith && chmod -R g=u /home/agentsmith
ARG TARGETPLATFORM
COPY ${TARGETPLATFORM}/agentsmithd ${TARGETPLATFORM}/agentsmithctl ${TARGETPLATFORM}/trackersim /usr/local/bin/
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
