# The restock tool (store service, CLI) in a small image: the binary stripped; curl for the healthcheck on /readyz.
ARG SWIFT_VERSION=6.3
FROM swift:${SWIFT_VERSION}-bookworm AS build
RUN apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
        libmosquitto-dev libsqlite3-dev pkg-config \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /src
# The build context is the package's sources only (.dockerignore): the manifest, and Sources, Tests and Benchmarks,
# whose folders the manifest names (SwiftPM checks that each target's folder exists).
COPY Package.swift ./
COPY Sources ./Sources
COPY Tests ./Tests
COPY Benchmarks ./Benchmarks
# restock, and the products BUILD_ALSO names (none by default), into /also. CI names the benchmarks' (.ci/run, through
# deploy/compose-test/images.sh), so that one release build of the package serves the image and `make bench`: they must
# be built in this same step, as SwiftPM's records of what it built do not carry over to another step or container.
ARG BUILD_ALSO=""
RUN swift build -c release --product restock --static-swift-stdlib \
    && for product in $BUILD_ALSO; do swift build -c release --product "$product" --static-swift-stdlib || exit 1; done \
    && bin="$(swift build -c release --show-bin-path)" \
    && cp "$bin/restock" /usr/local/bin/restock \
    && strip /usr/local/bin/restock \
    && mkdir -p /also && for product in $BUILD_ALSO; do cp "$bin/$product" /also/ || exit 1; done

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
