#!/usr/bin/env bash
# The demo behind a real nginx (the distribution's package), as production servers run:
# nginx passes `Host` on and appends the client to `X-Forwarded-For`; the demo serves the
# public name it is given (`--allowed-hosts`) and refuses others, believes the forwarded
# address only from nginx (`--trusted-proxy 127.0.0.1`) and keys its rate limit on it
# (`--rate-calls 2/60`), and its SSE streams pass through nginx unbuffered. A client that
# names itself in the header nginx does not write (`Forwarded`, passed through as sent) or
# prepends a made-up address to `X-Forwarded-For` is still its own address to the rate
# limit. A third demo sits behind an nginx that writes `Forwarded` instead
# (`--trusted-proxy-header forwarded`): there a client's `X-Forwarded-For` is ignored.
# A second demo
# runs as an OAuth 2.1 protected resource behind nginx, which terminates TLS for its
# public URL (`--oauth-issuer`, `--oauth-jwks` a key set file written here, `--public-url
# https://mcp.example.test:PORT/mcp`): its metadata document and its `401` challenges name
# that public URL, whatever the request's `Host` says.
#
#   .ci/nginx.sh tokio|mio
set -euo pipefail
cd "$(dirname "$0")/.."
front="${1:?tokio or mio}"

if ! command -v nginx >/dev/null 2>&1 && [ ! -x /usr/sbin/nginx ]; then
  (apt-get install -y nginx-light || sudo apt-get install -y nginx-light) >/dev/null
fi
NGINX="$(command -v nginx || echo /usr/sbin/nginx)"
if ! command -v openssl >/dev/null 2>&1; then
  (apt-get install -y openssl || sudo apt-get install -y openssl) >/dev/null
fi

work="$(mktemp -d)"
demos=()
nginx_pid=""
cleanup() {
  local rc=$?
  # On failure, the demos' and nginx's logs first, so CI shows what the servers saw.
  if [ "$rc" -ne 0 ]; then
    for f in "$work"/*.log; do [ -f "$f" ] && { echo "--- $f ---"; cat "$f"; }; done
  fi
  for pid in ${demos[@]+"${demos[@]}"}; do kill "$pid" 2>/dev/null || true; done
  [ -n "$nginx_pid" ] && kill "$nginx_pid" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}
# start_demo LOG ARGS...: starts the demo with ARGS on a free loopback port (its stderr to
# $work/LOG) and sets `upstream` to the address it listens on.
. .ci/example-server.sh
start_demo() {
  local log="$work/$1" pid
  shift
  "${CARGO_TARGET_DIR:-target}/debug/examples/everything" --http 127.0.0.1:0 "$@" 2> "$log" &
  pid=$!
  demos+=("$pid")
  wait_listening "$pid" "$log"
  upstream="${url#http://}"
  upstream="${upstream%/mcp}"
}

# The tokio demo verifies tokens with the adapter's `oauth` feature.
features=()
[ "$front" = tokio ] && features=(--features oauth)
cargo build --locked -q -p "mcp-io-$front" ${features[@]+"${features[@]}"} --example everything
start_demo demo.log --allowed-hosts mcp.example.test --trusted-proxy 127.0.0.1 --rate-calls 2/60
plain="$upstream"
start_demo forwarded.log --allowed-hosts mcp.example.test --trusted-proxy 127.0.0.1 \
  --trusted-proxy-header forwarded --rate-calls 2/60
rfc7239="$upstream"

# The protected demo. Its public URL (the resource identifier) is https on nginx's TLS
# port; the demo itself listens on plain http, on loopback. Its key set is a static file
# (the public half of engine/tests/keys/ec-1.pem: test material); the issuer is never
# asked for anything.
port="$(free_port)"
fwd_port="$(free_port)"
tls_port="$(free_port)"
public="https://mcp.example.test:$tls_port/mcp"
metadata="https://mcp.example.test:$tls_port/.well-known/oauth-protected-resource/mcp"
cat > "$work/jwks.json" <<'EOF'
{"keys":[{"kty":"EC","kid":"ec-1","use":"sig","alg":"ES256","crv":"P-256",
"x":"tbgApWaMa0wtgjtoIJqrk7_mTReyeXPDk5J0X9ufQRc","y":"GcZUaNSfnt1DBuBxIjr63gWiTdTlbK3dW1lEEHf1UeM"}]}
EOF
start_demo protected.log --oauth-issuer https://auth.example.test --oauth-jwks "$work/jwks.json" \
  --public-url "$public" --trusted-proxy 127.0.0.1
protected="$upstream"
# nginx's certificate for the public name, made here.
openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj "/CN=mcp.example.test" \
  -addext "subjectAltName=DNS:mcp.example.test" \
  -keyout "$work/key.pem" -out "$work/cert.pem" 2>/dev/null

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
  # RFC 7239: append the peer to the client's Forwarded, as \$proxy_add_x_forwarded_for does.
  map \$http_forwarded \$proxy_add_forwarded {
    default "\$http_forwarded, for=\$remote_addr";
    "" "for=\$remote_addr";
  }
  server {
    listen 127.0.0.1:$port;
    location / {
      proxy_pass http://$plain;
      proxy_http_version 1.1;
      proxy_set_header Host \$host;
      proxy_set_header X-Forwarded-For \$proxy_add_x_forwarded_for;
      proxy_set_header Connection "";
    }
  }
  server {
    listen 127.0.0.1:$fwd_port;
    location / {
      proxy_pass http://$rfc7239;
      proxy_http_version 1.1;
      proxy_set_header Host \$host;
      proxy_set_header Forwarded \$proxy_add_forwarded;
      proxy_set_header Connection "";
    }
  }
  server {
    listen 127.0.0.1:$tls_port ssl;
    server_name mcp.example.test;
    ssl_certificate $work/cert.pem;
    ssl_certificate_key $work/key.pem;
    location / {
      proxy_pass http://$protected;
      proxy_http_version 1.1;
      proxy_set_header Host \$host;
      proxy_set_header X-Forwarded-For \$proxy_add_x_forwarded_for;
      proxy_set_header X-Forwarded-Proto https;
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
# (through nginx's port $via, $port unless set)
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
    "http://127.0.0.1:${via:-$port}/mcp"
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
# A client that lies about itself. It connects from an address of its own (127.0.0.7, not a
# trusted proxy: nginx appends it to X-Forwarded-For), and names a new made-up address on
# every call: in Forwarded, which nginx passes through as sent, or at the head of
# X-Forwarded-For. Neither buys it a new bucket: its third call is 429.
# spoof SOURCE HEADER ID: a tools/call from SOURCE naming 198.51.100.ID in HEADER.
spoof() {
  local value="198.51.100.$3"
  [ "$2" = Forwarded ] && value="for=$value"
  post mcp.example.test tools/call test_simple_text "$3" --interface "$1" -H "$2: $value"
}
for header in Forwarded X-Forwarded-For; do
  src=127.0.0.7
  [ "$header" = X-Forwarded-For ] && src=127.0.0.8
  base=$([ "$header" = Forwarded ] && echo 30 || echo 40)
  expect 200 "$(spoof $src $header $((base + 1)))" "a client naming itself in $header, call 1"
  expect 200 "$(spoof $src $header $((base + 2)))" "a client naming another address in $header, call 2"
  expect 429 "$(spoof $src $header $((base + 3)))" "a client naming a third address in $header, call 3, is over its rate"
done
# Behind an nginx that writes Forwarded (--trusted-proxy-header forwarded), the other way
# round: X-Forwarded-For is the client's word, Forwarded nginx's.
for i in 1 2 3; do
  want=200
  [ "$i" = 3 ] && want=429
  got="$(via="$fwd_port" post mcp.example.test tools/call test_simple_text "5$i" \
    --interface 127.0.0.9 -H "X-Forwarded-For: 198.51.100.5$i" -H "Forwarded: for=198.51.100.6$i")"
  expect "$want" "$got" "behind a Forwarded proxy, a client naming itself in both headers, call $i"
done
expect 200 "$(via="$fwd_port" post mcp.example.test tools/call test_simple_text 57 --interface 127.0.0.10)" \
  "behind a Forwarded proxy, another client has its own bucket"
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

# The protected demo through nginx, over TLS, at its public URL.
tls=(--resolve "mcp.example.test:$tls_port:127.0.0.1" --cacert "$work/cert.pem")
status="$(curl -s -D "$work/head" -o "$work/out" -w '%{http_code}' "${tls[@]}" "$metadata")"
expect 200 "$status" "the metadata document through nginx"
for member in "\"resource\":\"$public\"" '"authorization_servers":["https://auth.example.test"]' \
  '"scopes_supported":["mcp:read","mcp:tools"]'; do
  grep -qF "$member" "$work/out" || { echo "FAIL: the metadata lacks $member"; cat "$work/out"; exit 1; }
done
echo "ok: the metadata's resource is the public URL $public"
# list URL [curl options...]: a tools/list POST to URL; the status, the headers and body to $work.
list() {
  local url="$1"
  shift
  curl -s -D "$work/head" -o "$work/out" -w '%{http_code}' "$@" \
    -H 'Content-Type: application/json' -H 'Accept: application/json, text/event-stream' \
    -H 'MCP-Protocol-Version: 2026-07-28' -H 'Mcp-Method: tools/list' \
    --data "{\"jsonrpc\":\"2.0\",\"id\":20,\"method\":\"tools/list\",\"params\":{$meta}}" "$url"
}
challenge="www-authenticate: Bearer scope=\"mcp:read mcp:tools\", resource_metadata=\"$metadata\""
expect 401 "$(list "$public" "${tls[@]}")" "a POST without a token through nginx"
grep -qiF "$challenge" "$work/head" || { echo "FAIL: expected $challenge"; cat "$work/head"; exit 1; }
echo "ok: its challenge names $metadata"
expect 401 "$(list "$public" "${tls[@]}" -H 'Authorization: Bearer not-a-token')" "a bad token through nginx"
grep -qi '^www-authenticate: Bearer error="invalid_token"' "$work/head" \
  || { echo "FAIL: no invalid_token challenge"; cat "$work/head"; exit 1; }
# Straight to the demo, with a loopback Host: the same public URL, never the Host's.
expect 401 "$(list "http://$protected/mcp")" "a POST without a token, not through nginx"
grep -qiF "$challenge" "$work/head" || { echo "FAIL: expected $challenge"; cat "$work/head"; exit 1; }
echo "ok: the challenge does not follow the request's Host"
echo "$front behind nginx: all checks passed"
