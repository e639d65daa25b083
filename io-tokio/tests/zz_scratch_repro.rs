use mcp_engine::http::{AllowedOrigins, Authorization, HttpConfig, HttpEngine, HttpEvent};
use mcp_engine::{Config, Instant};

const META: &str = r#""_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}"#;

#[test]
fn over_in_flight_limit() {
    let mut cfg = Config::new("t", "1");
    cfg.max_in_flight(1);
    let mut e = HttpEngine::new(
        cfg,
        HttpConfig::new(AllowedOrigins::Any, Authorization::Everyone),
        mcp_engine::everything::catalog(),
    );
    let now = Instant::ZERO;
    let body = format!(
        r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{{"name":"echo","arguments":{{"text":"hi"}},{META}}}}}"#
    );
    let headers: &[(&str, &[u8])] = &[
        ("host", b"127.0.0.1"),
        ("content-type", b"application/json"),
        ("mcp-protocol-version", b"2026-07-28"),
        ("mcp-method", b"tools/call"),
        ("mcp-name", b"echo"),
    ];
    let a = e.handle_request(now, None, "POST", "/mcp", headers, body.as_bytes()).unwrap();
    let mut n = 0;
    while let Some(ev) = e.poll_event() {
        println!("a: {ev:?}");
        n += 1;
    }
    assert_eq!(n, 1);
    let b = e.handle_request(now, None, "POST", "/mcp", headers, body.as_bytes()).unwrap();
    while let Some(ev) = e.poll_event() {
        if let HttpEvent::Mcp(ev) = ev {
            println!("b: {ev:?}");
        }
    }
    println!("a: {:?}", e.response(a).map(|r| r.status));
    let r = e.response(b).map(|r| (r.status, String::from_utf8_lossy(r.body).into_owned()));
    println!("b: {r:?}");
    println!("{}", String::from_utf8_lossy(e.pending_output(b)));
}
