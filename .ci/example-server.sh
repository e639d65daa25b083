# Sourced by .ci/conformance.sh and .ci/interop.sh: builds and starts the demo server of
# front end $1 on a free loopback port (`tokio`, `mio`: their `everything` example;
# `axum`: the tower service mounted in axum, io-tokio's `axum` example), sets `url` to its
# endpoint, and kills it when the calling script exits.
start_example() {
  example_log="$(mktemp)"
  if [ "$1" = axum ]; then
    cargo build -p mcp-io-tokio --features tower --example axum
    target/debug/examples/axum 127.0.0.1:0 2> "$example_log" &
  else
    cargo build -p "mcp-io-$1" --example everything
    target/debug/examples/everything --http 127.0.0.1:0 2> "$example_log" &
  fi
  example_pid=$!
  trap 'kill "$example_pid" 2>/dev/null || true; rm -f "$example_log"' EXIT
  url=""
  for _ in $(seq 1 100); do
    url="$(grep -o 'http://127\.0\.0\.1:[0-9]*/mcp' "$example_log" | head -n 1 || true)"
    [ -n "$url" ] && return 0
    kill -0 "$example_pid" 2>/dev/null || { cat "$example_log"; echo "the server exited"; exit 1; }
    sleep 0.1
  done
  cat "$example_log"
  echo "the server did not say where it listens"
  exit 1
}
