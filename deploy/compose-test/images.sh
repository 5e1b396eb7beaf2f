#!/usr/bin/env bash
# The images `make compose-test` runs: the local stand-ins (stand-ins.sh, built only when missing) and ours from their
# Dockerfiles (layers cached), tagged as the compose files name them. Sourced by lib.sh (run.sh, cluster.sh,
# postgres.sh), which builds the ones each needs; run by itself (`make compose-images`) it builds them all, so that CI
# can build them beside the steps that mostly wait (.ci/run), and compose-test then finds every layer built.
# Needs: root (the repository), fail; and file (the compose file whose tags name the images).

# A build's RUN steps get the least CPU share (2 of 1024) in a cgroup of their own: they yield the cores to anything
# else that wants them and take all when nothing does. A nice value would not reach them: the runtime starts each step
# in a session of its own, and with the kernel's autogroup scheduling a session counts as much as all of CI's steps.
build_cpu_shares=2

# The products the Dockerfile's build stage builds besides restock (its BUILD_ALSO): the benchmarks', so that CI's one
# release build of the package serves the image and `make bench` (bench-binaries.sh copies them out). Every image of
# restock-alerter the tests build passes the same, so that each finds the layers the others built.
restock_build_also="restock-ceiling restock-bench"

# The tag $file gives an image of ours.
tag_of() { awk -v name="$1" '$1 == "image:" && index($2, name ":") == 1 { print $2; exit }' "$file"; }

# build_images NAME:CONTEXT...: builds each image of ours from its Dockerfile (layers cached), tagged as $file names it.
build_images() {
    local image tag arguments
    for image in "$@"; do
        tag=$(tag_of "${image%%:*}"); [ -n "$tag" ] || fail "$file names no tagged image ${image%%:*}"
        arguments=()
        [ "${image#*:}" = . ] && arguments=(--build-arg BUILD_ALSO="$restock_build_also")
        nice -n 10 podman build --pull=never --cpu-shares="$build_cpu_shares" -q "${arguments[@]}" -t "$tag" "$root/${image#*:}" >/dev/null
    done
}

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
    set -euo pipefail
    root=$(cd "$(dirname "$0")/../.." && pwd)
    file="$root/docker-compose.yml"
    export CONTAINERS_CONF="$root/deploy/compose-test/containers.conf"
    fail() { echo "compose-images: FAILED: $*" >&2; exit 1; }
    start=$SECONDS
    "$root/deploy/compose-test/stand-ins.sh"
    build_images restock-alerter:. restock-mosquitto:deploy/mosquitto restock-prometheus:deploy/prometheus
    echo "compose-images: built in $((SECONDS - start)) s"
fi
