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
# The images debian:bookworm-slim and swift:6.3-bookworm (and nats:2.15-alpine, for cluster.sh) are local
# stand-ins (stand-ins.sh), built once; restock-alerter, restock-mosquitto and restock-prometheus are built from the
# repository's Dockerfiles every run (layers cached), tagged as docker-compose.yml names them.
# Podman runs healthchecks from systemd timers, and there is no systemd here: a loop runs them (lib.sh).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
file="$root/docker-compose.yml"
cd "$root"
# COMPOSE_TEST_LOGS=FILE keeps every service's `docker-compose logs` in FILE (an absolute path).
# shellcheck source=lib.sh
. "$here/lib.sh"

step "restock-alerter, restock-mosquitto and restock-prometheus from their Dockerfiles"
build_images restock-alerter:. restock-mosquitto:deploy/mosquitto restock-prometheus:deploy/prometheus
podman image ls --format '{{.Repository}}:{{.Tag}}  {{.Size}}' | grep -E 'restock-|swift|debian|nats' || true

intruder_pid=""
on_exit() { [ -z "$intruder_pid" ] || kill "$intruder_pid" 2>/dev/null; }
start_compose_api
port=$(free_port)
prometheus_port=$(free_port)
export RESTOCK_MQTT_PORT=$port RESTOCK_PROMETHEUS_PORT=$prometheus_port
start_health_loop
step "docker-compose up -d (project $project, mosquitto on 127.0.0.1:$port, Prometheus on 127.0.0.1:$prometheus_port)"
compose up -d --no-build
compose ps
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
