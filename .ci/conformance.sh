#!/usr/bin/env bash
# Runs the official MCP conformance suite (@modelcontextprotocol/conformance, pinned) against
# the `everything` example of an adapter, over Streamable HTTP, with the requirements of one
# revision. Exits non-zero on any failure not listed in that revision's expected-failures
# file, and on any listed failure that now passes (the suite's own rule).
#
#   .ci/conformance.sh [tokio|mio] [2026-07-28|2025-11-25]     (default: tokio 2026-07-28)
#
# Needs the npm registry once: Node 22 and the suite are installed into .conformance/
# (ignored by git), because the suite does not run on older Node.
set -euo pipefail
cd "$(dirname "$0")/.."
adapter="${1:-tokio}"
requirements="${2:-2026-07-28}"
suite_version="0.2.0-alpha.12"
node_version="22.23.3"
expected="tests/conformance/expected-failures-$requirements.yml"

mkdir -p .conformance
if [ ! -x .conformance/node_modules/.bin/conformance ] \
  || [ "$(cd .conformance && npx --no-install conformance --version 2>/dev/null)" != "$suite_version" ]; then
  (
    cd .conformance
    printf '{"name":"mcp-engine-conformance","private":true}\n' > package.json
    npm install --no-audit --no-fund "node@$node_version" "@modelcontextprotocol/conformance@$suite_version"
  )
fi

cargo build -p "mcp-io-$adapter" --example everything
bin="target/debug/examples/everything"
log="$(mktemp)"
"$bin" --http 127.0.0.1:0 2> "$log" &
server=$!
trap 'kill "$server" 2>/dev/null || true; rm -f "$log"' EXIT
url=""
for _ in $(seq 1 100); do
  url="$(grep -o 'http://127\.0\.0\.1:[0-9]*/mcp' "$log" | head -n 1 || true)"
  [ -n "$url" ] && break
  kill -0 "$server" 2>/dev/null || { cat "$log"; echo "the server exited"; exit 1; }
  sleep 0.1
done
[ -n "$url" ] || { cat "$log"; echo "the server did not say where it listens"; exit 1; }
echo "conformance: mcp-io-$adapter everything at $url, --requirements $requirements"

out="target/conformance/$adapter-$requirements"
rm -rf "$out" && mkdir -p "$out"
set +e
(cd .conformance && npx --no-install conformance server --url "$url" --requirements "$requirements" \
  --expected-failures "../$expected" -o "../$out")
rc=$?
set -e
exit "$rc"
