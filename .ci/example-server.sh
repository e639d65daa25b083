# Sourced by .ci/conformance.sh and .ci/interop.sh: builds and starts the `everything`
# example of adapter $1 on a free loopback port, sets `url` to its endpoint, and kills it
# when the calling script exits.
start_example() {
  cargo build -p "mcp-io-$1" --example everything
  example_log="$(mktemp)"
  target/debug/examples/everything --http 127.0.0.1:0 2> "$example_log" &
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
