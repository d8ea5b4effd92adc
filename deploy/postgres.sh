#!/bin/sh
# The PostgreSQL image's entry point: on first start makes the cluster in $PGDATA, with the user
# POSTGRES_USER (password POSTGRES_PASSWORD, scram-sha-256 over TCP) owning the database
# POSTGRES_DB; then runs the server in the foreground on POSTGRES_LISTEN (addresses) and PGPORT.
set -eu
: "${POSTGRES_USER:=sluice}" "${POSTGRES_DB:=sluice}" "${POSTGRES_LISTEN:=127.0.0.1}"
: "${PGPORT:=5432}"
export PGPORT
if [ ! -s "$PGDATA/PG_VERSION" ]; then
  pwfile=$(mktemp)
  printf '%s\n' "${POSTGRES_PASSWORD:?POSTGRES_PASSWORD is not set}" >"$pwfile"
  initdb -D "$PGDATA" -U "$POSTGRES_USER" --pwfile="$pwfile" -E UTF8 --no-locale \
    --auth-local=trust --auth-host=scram-sha-256 >/dev/null
  rm -f "$pwfile"
  echo "host all all all scram-sha-256" >>"$PGDATA/pg_hba.conf"
  pg_ctl -D "$PGDATA" -o "-c listen_addresses='' -k /tmp" -w start >/dev/null
  if [ "$POSTGRES_DB" != postgres ]; then createdb -h /tmp -U "$POSTGRES_USER" "$POSTGRES_DB"; fi
  pg_ctl -D "$PGDATA" -m fast -w stop >/dev/null
  echo "sluice-postgres: made the cluster in $PGDATA (database $POSTGRES_DB)"
fi
exec postgres -D "$PGDATA" -c listen_addresses="$POSTGRES_LISTEN" -k /tmp
