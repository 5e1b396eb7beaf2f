# Shared by run.sh (docker-compose.yml) and cluster.sh (deploy/cluster/docker-compose.yml), sourced after they set
#   root     the repository, and
#   file     the compose file they run;
# gives them: step, fail, poll, free_port, compose (on project $project), start_compose_api, start_health_loop, health,
# and the EXIT trap that stops what they started and fails on anything of the project left behind (run
# `on_exit` first, if they define one). The stand-in images (stand-ins.sh) are built here; build_images (images.sh)
# builds ours.
export CONTAINERS_CONF="$root/deploy/compose-test/containers.conf"
WAIT=${COMPOSE_TEST_WAIT:-180}          # seconds allowed for each awaited condition

step() { printf '\n== %s (%ss)\n' "$*" "$SECONDS"; }
fail() { echo "compose-test: FAILED: $*" >&2; exit 1; }
# poll WHAT CONDITION (a shell command) every half second until it holds, or fail after $WAIT seconds.
poll() {
    local what=$1 condition=$2 deadline=$((SECONDS + WAIT))
    until eval "$condition"; do
        [ "$SECONDS" -lt "$deadline" ] || fail "$what: not within ${WAIT}s"
        sleep 0.5    # the interval between checks; the deadline above bounds the wait
    done
}
free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

step "stand-in images (built only when missing)"
"$root/deploy/compose-test/stand-ins.sh"

# shellcheck source=images.sh
. "$root/deploy/compose-test/images.sh"    # tag_of, build_images

work=$(mktemp -d /tmp/compose-test.XXXXXX)
project="restockcomposetest$$"
service_pid=""
health_pid=""
compose() { docker-compose --ansi never -p "$project" -f "$file" "$@"; }
volumes_before=$(podman volume ls -q | sort)
# The project's containers, networks and volumes still there (anonymous volumes too: any volume not there before).
leftovers() {
    { podman ps -a -q --filter "label=com.docker.compose.project=$project"
      podman network ls -q --filter "label=com.docker.compose.project=$project"
      comm -13 <(echo "$volumes_before") <(podman volume ls -q | sort); } 2>/dev/null | grep . || true
}
finish() {
    local status=$?
    if declare -F on_exit >/dev/null; then on_exit || true; fi
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

# Serves podman as the Docker API that docker-compose talks to.
start_compose_api() {
    step "podman system service as the Docker API"
    podman system service --time=0 "unix://$work/podman.sock" &
    service_pid=$!
    export DOCKER_HOST="unix://$work/podman.sock"
    poll "podman API socket" '[ -S "$work/podman.sock" ] && curl -fsS --unix-socket "$work/podman.sock" http://d/_ping >/dev/null 2>&1'
}

# Podman runs healthchecks from systemd timers, and there is no systemd here: a loop runs them instead (`podman
# healthcheck run` on each of the project's containers every 2 s), as Docker's engine does by itself.
start_health_loop() {
    while true; do
        for container in $(podman ps -q --filter "label=com.docker.compose.project=$project"); do
            podman healthcheck run "$container" >/dev/null 2>&1 || true
        done
        sleep 2    # the healthcheck interval of this stand-in scheduler
    done &
    health_pid=$!
}
# The health of service $1 (healthy, unhealthy, starting), or nothing.
health() { podman inspect --format '{{.State.Health.Status}}' "${project}_$1_1" 2>/dev/null; }
