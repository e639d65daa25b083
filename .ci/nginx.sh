#!/usr/bin/env bash
# The demo behind a real nginx (the distribution's package), as production servers run:
# nginx passes `Host` on and appends the client to `X-Forwarded-For`; the demo serves the
# public name it is given (`--allowed-hosts`) and refuses others, believes the forwarded
# address only from nginx (`--trusted-proxy 127.0.0.1`) and keys its rate limit on it
# (`--rate-calls 2/60`), and its SSE streams pass through nginx unbuffered.
#
#   .ci/nginx.sh tokio|mio
set -euo pipefail
cd "$(dirname "$0")/.."
front="${1:?tokio or mio}"

if ! command -v nginx >/dev/null 2>&1 && [ ! -x /usr/sbin/nginx ]; then
  (apt-get install -y nginx-light || sudo apt-get install -y nginx-light) >/dev/null
fi
NGINX="$(command -v nginx || echo /usr/sbin/nginx)"

work="$(mktemp -d)"
cargo build --locked -q -p "mcp-io-$front" --example everything
target/debug/examples/everything --http 127.0.0.1:0 --allowed-hosts mcp.example.test \
  --trusted-proxy 127.0.0.1 --rate-calls 2/60 2> "$work/demo.log" &
demo=$!
nginx_pid=""
cleanup() {
  kill "$demo" 2>/dev/null || true
  [ -n "$nginx_pid" ] && kill "$nginx_pid" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
upstream=""
for _ in $(seq 1 100); do
  upstream="$(grep -o '127\.0\.0\.1:[0-9]*' "$work/demo.log" | head -n 1 || true)"
  [ -n "$upstream" ] && break
  kill -0 "$demo" 2>/dev/null || { cat "$work/demo.log"; echo "the demo exited"; exit 1; }
  sleep 0.1
done
[ -n "$upstream" ] || { cat "$work/demo.log"; echo "the demo did not say where it listens"; exit 1; }

port="$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
mkdir -p "$work/tmp"
cat > "$work/nginx.conf" <<EOF
worker_processes 1;
daemon off;
error_log $work/error.log;
pid $work/nginx.pid;
events {}
http {
  access_log off;
  client_body_temp_path $work/tmp/body;
  proxy_temp_path $work/tmp/proxy;
  fastcgi_temp_path $work/tmp/fastcgi;
  uwsgi_temp_path $work/tmp/uwsgi;
  scgi_temp_path $work/tmp/scgi;
  server {
    listen 127.0.0.1:$port;
    location / {
      proxy_pass http://$upstream;
      proxy_http_version 1.1;
      proxy_set_header Host \$host;
      proxy_set_header X-Forwarded-For \$proxy_add_x_forwarded_for;
      proxy_set_header Connection "";
    }
  }
}
EOF
"$NGINX" -p "$work" -c "$work/nginx.conf" &
nginx_pid=$!
for _ in $(seq 1 100); do
  curl -s -o /dev/null "http://127.0.0.1:$port/" && break
  sleep 0.1
done

meta='"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}'
# post HOST METHOD NAME ID [curl options...]: the status and the headers and body to $work/out
post() {
  local host="$1" method="$2" name="$3" id="$4"
  shift 4
  local params="{$meta}"
  [ -n "$name" ] && params="{\"name\":\"$name\",$meta}"
  curl -s -D "$work/head" -o "$work/out" -w '%{http_code}' "$@" \
    -H "Host: $host" -H 'Content-Type: application/json' \
    -H 'Accept: application/json, text/event-stream' -H 'MCP-Protocol-Version: 2026-07-28' \
    -H "Mcp-Method: $method" ${name:+-H "Mcp-Name: $name"} \
    --data "{\"jsonrpc\":\"2.0\",\"id\":$id,\"method\":\"$method\",\"params\":$params}" \
    "http://127.0.0.1:$port/mcp"
}
expect() {
  local want="$1" got="$2" what="$3"
  if [ "$want" != "$got" ]; then
    echo "FAIL ($front behind nginx): $what: expected $want, got $got"
    cat "$work/head" "$work/out" 2>/dev/null || true
    exit 1
  fi
  echo "ok: $what ($got)"
}

expect 200 "$(post mcp.example.test tools/list '' 1)" "the public name is served"
expect 403 "$(post evil.example.test tools/list '' 2)" "another Host is refused (DNS rebinding)"
# Two clients behind the proxy, told apart by the address nginx forwards.
a=(-H 'X-Forwarded-For: 203.0.113.1')
b=(-H 'X-Forwarded-For: 203.0.113.2')
expect 200 "$(post mcp.example.test tools/call test_simple_text 3 "${a[@]}")" "client A, call 1"
expect 200 "$(post mcp.example.test tools/call test_simple_text 4 "${a[@]}")" "client A, call 2"
expect 429 "$(post mcp.example.test tools/call test_simple_text 5 "${a[@]}")" "client A, call 3 is over its rate"
grep -qi '^retry-after: [0-9]' "$work/head" || { echo "FAIL: no Retry-After"; cat "$work/head"; exit 1; }
grep -q '"code":-32010' "$work/out" || { echo "FAIL: no -32010"; cat "$work/out"; exit 1; }
grep -q '"id":5' "$work/out" || { echo "FAIL: the id is not echoed"; cat "$work/out"; exit 1; }
expect 200 "$(post mcp.example.test tools/call test_simple_text 6 "${b[@]}")" "client B has its own bucket"
# A stream: progress events and the answer arrive through nginx, marked unbuffered.
status="$(curl -s -N -D "$work/head" -o "$work/out" -w '%{http_code}' \
  -H 'Host: mcp.example.test' -H 'Content-Type: application/json' \
  -H 'Accept: application/json, text/event-stream' -H 'MCP-Protocol-Version: 2026-07-28' \
  -H 'Mcp-Method: tools/call' -H 'Mcp-Name: test_tool_with_progress' -H 'X-Forwarded-For: 203.0.113.3' \
  --data '{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"test_tool_with_progress","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"progressToken":"p"}}}' \
  "http://127.0.0.1:$port/mcp")"
expect 200 "$status" "a streamed call"
grep -qi '^content-type: text/event-stream' "$work/head" || { echo "FAIL: not a stream"; cat "$work/head"; exit 1; }
# (nginx honours the demo's `X-Accel-Buffering: no` and does not pass the header on.)
events="$(grep -c '^data: ' "$work/out" || true)"
[ "$events" -ge 2 ] || { echo "FAIL: expected progress then the answer, got $events events"; cat "$work/out"; exit 1; }
grep -q '"id":8' "$work/out" || { echo "FAIL: no answer on the stream"; cat "$work/out"; exit 1; }
echo "ok: a stream of $events events passed through nginx"
echo "$front behind nginx: all checks passed"
