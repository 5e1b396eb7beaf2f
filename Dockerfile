# The restock tool (store service, CLI) in a small image: the binary stripped; curl for the healthcheck on /readyz.
ARG SWIFT_VERSION=6.3
FROM swift:${SWIFT_VERSION}-bookworm AS build
RUN apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
        libmosquitto-dev libsqlite3-dev pkg-config \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /src
# The build context is the root package only (.dockerignore): the manifest, Sources, and Tests, whose folders the
# manifest names. The benchmarks are a package of their own (Benchmarks/), so their dependencies are not fetched.
COPY Package.swift ./
COPY Sources ./Sources
COPY Tests ./Tests
RUN swift build -c release --product restock --static-swift-stdlib \
    && cp "$(swift build -c release --show-bin-path)/restock" /usr/local/bin/restock \
    && strip /usr/local/bin/restock

FROM debian:bookworm-slim
RUN apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
        libmosquitto1 libsqlite3-0 ca-certificates tzdata curl \
    && rm -rf /var/lib/apt/lists/* \
    && useradd --system --create-home --home-dir /var/lib/restock restock
COPY --from=build /usr/local/bin/restock /usr/local/bin/restock
USER restock
ENV XDG_STATE_HOME=/var/lib/restock
ENTRYPOINT ["restock"]
CMD ["--help"]
