#!/usr/bin/env bash
# Drives the `everything` example of an adapter with the official TypeScript SDK client over
# a session (tests/interop/session-client.mjs): initialize, tools/list, a call with progress,
# a call with logging, calls during which the server sends sampling/createMessage (answered,
# then refused), elicitation/create and roots/list to the client on the POST's SSE stream,
# a call resumed with GET and Last-Event-ID after the server ended its stream early, a
# call resumed the same way after a TCP proxy cut its connection mid-stream (every progress
# notification and the result replayed), DELETE, and the 404 after it. Uses the Node installed by .ci/conformance.sh in
# .conformance/, and installs the pinned SDK there when missing.
#
#   .ci/interop.sh [tokio|mio|axum]        (default: tokio)
set -euo pipefail
cd "$(dirname "$0")/.."
adapter="${1:-tokio}"
sdk_version="1.32.2"
node=".conformance/node_modules/.bin/node"
[ -x "$node" ] || { echo "interop: run .ci/conformance.sh first (it installs Node 22)"; exit 1; }
# The SDK's exports map sends `require('@modelcontextprotocol/sdk/package.json')` to
# dist/cjs/package.json (no version), so the installed version is read from the file.
sdk_json=".conformance/node_modules/@modelcontextprotocol/sdk/package.json"
if [ "$("$node" -p "JSON.parse(require('fs').readFileSync('$sdk_json', 'utf8')).version" 2>/dev/null)" != "$sdk_version" ]; then
  (cd .conformance && npm install --no-audit --no-fund "@modelcontextprotocol/sdk@$sdk_version")
fi
. .ci/example-server.sh
start_example "$adapter"
# Resolved from .conformance/node_modules.
cp tests/interop/session-client.mjs .conformance/session-client.mjs
(cd .conformance && "$PWD/node_modules/.bin/node" session-client.mjs "$url")
