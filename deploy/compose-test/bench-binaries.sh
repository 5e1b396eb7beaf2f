#!/usr/bin/env bash
# `make bench-build-in-image`: restock-bench, restock-ceiling and restock from the Dockerfile's build stage, which builds
# the benchmarks' products besides restock when the tests build it (images.sh: BUILD_ALSO), copied to OUT: CI builds
# the package in release once, for the image and the benchmarks both. The stage's layers come from the image built
# before (make compose-images; built here when missing). The binaries link the Swift runtime statically, as the
# image's restock does, and run on this machine (Debian bookworm, with libmosquitto1 and libsqlite3-0 from apt).
set -euo pipefail
out=${1:?usage: bench-binaries.sh OUT}
root=$(cd "$(dirname "$0")/../.." && pwd)
file="$root/docker-compose.yml"
export CONTAINERS_CONF="$root/deploy/compose-test/containers.conf"
fail() { echo "bench-binaries: FAILED: $*" >&2; exit 1; }
# shellcheck source=images.sh
. "$root/deploy/compose-test/images.sh"    # build_cpu_shares, restock_build_also
start=$SECONDS
"$root/deploy/compose-test/stand-ins.sh"
stage=restock-alerter-build:ci
nice -n 10 podman build --pull=never --cpu-shares="$build_cpu_shares" -q --build-arg BUILD_ALSO="$restock_build_also" \
    --target build -t "$stage" "$root" >/dev/null
container=$(podman create "$stage")
trap 'podman rm -f "$container" >/dev/null 2>&1 || true' EXIT
rm -rf "$out" && mkdir -p "$out"
podman cp "$container:/also/." "$out/"
podman cp "$container:/usr/local/bin/restock" "$out/restock"
[ -n "${SUDO_UID:-}" ] && chown -R "$SUDO_UID:${SUDO_GID:-$SUDO_UID}" "$out"
for binary in restock restock-ceiling restock-bench; do
    [ -x "$out/$binary" ] || fail "no $binary in $out"
done
"$out/restock" --version >/dev/null || fail "$out/restock does not run on this machine"
echo "bench-binaries: copied in $((SECONDS - start)) s to $out"
