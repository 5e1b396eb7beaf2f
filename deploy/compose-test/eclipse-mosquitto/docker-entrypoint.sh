#!/bin/sh
# As the official image's entrypoint: give /mosquitto to the mosquitto user (read-only mounts stay as they are).
set -e
if [ "$(id -u)" = 0 ]; then
    chown -R mosquitto:mosquitto /mosquitto 2>/dev/null || true
fi
exec "$@"
