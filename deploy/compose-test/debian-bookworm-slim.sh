#!/usr/bin/env bash
# Stand-in for debian:bookworm-slim (test scaffolding; no registry is reachable here): a minbase bookworm
# root file system from debootstrap, imported under the official name. About 2 minutes.
set -euo pipefail
image=docker.io/library/debian:bookworm-slim
podman image exists "$image" && exit 0
root=$(mktemp -d /var/tmp/compose-test-debian.XXXXXX)
trap 'rm -rf "$root"' EXIT
nice -n 10 debootstrap --variant=minbase bookworm "$root" http://deb.debian.org/debian >"$root.log" 2>&1 \
    || { tail -20 "$root.log"; rm -f "$root.log"; exit 1; }
rm -f "$root.log"
# As the official image: security updates listed, apt caches not kept, no package lists shipped.
cat >"$root/etc/apt/sources.list" <<'LIST'
deb http://deb.debian.org/debian bookworm main
deb http://deb.debian.org/debian bookworm-updates main
deb http://deb.debian.org/debian-security bookworm-security main
LIST
rm -rf "$root"/var/lib/apt/lists/* "$root"/var/cache/apt/*.bin "$root"/var/cache/apt/archives/*.deb
tar -C "$root" -c . | podman import -q --change 'CMD ["bash"]' - "$image" >/dev/null
echo "built stand-in $image"
