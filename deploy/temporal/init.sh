#!/bin/sh
# One-shot set-up of a Temporal cluster for pixelmill: waits until the frontend serves, creates
# the namespace if missing, then registers pixelmill's search attributes in it.
#   TEMPORAL_ADDRESS             host:port of the frontend (the `temporal` CLI reads it itself)
#   TEMPORAL_NAMESPACE           default: default
#   PIXELMILL_SEARCH_ATTRIBUTES  space-separated Name=Type (common/search-attributes.ts)
# Idempotent: registering an attribute that exists with the same type succeeds; with another type
# it fails, and so does this script. Runs in the temporalio/admin-tools image (POSIX sh + the
# `temporal` CLI), and in test/envconfig.test.ts against a local dev server.
set -eu
: "${TEMPORAL_ADDRESS:?TEMPORAL_ADDRESS must name the Temporal frontend (host:port)}"
: "${PIXELMILL_SEARCH_ATTRIBUTES:?PIXELMILL_SEARCH_ATTRIBUTES must list Name=Type pairs}"
namespace="${TEMPORAL_NAMESPACE:-default}"
attempts="${PIXELMILL_INIT_ATTEMPTS:-120}"
pause="${PIXELMILL_INIT_PAUSE_SECONDS:-1}"

# The CLI reads TEMPORAL_ADDRESS itself; passed explicitly all the same, for older CLIs.
t() {
  temporal "$@" --address "$TEMPORAL_ADDRESS"
}

# Runs "$@" quietly until it succeeds, at most $attempts times; prints its last output on failure.
retry() {
  what="$1"
  shift
  n=1
  until output="$("$@" 2>&1)"; do
    if [ "$n" -ge "$attempts" ]; then
      echo "pixelmill init: gave up waiting for $what: $output" >&2
      exit 1
    fi
    n=$((n + 1))
    sleep "$pause"
  done
}

echo "pixelmill init: waiting for Temporal at $TEMPORAL_ADDRESS"
retry "the Temporal frontend" t operator cluster health

if ! t operator namespace describe --namespace "$namespace" >/dev/null 2>&1; then
  echo "pixelmill init: creating namespace $namespace"
  t operator namespace create --namespace "$namespace" --retention 168h ||
    t operator namespace describe --namespace "$namespace" >/dev/null
fi
# A new namespace reaches the frontend's cache some seconds after it is created.
retry "namespace $namespace" t operator search-attribute list --namespace "$namespace"

for spec in $PIXELMILL_SEARCH_ATTRIBUTES; do
  name="${spec%%=*}"
  type="${spec#*=}"
  t operator search-attribute create --namespace "$namespace" --name "$name" --type "$type"
done
echo "pixelmill init: namespace $namespace has the search attributes $PIXELMILL_SEARCH_ATTRIBUTES"
