#!/bin/sh
# Builds the restock_clientid mosquitto plugin: build.sh OUTPUT.so
# Needs Debian's mosquitto-dev and libmosquitto-dev (mosquitto_broker.h, mosquitto_plugin.h, mosquitto.h) and a C compiler ($CC, cc, gcc or clang).
set -eu
output=${1:?usage: build.sh OUTPUT.so}
source=$(dirname "$0")/restock_clientid.c
compiler=${CC:-}
if [ -z "$compiler" ]; then
    for candidate in cc gcc clang; do
        if command -v "$candidate" >/dev/null 2>&1; then compiler=$candidate; break; fi
    done
fi
[ -n "$compiler" ] || { echo "build.sh: no C compiler (cc, gcc or clang) found" >&2; exit 1; }
mkdir -p "$(dirname "$output")"
# The broker's own symbols (mosquitto_callback_register, …) are resolved when mosquitto loads the plugin.
"$compiler" -std=c11 -O2 -Wall -Wextra -Werror -fPIC -shared -o "$output.tmp.$$" "$source"
# A file of its own per build, renamed into place: builds at the same moment (two test processes) never meet.
mv "$output.tmp.$$" "$output"
