#!/usr/bin/env bash
# `make compose-test`, third part: runs deploy/postgres/docker-compose.yml, unchanged, under podman as run.sh runs
# docker-compose.yml (lib.sh), and proves the store outlives its container (docs/operations.md, "Running on PostgreSQL"):
#   - PostgreSQL and mosquitto pass their healthchecks before the store starts; the standby and the customers start
#     once the store is online; the standby passes its healthcheck (/livez) while it waits;
#   - alerts flow: alice's and bob's `restock listen` print alerts from the admin's restocks;
#   - the store is live (/readyz 200, its state in PostgreSQL), the standby waits (/readyz 503 `standby: …`);
#   - the store's container is SIGKILLed: the standby's log says `… this standby takes over`, its /readyz answers 200
#     with a higher lease epoch (the takeover time is printed), and both customers print alerts raised after the kill;
#   - the killed container stays down (a kill is a stop by hand, for the restart policy as for Docker's); started
#     again, unchanged, it exits refusing while the standby holds the lease, and the lease in PostgreSQL stays the
#     standby's: never a second owner;
#   - the database's password appears in no log; `docker-compose down -v` leaves nothing of the project behind.
# The image postgres:15-bookworm is a local stand-in (stand-ins.sh: Debian's PostgreSQL 15); restock-alerter and
# restock-mosquitto are those run.sh builds (layers cached: nothing is built again when they are current).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
file="$root/deploy/postgres/docker-compose.yml"
cd "$root"
# shellcheck source=lib.sh
. "$here/lib.sh"

step "restock-alerter and restock-mosquitto from their Dockerfiles (cached)"
build_images restock-alerter:. restock-mosquitto:deploy/mosquitto
start_compose_api
port=$(free_port)
# A password of this run's own: it must reach PostgreSQL and the stores through the environment, and no log.
password="pw-$(python3 -c 'import secrets; print(secrets.token_hex(12))')"
export RESTOCK_MQTT_PORT=$port RESTOCK_DATABASE_PASSWORD=$password
start_health_loop

step "docker-compose -f deploy/postgres/docker-compose.yml up -d (project $project, mosquitto on 127.0.0.1:$port)"
compose up -d --no-build
compose ps
echo "health: postgres $(health postgres), mosquitto $(health mosquitto), store $(health store)"
[ "$(health postgres)" = healthy ] || fail "postgres is not healthy although the store started after it"
[ "$(health mosquitto)" = healthy ] || fail "mosquitto is not healthy although the store started after it"
[ "$(health store)" = healthy ] || fail "the store is not healthy although the standby and the customers started after it"
poll "the standby healthy (/livez) while it waits" '[ "$(health store-standby)" = healthy ]'

container() { echo "${project}_$1_1"; }
# What service $1 answers on $2 (/readyz, /livez): its HTTP status, a space, the body's first line; "000 " unreachable.
http() { { podman exec "$(container "$1")" curl -sS -m 5 -w '\n%{http_code}' "http://127.0.0.1:9090$2" 2>/dev/null || true; } \
    | awk '{ line[NR] = $0 } END { printf "%s %s\n", (NR ? line[NR] : "000"), line[1] }'; }
status() { http "$1" "$2" | cut -d' ' -f1; }
epoch() { http "$1" /readyz | sed -nE 's/.*lease epoch ([0-9]+).*/\1/p'; }
# Whether service $1's log has a line with $2 (grep reads it all: with pipefail, -q would fail docker-compose by SIGPIPE).
logs_have() { compose logs --no-color "$1" 2>/dev/null | grep -- "$2" >/dev/null; }
alerts() { compose logs --no-color "$1" 2>/dev/null | grep -c "Good news, $1:" || true; }
# Alerts printed by customer $1 that the store raised after $2 (an ISO time, UTC, as `restock listen` prints it).
alerts_after() {
    { compose logs --no-color "$1" 2>/dev/null | grep "Good news, $1:" || true; } \
        | grep -oE '[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:.]+Z' | awk -v t="$2" '$1 > t' | wc -l
}
# The lease as PostgreSQL holds it: owner and epoch.
lease() {
    podman exec "$(container postgres)" psql -U restock -d restock -At -F ' ' \
        -c "SELECT owner, epoch FROM restock_lease WHERE store = 'apple'" 2>/dev/null || true
}

step "waiting for alerts in alice's and bob's logs"
poll "an alert printed by alice" '[ "$(alerts alice)" -ge 1 ]'
poll "an alert printed by bob" '[ "$(alerts bob)" -ge 1 ]'
compose logs --no-color alice bob | grep "Good news" | head -4

step "the store live, the standby waiting"
poll "the store's /readyz 200" '[ "$(status store /readyz)" = 200 ]'
echo "store /readyz:   $(http store /readyz)"
echo "standby /readyz: $(http store-standby /readyz)"
echo "standby /livez:  $(http store-standby /livez)"
grep -q 'state in postgres://restock@postgres:5432/restock, lease epoch' <<<"$(http store /readyz)" \
    || fail "the store's /readyz does not name the database and its lease"
[ "$(status store-standby /readyz)" = 503 ] || fail "the standby's /readyz is not 503 while it waits"
grep -q standby <<<"$(http store-standby /readyz)" || fail "the standby's /readyz does not say it is a standby"
[ "$(status store-standby /livez)" = 200 ] || fail "the standby's /livez is not 200 while it waits"
logs_have store-standby 'standby for store apple: waiting' || fail "the standby's log does not say it waits"
epoch_before=$(epoch store)
echo "lease in PostgreSQL: $(lease) (owner, epoch)"

step "the store's container SIGKILLed"
alice_before=$(alerts alice) bob_before=$(alerts bob)
killed_iso=$(date -u +%Y-%m-%dT%H:%M:%S.%3NZ)
killed_at=$(date +%s.%N)
podman kill --signal KILL "$(container store)" >/dev/null
poll "the standby's /readyz 200" '[ "$(status store-standby /readyz)" = 200 ]'
takeover=$(python3 -c "import time; print(f'{time.time() - $killed_at:.1f}')")
poll "the standby's log: … this standby takes over" 'logs_have store-standby "this standby takes over"'
echo "killed at $killed_iso"
compose logs --no-color store-standby | grep "this standby takes over"
echo "standby /readyz: $(http store-standby /readyz)"
echo "takeover: the standby online ${takeover}s after the SIGKILL (checked every 0.5 s)"
[ "$(epoch store-standby)" -gt "$epoch_before" ] || fail "the lease epoch did not rise: $epoch_before → $(epoch store-standby)"
poll "an alert raised after the kill printed by alice" '[ "$(alerts_after alice "$killed_iso")" -ge 1 ]'
poll "an alert raised after the kill printed by bob" '[ "$(alerts_after bob "$killed_iso")" -ge 1 ]'
echo "alerts: alice $alice_before → $(alerts alice), bob $bob_before → $(alerts bob);" \
    "raised after the kill: alice $(alerts_after alice "$killed_iso"), bob $(alerts_after bob "$killed_iso")" \
    "($(python3 -c "import time; print(f'{time.time() - $killed_at:.0f}')")s after the kill)"
compose logs --no-color alice bob | grep "Good news" | awk -v t="$killed_iso" '{ for (i = 1; i <= NF; i++) if ($i ~ /Z$/ && $i > t) { print; break } }' | head -2 || true

step "the killed container: left down, then started again: no second owner"
# A kill is a stop by hand: the restart policy leaves the container down (Docker does the same). Started again as it
# is (`restock serve`, not a standby) while the standby holds the lease, the store must exit refusing — the restart
# policy then starts it again and again, refused each time — and never take the store back.
[ "$(podman inspect --format '{{.State.Status}} {{.RestartCount}}' "$(container store)")" = "exited 0" ] \
    || fail "the killed store's container did not stay down: $(podman inspect --format '{{.State.Status}}, {{.RestartCount}} restarts' "$(container store)")"
echo "the killed container stayed down (exited, 0 restarts); docker-compose start store"
compose start store
poll "the store started again, refusing" 'logs_have store "holds the lease on postgres://restock@postgres:5432/restock"'
compose logs --no-color store | grep -m1 -E '^store_1 +\| error' || true
owner_epoch=$(lease)
[ "$(cut -d' ' -f2 <<<"$owner_epoch")" = "$(epoch store-standby)" ] \
    || fail "the lease in PostgreSQL ($owner_epoch) is not the standby's (epoch $(epoch store-standby))"
[ "$(status store /readyz)" != 200 ] || fail "the store started again answers /readyz 200 beside the standby"
alice_before=$(alerts alice)
poll "alice's alerts going on" '[ "$(alerts alice)" -gt "$alice_before" ]'
[ "$(status store-standby /readyz)" = 200 ] || fail "the former standby is no longer ready: $(http store-standby /readyz)"
[ "$(lease)" = "$owner_epoch" ] || fail "the lease moved from the former standby: $owner_epoch → $(lease)"
echo "lease in PostgreSQL: $owner_epoch, the former standby's, after alice's next alert; the store's container:" \
    "$(podman inspect --format '{{.RestartCount}} restarts' "$(container store)"), $(compose logs --no-color store | grep -c 'holds the lease' || true) refusals"
# Podman restarts a container at once, with no back-off (Docker doubles its delay from 100 ms): the refused store
# starts over and over. Removed by force, the loop ends (`down` passes over a container between two restarts).
podman rm -f --time 5 "$(container store)" >/dev/null

step "logs"
if [ "$(compose logs --no-color 2>/dev/null | grep -cF "$password" || true)" != 0 ]; then fail "the database's password is in the logs"; fi
echo "the database's password appears in no log"
compose logs --no-color store-standby | grep -E 'info|notice|warning|error' | cut -c1-200 | tail -6 || true

step "docker-compose down -v"
compose down -v --remove-orphans --timeout 10
[ -z "$(leftovers)" ] || fail "left behind: $(leftovers)"
echo "no container, network or volume of $project left"
echo "compose-test (postgres): passed in ${SECONDS}s; takeover ${takeover}s"
