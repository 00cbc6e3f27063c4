#!/bin/sh
# One-shot (temporalio/admin-tools image): creates Temporal's two PostgreSQL databases and brings
# their schemas to the version the server image expects. Safe to run again: `create` fails on an
# existing database (ignored), `setup-schema -v 0.0` and `update-schema` are idempotent.
set -eu
: "${POSTGRES_SEEDS:?POSTGRES_SEEDS must name the PostgreSQL host}"
: "${POSTGRES_USER:?POSTGRES_USER must be set}"
: "${SQL_PASSWORD:?SQL_PASSWORD must be set}"
port="${DB_PORT:-5432}"
# The admin-tools image's copy; the cluster tests point it at the schemas of the server they built.
schemas="${TEMPORAL_SCHEMA_DIR:-/etc/temporal/schema/postgresql/v12}"

sql() {
  temporal-sql-tool --plugin postgres12 --ep "$POSTGRES_SEEDS" -p "$port" -u "$POSTGRES_USER" "$@"
}

for db in temporal:temporal temporal_visibility:visibility; do
  name="${db%%:*}"
  dir="${db#*:}"
  sql --db "$name" create 2>/dev/null || echo "database $name exists"
  sql --db "$name" setup-schema -v 0.0
  sql --db "$name" update-schema -d "$schemas/$dir/versioned"
done
echo 'Temporal schemas are up to date'
