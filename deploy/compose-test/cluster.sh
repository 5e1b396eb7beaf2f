#!/usr/bin/env bash
# `make compose-test`, second part: runs deploy/cluster/docker-compose.yml, unchanged, under podman as run.sh runs
# docker-compose.yml (lib.sh), and proves the store outlives the node it is on (docs/operations.md, "Past one broker"):
#   - the three NATS nodes form a cluster and pass their healthcheck (/healthz), and the store starts after them;
#   - alerts flow: alice's and j.doe's `restock listen` (a dotted customer id: client id restock:apple:j~doe) print
#     alerts from the admin's restocks;
#   - the node the store is on (its /readyz names it) is SIGKILLed and left down: the store is ready again on another
#     node of its --broker list, and both customers go on getting alerts, with no human action;
#   - the node started again rejoins: it routes to the two others, and passes its healthcheck;
#   - `docker-compose down -v` leaves no container, network or volume of the project behind.
# The image nats:2.15-alpine is a local stand-in (stand-ins.sh: PyPI's nats-server, the one `make cluster-test` runs).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
file="$root/deploy/cluster/docker-compose.yml"
cd "$root"
# shellcheck source=lib.sh
. "$here/lib.sh"

step "restock-alerter from its Dockerfile"
build_images restock-alerter:.
start_compose_api
start_health_loop

step "docker-compose -f deploy/cluster/docker-compose.yml up -d (project $project)"
compose up -d --no-build
compose ps
echo "health: nats-1 $(health nats-1), nats-2 $(health nats-2), nats-3 $(health nats-3), store $(health store)"
for node in nats-1 nats-2 nats-3; do
    [ "$(health $node)" = healthy ] || fail "$node is not healthy although the store started after it"
done
[ "$(health store)" = healthy ] || fail "the store is not healthy although the customers started after it"

# What the store's /readyz answers ("ok: on mqtt://nats-2:1883"), or nothing while it is not ready.
readyz() { podman exec "${project}_store_1" curl -fsS http://127.0.0.1:9090/readyz 2>/dev/null || true; }
# How many other nodes of the cluster node $1 has routes to (its monitoring endpoint /routez; NATS pools several
# connections per node, so count the nodes named).
routes() {
    podman exec "${project}_$1_1" wget -q -O - http://127.0.0.1:8222/routez 2>/dev/null \
        | python3 -c 'import json, sys; print(len({r["remote_name"] for r in json.load(sys.stdin)["routes"]}))' 2>/dev/null || true
}
alerts() { compose logs --no-color "$1" 2>/dev/null | grep -c "Good news, $1:" || true; }

step "the cluster: every node routes to the two others"
for node in nats-1 nats-2 nats-3; do poll "$node routing to the two others" '[ "$(routes $node)" = 2 ]'; done
echo "routes: nats-1 $(routes nats-1), nats-2 $(routes nats-2), nats-3 $(routes nats-3)"

step "waiting for alerts in alice's and j.doe's logs"
poll "an alert printed by alice" '[ "$(alerts alice)" -ge 1 ]'
poll "an alert printed by j.doe" '[ "$(alerts j.doe)" -ge 1 ]'
compose logs --no-color alice j.doe | grep "Good news" | head -4

step "the store's node SIGKILLed and left down"
poll "the store ready" '[ -n "$(readyz)" ]'
before=$(readyz)
node=$(sed -nE 's|.*mqtt://(nats-[123]):1883.*|\1|p' <<<"$before")
[ -n "$node" ] || fail "/readyz does not name a node of the list: $before"
echo "/readyz: $before"
alice_before=$(alerts alice) doe_before=$(alerts j.doe)
killed_at=$SECONDS
podman kill --signal KILL "${project}_${node}_1" >/dev/null
# Left down: restart policy or not, the test stops it (a machine that is gone does not come back by itself).
podman stop --time 0 "${project}_${node}_1" >/dev/null 2>&1 || true
poll "the store ready on another node than $node" 'now=$(readyz); [ -n "$now" ] && ! grep -q "$node" <<<"$now"'
echo "/readyz after $((SECONDS - killed_at))s: $(readyz)"
poll "a new alert printed by alice with $node down" '[ "$(alerts alice)" -gt "$alice_before" ]'
poll "a new alert printed by j.doe with $node down" '[ "$(alerts j.doe)" -gt "$doe_before" ]'
echo "alerts with $node down: alice $alice_before → $(alerts alice), j.doe $doe_before → $(alerts j.doe) ($((SECONDS - killed_at))s after the kill)"
compose logs --no-color store | grep -E 'broker|connection' | tail -4 || true

step "$node started again rejoins"
compose start "$node"
poll "$node healthy again" '[ "$(health $node)" = healthy ]'
poll "$node routing to the two others" '[ "$(routes $node)" = 2 ]'
echo "routes: nats-1 $(routes nats-1), nats-2 $(routes nats-2), nats-3 $(routes nats-3)"
alice_before=$(alerts alice)
poll "alice's alerts going on" '[ "$(alerts alice)" -gt "$alice_before" ]'

step "docker-compose down -v"
compose down -v --remove-orphans --timeout 10
[ -z "$(leftovers)" ] || fail "left behind: $(leftovers)"
echo "no container, network or volume of $project left"
echo "compose-test (cluster): passed in ${SECONDS}s"
