# Sourced by .ci/conformance.sh, .ci/interop.sh and .ci/nginx.sh.
#
# start_example FRONT: builds and starts the demo server of front end FRONT on a free
# loopback port (`tokio`, `mio`: their `everything` example; `axum`: the tower service
# mounted in axum, io-tokio's `axum` example), sets `url` to its endpoint, and kills it
# when the calling script exits. EXAMPLE_FEATURES, when set, are cargo features to build
# the `everything` example with, and EXAMPLE_ARGS more arguments for it (say
# EXAMPLE_FEATURES=postgres EXAMPLE_ARGS="--store URL"). When that script fails, the server's log (its stderr) is
# printed first, so a failure in CI shows what the server saw.
#
# wait_listening PID LOG: waits until the server PID says in LOG where it listens
# (`listening on http://127.0.0.1:PORT/mcp`) and sets `url`; exits with the log when the
# server dies or does not say within 10 s.
wait_listening() {
  local pid="$1" log="$2"
  url=""
  for _ in $(seq 1 100); do
    url="$(grep -o 'http://127\.0\.0\.1:[0-9]*/mcp' "$log" | head -n 1 || true)"
    [ -n "$url" ] && return 0
    kill -0 "$pid" 2>/dev/null || { cat "$log"; echo "the server exited"; exit 1; }
    sleep 0.1
  done
  cat "$log"
  echo "the server did not say where it listens"
  exit 1
}

start_example() {
  example_log="$(mktemp)"
  if [ "$1" = axum ]; then
    cargo build -p mcp-io-tokio --features tower --example axum
    "${CARGO_TARGET_DIR:-target}/debug/examples/axum" 127.0.0.1:0 2> "$example_log" &
  else
    cargo build -p "mcp-io-$1" --example everything ${EXAMPLE_FEATURES:+--features "$EXAMPLE_FEATURES"}
    # shellcheck disable=SC2086 # EXAMPLE_ARGS is a list of words
    "${CARGO_TARGET_DIR:-target}/debug/examples/everything" --http 127.0.0.1:0 ${EXAMPLE_ARGS:-} 2> "$example_log" &
  fi
  example_pid=$!
  trap 'rc=$?; kill "$example_pid" 2>/dev/null || true
        if [ "$rc" -ne 0 ]; then echo "--- server log ($example_log) ---"; cat "$example_log"; echo "--- end of server log ---"; fi
        rm -f "$example_log"' EXIT
  wait_listening "$example_pid" "$example_log"
}
