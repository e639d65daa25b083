#!/usr/bin/env bash
# Drives the `everything` example of an adapter with the official TypeScript SDK client over
# a session (tests/interop/session-client.mjs). Uses the Node installed by .ci/conformance.sh
# in .conformance/, and installs the pinned SDK there when missing.
#
#   .ci/interop.sh [tokio|mio|axum]        (default: tokio)
set -euo pipefail
cd "$(dirname "$0")/.."
adapter="${1:-tokio}"
sdk_version="1.32.2"
node=".conformance/node_modules/.bin/node"
[ -x "$node" ] || { echo "interop: run .ci/conformance.sh first (it installs Node 22)"; exit 1; }
if [ "$(cd .conformance && "$PWD/node_modules/.bin/node" -p "require('@modelcontextprotocol/sdk/package.json').version" 2>/dev/null)" != "$sdk_version" ]; then
  (cd .conformance && npm install --no-audit --no-fund "@modelcontextprotocol/sdk@$sdk_version")
fi
. .ci/example-server.sh
start_example "$adapter"
# Resolved from .conformance/node_modules.
cp tests/interop/session-client.mjs .conformance/session-client.mjs
(cd .conformance && "$PWD/node_modules/.bin/node" session-client.mjs "$url")
