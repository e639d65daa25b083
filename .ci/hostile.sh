#!/usr/bin/env bash
# The hostile-client stage: one client (127.0.0.2) does everything it can to take the demo
# server from others (6,000 sessions, streams past the connection cap, huge subscriptions,
# other sessions' tasks, slow calls on 1,100 connections, invented and spoofed client addresses), and a second client
# (127.0.0.3) must still be served; request bodies up to the cap must come back byte for
# byte however their writes are split; the server's memory growth from each probe is
# bounded. Real sockets on loopback, against the demo with its default settings (and a
# second demo behind a pretend proxy with a call rate, for the rate-key probe).
#
#   .ci/hostile.sh tokio|mio|axum
set -euo pipefail
cd "$(dirname "$0")/.."
front="${1:?tokio, mio or axum}"

probe() { cargo run --release --locked -q --manifest-path benches/load/Cargo.toml --bin hostile -- "$@"; }
cargo build --release --locked -q --manifest-path benches/load/Cargo.toml --bin hostile

. .ci/example-server.sh
failed=""
restart() {
  if [ -n "${example_pid:-}" ]; then
    kill "$example_pid" 2>/dev/null || true
    wait "$example_pid" 2>/dev/null || true
  fi
  start_example "$front"
}
# Each probe on a fresh server, so that each finding shows on its own; then all of them
# in a row on one server, as one client doing everything it can.
for p in bodies streams sessions subscriptions slow-calls tasks; do
  restart
  echo "the $front demo at $url (pid $example_pid)"
  probe --url "$url" --pid "$example_pid" --probes "$p" || failed="$failed $p"
done
restart
echo "the $front demo at $url (pid $example_pid): every probe in a row"
probe --url "$url" --pid "$example_pid" --probes streams,sessions,subscriptions,slow-calls,tasks,bodies || failed="$failed all-in-a-row"

if [ "$front" != axum ]; then
  # The rate-key probe: the demo trusts 127.0.0.9 as its proxy (the probe connects from
  # there to play it) and allows 3 tool calls a minute per client.
  kill "$example_pid" 2>/dev/null || true
  wait "$example_pid" 2>/dev/null || true
  EXAMPLE_ARGS="--trusted-proxy 127.0.0.9 --rate-calls 3/60 ${EXAMPLE_ARGS:-}" start_example "$front"
  echo "the $front demo behind a pretend proxy at $url (pid $example_pid)"
  probe --url "$url" --pid "$example_pid" --probes rate-keys --proxy 127.0.0.9 --rate 3 || failed="$failed rate-keys"
fi
if [ -n "$failed" ]; then
  echo "hostile $front: failed:$failed"
  exit 1
fi
echo "hostile $front: every probe passed"
