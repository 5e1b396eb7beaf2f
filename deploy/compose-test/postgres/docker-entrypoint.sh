#!/bin/sh
# The stand-in postgres image's entrypoint: what the official one does for `postgres`, enough for
# deploy/postgres/docker-compose.yml. On an empty PGDATA: initdb with superuser POSTGRES_USER (default postgres) and
# POSTGRES_PASSWORD (required), connections from any address with a password (scram-sha-256), and the database
# POSTGRES_DB (default: the user's name) made on a server that listens on its Unix socket only (pg_isready -h … says
# no until the real start). Then runs the command as user postgres.
set -eu
if [ "${1:-}" != postgres ]; then exec "$@"; fi
if [ "$(id -u)" = 0 ]; then
    mkdir -p "$PGDATA" /var/run/postgresql
    chown postgres:postgres "$PGDATA" /var/run/postgresql
    chmod 700 "$PGDATA"
    exec setpriv --reuid=postgres --regid=postgres --init-groups "$0" "$@"
fi
if [ ! -s "$PGDATA/PG_VERSION" ]; then
    : "${POSTGRES_PASSWORD:?is required: the superuser's password (this stand-in has no POSTGRES_HOST_AUTH_METHOD=trust)}"
    user=${POSTGRES_USER:-postgres}
    database=${POSTGRES_DB:-$user}
    password_file=$(mktemp)
    printf '%s\n' "$POSTGRES_PASSWORD" >"$password_file"
    initdb --username="$user" --pwfile="$password_file" --auth-local=trust --auth-host=scram-sha-256 >/dev/null
    rm -f "$password_file"
    echo "listen_addresses = '*'" >>"$PGDATA/postgresql.conf"
    echo 'host all all all scram-sha-256' >>"$PGDATA/pg_hba.conf"
    if [ "$database" != postgres ]; then
        pg_ctl --silent --wait -o "-c listen_addresses=''" start
        psql --quiet -v ON_ERROR_STOP=1 --username="$user" --dbname=postgres \
            -c "CREATE DATABASE \"$(printf '%s' "$database" | sed 's/"/""/g')\""
        pg_ctl --silent --wait -m fast stop
    fi
    echo "PostgreSQL init process complete; ready for start up."
fi
exec "$@"
