#!/usr/bin/env bash
# `make compose-test`: runs the repository's docker-compose.yml, unchanged, under podman and Debian's
# docker-compose (through `podman system service`, as Docker's API), on a free loopback port, and proves:
#   - alerts flow: alice's and bob's `restock listen` print alerts from the admin's restocks;
#   - the production mosquitto configuration holds: bob, from the host, gets nothing of alice's and cannot
#     unsubscribe her, and cannot connect with alice's session client id (restock:apple:alice);
#   - the healthchecks pass (mosquitto: a publish; the store: /readyz), and services wait on them (depends_on);
#   - Prometheus scrapes the store: through its HTTP API, the store's target is up and its alert counter rises;
#   - mosquitto's and the store's logs are readable with `docker-compose logs`;
#   - `docker-compose down -v` leaves no container, network or volume of the project behind.
# The images debian:bookworm-slim and swift:6.3-bookworm are local stand-ins (stand-ins.sh), built once;
# restock-alerter, restock-mosquitto and restock-prometheus are built from the repository's Dockerfiles every run
# (layers cached), tagged as docker-compose.yml names them.
# Podman runs healthchecks from systemd timers, and there is no systemd here: a loop runs them instead (`podman
# healthcheck run` on each of the project's containers every 2 s), as Docker's engine does by itself.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
cd "$root"
export CONTAINERS_CONF="$here/containers.conf"
WAIT=${COMPOSE_TEST_WAIT:-180}          # seconds allowed for each awaited condition
# COMPOSE_TEST_LOGS=FILE keeps every service's `docker-compose logs` in FILE (an absolute path).

step() { printf '\n== %s (%ss)\n' "$*" "$SECONDS"; }
fail() { echo "compose-test: FAILED: $*" >&2; exit 1; }
# poll CONDITION (a shell command) every half second until it holds, or fail after $WAIT seconds.
poll() {
    local what=$1 condition=$2 deadline=$((SECONDS + WAIT))
    until eval "$condition"; do
        [ "$SECONDS" -lt "$deadline" ] || fail "$what: not within ${WAIT}s"
        sleep 0.5    # the interval between checks; the deadline above bounds the wait
    done
}

step "stand-in images (built only when missing)"
"$here/stand-ins.sh"

# The tag docker-compose.yml gives an image of ours.
tag_of() { awk -v name="$1" '$1 == "image:" && index($2, name ":") == 1 { print $2; exit }' docker-compose.yml; }
step "restock-alerter, restock-mosquitto and restock-prometheus from their Dockerfiles"
for image in restock-alerter:. restock-mosquitto:deploy/mosquitto restock-prometheus:deploy/prometheus; do
    tag=$(tag_of "${image%%:*}"); [ -n "$tag" ] || fail "docker-compose.yml names no tagged image ${image%%:*}"
    nice -n 10 podman build --pull=never -q -t "$tag" "${image#*:}" >/dev/null
done
podman image ls --format '{{.Repository}}:{{.Tag}}  {{.Size}}' | grep -E 'restock-|swift|debian' || true

work=$(mktemp -d /tmp/compose-test.XXXXXX)
project="restockcomposetest$$"
service_pid=""
intruder_pid=""
health_pid=""
compose() { docker-compose --ansi never -p "$project" -f "$root/docker-compose.yml" "$@"; }
volumes_before=$(podman volume ls -q | sort)
# The project's containers, networks and volumes still there (anonymous volumes too: any volume not there before).
leftovers() {
    { podman ps -a -q --filter "label=com.docker.compose.project=$project"
      podman network ls -q --filter "label=com.docker.compose.project=$project"
      comm -13 <(echo "$volumes_before") <(podman volume ls -q | sort); } 2>/dev/null | grep . || true
}
finish() {
    local status=$?
    [ -n "$intruder_pid" ] && kill "$intruder_pid" 2>/dev/null || true
    [ -n "$health_pid" ] && kill "$health_pid" 2>/dev/null || true
    if [ -n "$service_pid" ]; then
        if [ "$status" -ne 0 ]; then echo "--- docker-compose logs (last 40 lines each)"; compose logs --no-color --tail=40 || true; fi
        compose down -v --remove-orphans --timeout 10 >/dev/null 2>&1 || true
        kill "$service_pid" 2>/dev/null || true
        wait "$service_pid" 2>/dev/null || true
    fi
    left=$(leftovers)
    if [ -n "$left" ]; then echo "compose-test: left behind, removing: $left" >&2; status=1
        podman rm -f $left >/dev/null 2>&1; podman network rm $left >/dev/null 2>&1; podman volume rm $left >/dev/null 2>&1; fi
    rm -rf "$work"
    exit "$status"
}
trap finish EXIT

step "podman system service as the Docker API"
podman system service --time=0 "unix://$work/podman.sock" &
service_pid=$!
export DOCKER_HOST="unix://$work/podman.sock"
poll "podman API socket" '[ -S "$work/podman.sock" ] && curl -fsS --unix-socket "$work/podman.sock" http://d/_ping >/dev/null 2>&1'

free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
port=$(free_port)
prometheus_port=$(free_port)
export RESTOCK_MQTT_PORT=$port RESTOCK_PROMETHEUS_PORT=$prometheus_port
# The healthcheck scheduler systemd would be (see the top).
while true; do
    for container in $(podman ps -q --filter "label=com.docker.compose.project=$project"); do
        podman healthcheck run "$container" >/dev/null 2>&1 || true
    done
    sleep 2    # the healthcheck interval of this stand-in scheduler
done &
health_pid=$!
step "docker-compose up -d (project $project, mosquitto on 127.0.0.1:$port, Prometheus on 127.0.0.1:$prometheus_port)"
compose up -d --no-build
compose ps
health() { podman inspect --format '{{.State.Health.Status}}' "${project}_$1_1" 2>/dev/null; }
echo "health: mosquitto $(health mosquitto), store $(health store)"
[ "$(health mosquitto)" = healthy ] || fail "mosquitto is not healthy although the store started after it"
[ "$(health store)" = healthy ] || fail "the store is not healthy although the customers started after it"

alerts() { compose logs --no-color "$1" 2>/dev/null | grep -c "Good news, $1" || true; }
step "waiting for alerts in alice's and bob's logs"
poll "an alert printed by alice" '[ "$(alerts alice)" -ge 1 ]'
poll "an alert printed by bob" '[ "$(alerts bob)" -ge 1 ]'
compose logs --no-color alice bob | grep "Good news" | head -4

step "intruder: bob, from the host, reads alice's topics and unsubscribes her"
sub=(mosquitto_sub -h 127.0.0.1 -p "$port" -u bob -P bob-secret -q 1 -v)
"${sub[@]}" -t 'restock/apple/customers/alice/#' -t 'restock/apple/customers/+/alerts' >"$work/intruder.txt" 2>&1 &
intruder_pid=$!
mosquitto_pub -h 127.0.0.1 -p "$port" -u bob -P bob-secret -q 1 -t restock/apple/unsubscribe/alice -m '{"all":true}'
alice_before=$(alerts alice)
intruder_got_nothing() {
    if grep -q 'customers/alice' "$work/intruder.txt"; then cat "$work/intruder.txt"; fail "bob received alice's messages"; fi
}
# One more restock reaches alice (her watch survived) while bob's subscriber listens (it gets his own alert);
# anything of alice's at bob's subscriber fails at once.
poll "a new alert printed by alice" 'intruder_got_nothing; [ "$(alerts alice)" -gt "$alice_before" ]'
poll "bob's own alert at his wildcard subscriber" 'intruder_got_nothing; grep -q "^restock/apple/customers/bob/alerts " "$work/intruder.txt"'
kill "$intruder_pid"; wait "$intruder_pid" 2>/dev/null || true; intruder_pid=""
intruder_got_nothing
mirror=$(mosquitto_sub -h 127.0.0.1 -p "$port" -u alice -P alice-secret -t restock/apple/customers/alice/subscriptions -C 1 -W 20)
grep -q '"sku":"iphone-15"' <<<"$mirror" || fail "alice's watch is gone: $mirror"
echo "bob got $(wc -l <"$work/intruder.txt") message(s), all his own:"; cut -c1-160 "$work/intruder.txt"
echo "alice still watching: $mirror"

step "intruder: bob, from the host, connects with alice's session client id"
if mosquitto_sub -h 127.0.0.1 -p "$port" -u bob -P bob-secret -i restock:apple:alice -c -q 1 \
        -t restock/apple/customers/bob/alerts -C 1 -W 5 >"$work/hijack.txt" 2>&1; then
    fail "bob connected as restock:apple:alice: $(cat "$work/hijack.txt")"
fi
grep -q "not authorised" "$work/hijack.txt" || fail "bob as restock:apple:alice: not refused as expected: $(cat "$work/hijack.txt")"
echo "refused: $(head -1 "$work/hijack.txt")"
alice_before=$(alerts alice)
poll "alice's session still delivers" '[ "$(alerts alice)" -gt "$alice_before" ]'

step "Prometheus scrapes the store (its HTTP API on 127.0.0.1:$prometheus_port)"
# The value of an instant query's first series, or nothing.
query() {
    curl -fsS --get "http://127.0.0.1:$prometheus_port/api/v1/query" --data-urlencode "query=$1" 2>/dev/null \
        | python3 -c 'import json, sys; r = json.load(sys.stdin)["data"]["result"]; print(r[0]["value"][1] if r else "")' 2>/dev/null || true
}
poll "the store's target up in Prometheus" '[ "$(query "up{job=\"restock\"}")" = 1 ]'
poll "an alert counted in Prometheus" '[ "$(query "sum(restock_alerts_published_total)")" != "" ] && [ "$(query "sum(restock_alerts_published_total)")" -ge 1 ]'
published_before=$(query "sum(restock_alerts_published_total)")
poll "the alert counter rising in Prometheus (was $published_before)" '[ "$(query "sum(restock_alerts_published_total)")" -gt "$published_before" ]'
echo "restock_alerts_published_total: $published_before, then $(query "sum(restock_alerts_published_total)"); target up: $(query "up{job=\"restock\"}"); watches $(query "restock_watches")"
curl -fsS "http://127.0.0.1:$prometheus_port/api/v1/rules" | grep -q '"name":"RestockSessionDown"' || fail "Prometheus did not load deploy/prometheus/alerts.yml"

step "docker-compose logs mosquitto store"
compose logs --no-color mosquitto store >"$work/logs.txt"
grep -q 'mosquitto version .* running' "$work/logs.txt" || fail "mosquitto's log is not in docker-compose logs"
grep -q 'store_1 .*apple' "$work/logs.txt" || fail "the store's log is not in docker-compose logs"
grep -q 'restock_clientid: refused client id restock:apple:alice for user bob' "$work/logs.txt" || fail "mosquitto did not log the refused client id"
grep -E 'mosquitto version|Loading plugin|New client connected from .* as restock:apple |restock_clientid: refused' "$work/logs.txt" | head -4
grep 'store_1' "$work/logs.txt" | head -3

[ -z "${COMPOSE_TEST_LOGS:-}" ] || compose logs --no-color >"$COMPOSE_TEST_LOGS"   # all services' logs, kept on request

step "docker-compose down -v"
compose down -v --remove-orphans --timeout 10
[ -z "$(leftovers)" ] || fail "left behind: $(leftovers)"
echo "no container, network or volume of $project left"
echo "compose-test: passed in ${SECONDS}s"
