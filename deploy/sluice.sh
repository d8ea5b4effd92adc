#!/bin/sh
# The image's entry point: `sluice <command> [args]`, each command run with only the permissions it
# needs (the deno.json tasks' sets, narrowed to the image's paths). Readable: the code (/app), the
# working directory (/data, writable) and mounted settings (/etc/sluice, /run/secrets).
set -eu
ffi="--allow-ffi=/lib/x86_64-linux-gnu/libc.so.6,/lib/aarch64-linux-gnu/libc.so.6"
read="--allow-read=/app,/data,/etc/sluice,/run/secrets,/tmp"
write="--allow-write=/data,/tmp"
case "${1:-help}" in
  funnel) flags="--allow-net --allow-env $read $write --allow-sys=hostname,osRelease $ffi" ;;
  # sysctl (BusyBox) reads the host's UDP buffer sizes. RELAY_SEMI_SPACE_MB would restart the relay
  # with any command allowed; in the image set DENO_V8_FLAGS=--max-semi-space-size=N instead.
  relay) flags="--allow-net --allow-env $read $write --allow-sys --allow-run=sysctl $ffi" ;;
  doctor) flags="--allow-env $read --allow-run=sysctl" ;;
  auth) flags="--allow-env $read $write" ;;
  certs) flags="$read $write" ;;
  *) flags="" ;;
esac
# shellcheck disable=SC2086 # the flags are words
exec deno run --cached-only --frozen --config /app/deno.json $flags /app/src/cli.ts "$@"
