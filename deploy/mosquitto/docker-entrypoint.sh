#!/bin/sh
# The broker image's entrypoint (deploy/mosquitto/Dockerfile), as the official one: give /mosquitto to the mosquitto user (read-only mounts stay as they are).
set -e
if [ "$(id -u)" = 0 ]; then
    chown -R mosquitto:mosquitto /mosquitto 2>/dev/null || true
fi
exec "$@"
