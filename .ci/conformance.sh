#!/usr/bin/env bash
# Runs the official MCP conformance suite (@modelcontextprotocol/conformance, pinned) against
# the `everything` example of an adapter, over Streamable HTTP, with the requirements of one
# revision. Exits non-zero on any failure not listed in that revision's expected-failures
# file, and on any listed failure that now passes (the suite's own rule).
#
#   .ci/conformance.sh [tokio|mio|axum] [2026-07-28|2025-11-25|2025-06-18]   (default: tokio 2026-07-28)
#
# EXAMPLE_FEATURES and EXAMPLE_ARGS build and start the example server with more
# (.ci/example-server.sh), and CONFORMANCE_TAG names such a run's output directory apart
# (say EXAMPLE_FEATURES=postgres EXAMPLE_ARGS="--store URL" CONFORMANCE_TAG=pg: the same
# suite against a server keeping sessions and tasks in PostgreSQL).
#
# The suite ships requirement sets for 2026-07-28 and 2025-11-25; 2025-06-18 has none, so
# it runs the scenarios that apply to that revision (`--spec-version`, 27 of them).
#
# The suite runs some scenarios without scoring them (its exit code ignores them): the
# 2026-07-28 set's pending ones and the task scenarios of the io.modelcontextprotocol/tasks
# extension (`tasks-*`), the 2025-11-25 set's session lifecycle and SSE polling. Those this
# server must pass are listed in tests/conformance/must-pass-<revision>.txt and checked
# from the same run's results: each must have run with no FAILURE or WARNING, or this
# script fails.
#
# Scenarios no requirement set runs are listed in tests/conformance/scenarios-<revision>.txt
# and run by name against the same server (the skills extension's three).
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

. .ci/example-server.sh
start_example "$adapter"
echo "conformance: $adapter at $url, --requirements $requirements"

out="target/conformance/$adapter-$requirements${CONFORMANCE_TAG:+-$CONFORMANCE_TAG}"
rm -rf "$out" && mkdir -p "$out"
set +e
if [ "$requirements" = "2025-06-18" ]; then
  selection=(--spec-version "$requirements")
else
  selection=(--requirements "$requirements")
fi
(cd .conformance && npx --no-install conformance server --url "$url" "${selection[@]}" \
  --expected-failures "../$expected" -o "../$out")
rc=$?
set -e
[ "$rc" -eq 0 ] || exit "$rc"

# Scenarios no requirement set runs (the skills extension's), run one by one by name into
# the same output directory: tests/conformance/scenarios-$requirements.txt, one per line.
# The must-pass check below then requires each to have run with no FAILURE or WARNING.
extra="tests/conformance/scenarios-$requirements.txt"
if [ -f "$extra" ]; then
  for scenario in $(sed 's/#.*//' "$extra"); do
    (cd .conformance && npx --no-install conformance server --url "$url" --scenario "$scenario" -o "../$out")
  done
fi

# The suite never fails a run for a scenario it does not score (`--requirements` runs them
# and reports them apart). Those this server must pass anyway are listed, one per line, in
# tests/conformance/must-pass-$requirements.txt: each must have run, with no FAILURE or
# WARNING check.
must_pass="tests/conformance/must-pass-$requirements.txt"
if [ -f "$must_pass" ]; then
  python3 - "$out" "$must_pass" <<'PY'
import glob, json, os, sys
out, listing = sys.argv[1], sys.argv[2]
names = [n for n in (l.split("#")[0].strip() for l in open(listing)) if n]
bad = []
for name in names:
    runs = glob.glob(os.path.join(out, f"server-{name}-2*", "checks.json"))
    if not runs:
        bad.append(f"{name}: did not run")
        continue
    for run in runs:
        for c in json.load(open(run)):
            if c.get("status") in ("FAILURE", "WARNING"):
                bad.append(f"{name}: {c.get('id')} {c.get('status')}: {c.get('errorMessage')}")
if bad:
    print("unscored scenarios that must pass:\n  " + "\n  ".join(bad))
    sys.exit(1)
print(f"unscored scenarios that must pass: {len(names)} of {len(names)} passed")
PY
fi
