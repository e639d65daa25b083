//! The hostile-client stage: one client does everything it can to take a demo server from
//! the others, and a second client must still be served; request bodies must arrive byte
//! for byte however they are split.
//!
//! ```text
//! hostile --url http://127.0.0.1:PORT/mcp [--pid PID] [--probes bodies,sessions,...]
//!         [--proxy 127.0.0.9] [--rate N]
//! ```
//!
//! The hostile client connects from `127.0.0.2`, the second client from `127.0.0.3` (both
//! loopback on Linux), so the server sees two addresses. Probes:
//!
//! - `bodies`: `echo` of texts up to the body cap, written as 70,000 bytes then the rest,
//!   in one write, pipelined (30 KB + 50 KB in one write), and split at seeded random
//!   places (one-byte writes among them); every echo must come back byte for byte.
//! - `sessions`: 6,000 `initialize` from the hostile client; then the second client's
//!   `initialize`, a `tools/call` in its session and a `2026-07-28` call are answered.
//! - `streams`: the hostile client opens a standalone `GET` stream in every session it
//!   can get and `subscriptions/listen` streams, past the server's connection cap
//!   (1,100 connections); then the second client connects and is served.
//! - `subscriptions`: the hostile client subscribes its sessions to 64 uris of 200,000
//!   bytes each and a few of 1,000,000; the server's memory growth must stay bounded.
//! - `tasks`: the second client makes a task in its session; the hostile client's session
//!   can neither see, read, cancel nor list it.
//! - `slow-calls`: the hostile client sends a 30-second `tools/call` on each of 1,100
//!   connections (past the connection cap, and far past the 64 requests the host may have
//!   at once); then the second client's calls are answered at once.
//! - `rate-keys` (needs `--proxy` and `--rate`: the server trusts that proxy address and
//!   limits tool calls to N per minute): 12,000 invented client addresses through the
//!   proxy, then a new client through the proxy is served; a client sending its own
//!   `Forwarded` through the proxy, or any forwarding header directly, is still limited
//!   by its real address.
//!
//! With `--pid`, each probe prints the server's resident memory growth and fails past
//! `MAX_GROWTH_KIB`. Prints one line per check, `ok` or `FAIL`, and exits non-zero on any
//! failure.

use std::io::{self, Read, Write};
use std::net::{IpAddr, SocketAddr, TcpStream};
use std::time::Duration;

use serde_json::{Value, json};

const HOSTILE: &str = "127.0.0.2";
const SECOND: &str = "127.0.0.3";
/// The most resident memory (KiB) one probe's hostile client may add to the server.
const MAX_GROWTH_KIB: u64 = 96 * 1024;
/// How long any one response may take before it counts as not answered.
const ANSWER_WITHIN: Duration = Duration::from_secs(10);
/// The default body cap of the demos (1 MiB).
const BODY_CAP: usize = 1 << 20;

fn main() -> std::process::ExitCode {
    let _ = mcp_load::raise_open_file_limit();
    let mut args = std::env::args().skip(1);
    let mut url = None;
    let mut pid = None;
    let mut proxy: Option<IpAddr> = None;
    let mut rate: Option<u32> = None;
    let mut probes: Vec<String> =
        ["bodies", "sessions", "streams", "subscriptions", "tasks"].map(str::to_owned).to_vec();
    while let Some(a) = args.next() {
        let mut value = || args.next().unwrap_or_else(|| usage(&format!("{a} needs a value")));
        match a.as_str() {
            "--url" => url = Some(value()),
            "--pid" => pid = Some(value().parse::<u32>().unwrap_or_else(|_| usage("--pid: a number"))),
            "--proxy" => proxy = Some(value().parse().unwrap_or_else(|_| usage("--proxy: an address"))),
            "--rate" => rate = Some(value().parse().unwrap_or_else(|_| usage("--rate: a number"))),
            "--probes" => probes = value().split(',').map(str::to_owned).collect(),
            other => usage(&format!("unknown argument {other}")),
        }
    }
    let url = url.unwrap_or_else(|| usage("--url is required"));
    let (addr, path) = parse_url(&url).unwrap_or_else(|| usage("--url: http://127.0.0.1:PORT/PATH"));
    let target = Target { addr, path, pid };
    let mut report = Report::default();
    for probe in &probes {
        let before = target.rss_kib();
        println!("== {probe}");
        match probe.as_str() {
            "bodies" => bodies(&target, &mut report),
            "sessions" => sessions(&target, &mut report),
            "streams" => streams(&target, &mut report),
            "subscriptions" => subscriptions(&target, &mut report),
            "tasks" => tasks(&target, &mut report),
            "slow-calls" => slow_calls(&target, &mut report),
            "rate-keys" => match (proxy, rate) {
                (Some(proxy), Some(rate)) => rate_keys(&target, proxy, rate, &mut report),
                _ => usage("rate-keys needs --proxy and --rate"),
            },
            other => usage(&format!("unknown probe {other}")),
        }
        if let (Some(before), Some(after)) = (before, target.rss_kib()) {
            let growth = after.saturating_sub(before);
            report.check(
                growth <= MAX_GROWTH_KIB,
                &format!("{probe}: server memory {before} KiB -> {after} KiB (+{growth} KiB, bound {MAX_GROWTH_KIB} KiB)"),
            );
        }
    }
    println!("{} checks, {} failed", report.checks, report.failed);
    if report.failed == 0 { std::process::ExitCode::SUCCESS } else { std::process::ExitCode::FAILURE }
}

fn usage(why: &str) -> ! {
    eprintln!(
        "hostile: {why}\nusage: hostile --url http://127.0.0.1:PORT/mcp [--pid PID] [--probes LIST] [--proxy ADDR --rate N]"
    );
    std::process::exit(2)
}

fn parse_url(url: &str) -> Option<(SocketAddr, String)> {
    let rest = url.strip_prefix("http://")?;
    let (authority, path) = rest.split_once('/').unwrap_or((rest, ""));
    Some((authority.parse().ok()?, format!("/{path}")))
}

#[derive(Default)]
struct Report {
    checks: usize,
    failed: usize,
}

impl Report {
    fn check(&mut self, ok: bool, what: &str) -> bool {
        self.checks += 1;
        if ok {
            println!("ok   {what}");
        } else {
            self.failed += 1;
            println!("FAIL {what}");
        }
        ok
    }
}

struct Target {
    addr: SocketAddr,
    path: String,
    pid: Option<u32>,
}

impl Target {
    fn rss_kib(&self) -> Option<u64> {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.pid?)).ok()?;
        status
            .lines()
            .find_map(|l| l.strip_prefix("VmRSS:"))?
            .trim()
            .trim_end_matches("kB")
            .trim()
            .parse()
            .ok()
    }

    fn connect(&self, from: &str) -> io::Result<Conn> {
        Conn::open(from.parse().expect("an address"), self.addr, self.path.clone())
    }
}

/// One HTTP/1.1 connection of a client.
struct Conn {
    s: TcpStream,
    buf: Vec<u8>,
    host: String,
    path: String,
}

#[derive(Debug)]
struct Resp {
    status: u16,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

impl Resp {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(n, _)| n.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str())
    }

    /// The JSON-RPC message of the body: the body itself, or the last `data:` line of an
    /// SSE body.
    fn json(&self) -> Value {
        let text = String::from_utf8_lossy(&self.body);
        if let Ok(v) = serde_json::from_str(&text) {
            return v;
        }
        text.lines()
            .filter_map(|l| l.strip_prefix("data:"))
            .filter_map(|d| serde_json::from_str::<Value>(d.trim()).ok())
            .next_back()
            .unwrap_or(Value::Null)
    }
}

impl Conn {
    fn open(from: IpAddr, to: SocketAddr, path: String) -> io::Result<Self> {
        let socket = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None)?;
        socket.bind(&SocketAddr::new(from, 0).into())?;
        socket.connect_timeout(&to.into(), ANSWER_WITHIN)?;
        let s: TcpStream = socket.into();
        s.set_nodelay(true)?;
        s.set_read_timeout(Some(ANSWER_WITHIN))?;
        Ok(Self { s, buf: Vec::new(), host: to.to_string(), path })
    }

    /// A `POST` of `body` with `headers` (a `Content-Type`, an `Accept`, the `Host` and the
    /// length are added).
    fn post(&self, headers: &[(&str, &str)], body: &[u8]) -> Vec<u8> {
        let mut req = format!(
            "POST {} HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: {}\r\n",
            self.path,
            self.host,
            body.len()
        )
        .into_bytes();
        for (n, v) in headers {
            req.extend_from_slice(format!("{n}: {v}\r\n").as_bytes());
        }
        req.extend_from_slice(b"\r\n");
        req.extend_from_slice(body);
        req
    }

    fn send(&mut self, raw: &[u8]) -> io::Result<()> {
        self.s.write_all(raw)
    }

    /// Reads one response head, and its body unless `head_only` (a stream left open).
    fn read(&mut self, head_only: bool) -> io::Result<Resp> {
        let mut chunk = [0u8; 64 * 1024];
        let (status, headers, at) = loop {
            let mut hs = [httparse::EMPTY_HEADER; 64];
            let mut r = httparse::Response::new(&mut hs);
            if let httparse::Status::Complete(n) =
                r.parse(&self.buf).map_err(|e| io::Error::other(format!("bad response head: {e}")))?
            {
                let headers = r
                    .headers
                    .iter()
                    .map(|h| (h.name.to_owned(), String::from_utf8_lossy(h.value).into_owned()))
                    .collect::<Vec<_>>();
                break (r.code.unwrap_or(0), headers, n);
            }
            self.fill(&mut chunk)?;
        };
        self.buf.drain(..at);
        let mut resp = Resp { status, headers, body: Vec::new() };
        if head_only {
            return Ok(resp);
        }
        if let Some(len) = resp.header("content-length").and_then(|l| l.trim().parse::<usize>().ok()) {
            while self.buf.len() < len {
                self.fill(&mut chunk)?;
            }
            resp.body = self.buf.drain(..len).collect();
        } else if resp.header("transfer-encoding").is_some_and(|t| t.eq_ignore_ascii_case("chunked")) {
            loop {
                let Some(eol) = find(&self.buf, b"\r\n") else {
                    self.fill(&mut chunk)?;
                    continue;
                };
                let size_text = String::from_utf8_lossy(&self.buf[..eol]).into_owned();
                let size = usize::from_str_radix(size_text.split(';').next().unwrap_or("").trim(), 16)
                    .map_err(|_| io::Error::other(format!("bad chunk size {size_text:?}")))?;
                while self.buf.len() < eol + 2 + size + 2 {
                    self.fill(&mut chunk)?;
                }
                resp.body.extend_from_slice(&self.buf[eol + 2..eol + 2 + size]);
                self.buf.drain(..eol + 2 + size + 2);
                if size == 0 {
                    break;
                }
            }
        } else if status != 204 && status != 304 && !(100..200).contains(&status) {
            // No length: the body runs to the end of the connection.
            loop {
                match self.s.read(&mut chunk) {
                    Ok(0) => break,
                    Ok(n) => self.buf.extend_from_slice(&chunk[..n]),
                    Err(e) => return Err(e),
                }
            }
            resp.body = std::mem::take(&mut self.buf);
        }
        Ok(resp)
    }

    fn fill(&mut self, chunk: &mut [u8]) -> io::Result<()> {
        match self.s.read(chunk)? {
            0 => Err(io::Error::new(io::ErrorKind::UnexpectedEof, "the server closed the connection")),
            n => {
                self.buf.extend_from_slice(&chunk[..n]);
                Ok(())
            }
        }
    }

    /// Sends a request and reads its response.
    fn exchange(&mut self, raw: &[u8]) -> io::Result<Resp> {
        self.send(raw)?;
        self.read(false)
    }

    /// A `2026-07-28` request.
    fn modern(&mut self, id: u64, method: &str, name: Option<&str>, mut params: Value) -> io::Result<Resp> {
        params["_meta"] = json!({
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {}
        });
        let body = json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params }).to_string();
        let mut headers = vec![("MCP-Protocol-Version", "2026-07-28"), ("Mcp-Method", method)];
        if let Some(name) = name {
            headers.push(("Mcp-Name", name));
        }
        let raw = self.post(&headers, body.as_bytes());
        self.exchange(&raw)
    }

    /// `initialize` (2025-11-25); the session id when one was opened, with the response.
    fn initialize(&mut self, caps: Value) -> io::Result<(Option<String>, Resp)> {
        let body = json!({ "jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": caps,
            "clientInfo": { "name": "hostile-probe", "version": "1" } } })
        .to_string();
        let raw = self.post(&[], body.as_bytes());
        let resp = self.exchange(&raw)?;
        let sid = resp.header("mcp-session-id").map(str::to_owned).filter(|_| resp.status == 200);
        if let Some(sid) = &sid {
            let note = json!({ "jsonrpc": "2.0", "method": "notifications/initialized" }).to_string();
            let raw = self
                .post(&[("Mcp-Session-Id", sid), ("MCP-Protocol-Version", "2025-11-25")], note.as_bytes());
            self.exchange(&raw)?;
        }
        Ok((sid, resp))
    }

    /// A request in session `sid`.
    fn in_session(&mut self, sid: &str, id: u64, method: &str, params: Value) -> io::Result<Resp> {
        let body = json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params }).to_string();
        let raw =
            self.post(&[("Mcp-Session-Id", sid), ("MCP-Protocol-Version", "2025-11-25")], body.as_bytes());
        self.exchange(&raw)
    }

    /// Opens session `sid`'s standalone stream: the response head.
    fn get_stream(&mut self, sid: &str) -> io::Result<Resp> {
        let raw = format!(
            "GET {} HTTP/1.1\r\nHost: {}\r\nAccept: text/event-stream\r\nMcp-Session-Id: {sid}\r\nMCP-Protocol-Version: 2025-11-25\r\n\r\n",
            self.path, self.host
        );
        self.send(raw.as_bytes())?;
        self.read(true)
    }
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

/// The text of an `echo` result, if it is one.
fn echoed(resp: &Resp) -> Option<String> {
    let v = resp.json();
    v["result"]["content"][0]["text"].as_str().map(str::to_owned)
}

/// A text of `len` bytes that shows any reordering: a counter in decimal, with a
/// multi-byte character every so often.
fn text_of(len: usize, seed: u64) -> String {
    let mut s = String::with_capacity(len + 8);
    let mut i = seed;
    while s.len() < len {
        if i.is_multiple_of(97) {
            s.push('é');
        } else {
            s.push_str(&format!("{i:x}."));
        }
        i += 1;
    }
    while s.len() > len {
        s.pop();
    }
    s
}

/// A `2026-07-28` `echo` call of `text`, as raw request bytes on `conn`.
fn echo_request(conn: &Conn, id: u64, text: &str) -> Vec<u8> {
    let body = json!({ "jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {
        "name": "echo", "arguments": { "text": text },
        "_meta": { "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                   "io.modelcontextprotocol/clientCapabilities": {} } } })
    .to_string();
    conn.post(
        &[("MCP-Protocol-Version", "2026-07-28"), ("Mcp-Method", "tools/call"), ("Mcp-Name", "echo")],
        body.as_bytes(),
    )
}

/// The longest echo text whose request body stays within the cap.
fn longest_text() -> usize {
    let overhead = json!({ "jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
        "name": "echo", "arguments": { "text": "" },
        "_meta": { "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                   "io.modelcontextprotocol/clientCapabilities": {} } } })
    .to_string()
    .len();
    // `text_of` has only characters JSON writes as they are.
    BODY_CAP - overhead - 16
}

/// Writes `raw` in pieces ending at `cuts`, with a short pause between pieces so that the
/// server reads them apart (nothing is timed).
fn write_split(conn: &mut Conn, raw: &[u8], cuts: &[usize]) -> io::Result<()> {
    let mut at = 0;
    for &cut in cuts.iter().chain(std::iter::once(&raw.len())) {
        let cut = cut.clamp(at, raw.len());
        if cut > at {
            conn.send(&raw[at..cut])?;
            conn.s.flush()?;
            std::thread::sleep(Duration::from_millis(2));
            at = cut;
        }
    }
    Ok(())
}

/// A small deterministic generator (xorshift), so a failing split can be replayed.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

fn bodies(t: &Target, report: &mut Report) {
    let mut id = 1u64;
    let mut one = |report: &mut Report, what: &str, texts: &[String], cuts: &[usize]| {
        let result = (|| -> io::Result<Vec<Option<String>>> {
            let mut conn = t.connect(SECOND)?;
            let mut raw = Vec::new();
            for text in texts {
                raw.extend_from_slice(&echo_request(&conn, id, text));
                id += 1;
            }
            write_split(&mut conn, &raw, cuts)?;
            texts.iter().map(|_| conn.read(false).map(|r| echoed(&r))).collect()
        })();
        match result {
            Ok(got) => {
                let intact = got.iter().zip(texts).all(|(g, t)| g.as_deref() == Some(t.as_str()));
                let detail = got
                    .iter()
                    .zip(texts)
                    .map(|(g, t)| match g {
                        Some(g) if g == t => format!("{} intact", t.len()),
                        Some(g) => format!(
                            "{} sent, {} back, first difference at {}",
                            t.len(),
                            g.len(),
                            g.bytes()
                                .zip(t.bytes())
                                .position(|(a, b)| a != b)
                                .unwrap_or(g.len().min(t.len()))
                        ),
                        None => format!("{} sent, no echo", t.len()),
                    })
                    .collect::<Vec<_>>()
                    .join("; ");
                report.check(intact, &format!("bodies: {what}: {detail}"));
            }
            Err(e) => {
                report.check(false, &format!("bodies: {what}: {e}"));
            }
        }
    };
    one(report, "200,000 bytes written as 70,000 then the rest", &[text_of(200_000, 1)], &[70_000]);
    one(report, "the longest body under the cap in one write", &[text_of(longest_text(), 2)], &[]);
    one(report, "30 KB and 50 KB pipelined in one write", &[text_of(30_000, 3), text_of(50_000, 4)], &[]);
    one(
        report,
        "three pipelined, one byte at a time across the heads",
        &[text_of(100, 5), text_of(20_000, 6), text_of(10, 7)],
        &(1..400).collect::<Vec<_>>(),
    );
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    for case in 0..24 {
        let n = 1 + rng.below(3);
        let texts: Vec<String> = (0..n)
            .map(|i| {
                let len = match rng.below(4) {
                    0 => rng.below(64),
                    1 => rng.below(20_000),
                    2 => rng.below(200_000),
                    _ => rng.below(longest_text() / n),
                };
                text_of(len, case * 10 + i as u64)
            })
            .collect();
        let total: usize = texts.iter().map(|t| t.len() + 400).sum();
        let mut cuts: Vec<usize> = (0..rng.below(12)).map(|_| rng.below(total)).collect();
        if rng.below(2) == 0 {
            // A first write past the head buffer (16 KiB).
            cuts.push(16 * 1024 + 1 + rng.below(40_000));
        }
        let b = rng.below(total.saturating_sub(8));
        cuts.extend(b..b + 8); // eight one-byte writes somewhere
        cuts.sort_unstable();
        let sizes = texts.iter().map(|t| t.len().to_string()).collect::<Vec<_>>().join("+");
        one(
            report,
            &format!("random case {case}: {sizes} bytes in {} writes", cuts.len() + 1),
            &texts,
            &cuts,
        );
    }
}

/// The second client's checks: a session opened, a call in it and a `2026-07-28` call
/// answered.
fn second_client_served(t: &Target, report: &mut Report, after: &str) {
    let result = (|| -> io::Result<(u16, Option<String>, Option<String>)> {
        let mut conn = t.connect(SECOND)?;
        let (sid, resp) = conn.initialize(json!({}))?;
        let Some(sid) = sid else { return Ok((resp.status, None, None)) };
        let call = conn.in_session(
            &sid,
            1,
            "tools/call",
            json!({ "name": "echo", "arguments": { "text": "second" } }),
        )?;
        let mut fresh = t.connect(SECOND)?;
        let modern = fresh.modern(
            2,
            "tools/call",
            Some("echo"),
            json!({ "name": "echo", "arguments": { "text": "stateless" } }),
        )?;
        Ok((resp.status, echoed(&call), echoed(&modern)))
    })();
    match result {
        Ok((status, call, modern)) => {
            report
                .check(status == 200, &format!("{after}: the second client's initialize answered {status}"));
            report.check(
                call.as_deref() == Some("second"),
                &format!("{after}: its tools/call in the session: {call:?}"),
            );
            report.check(
                modern.as_deref() == Some("stateless"),
                &format!("{after}: its 2026-07-28 tools/call: {modern:?}"),
            );
        }
        Err(e) => {
            report.check(false, &format!("{after}: the second client was not served: {e}"));
        }
    }
}

fn sessions(t: &Target, report: &mut Report) {
    let (mut opened, mut refused, mut statuses) = (0usize, 0usize, std::collections::BTreeMap::new());
    let mut conn = None;
    for _ in 0..6_000 {
        if conn.is_none() {
            conn = t.connect(HOSTILE).ok();
        }
        let Some(c) = conn.as_mut() else { break };
        match c.initialize(json!({})) {
            Ok((sid, resp)) => {
                *statuses.entry(resp.status).or_insert(0usize) += 1;
                if sid.is_some() {
                    opened += 1;
                } else {
                    refused += 1;
                }
                if resp.header("connection").is_some_and(|v| v.eq_ignore_ascii_case("close")) {
                    conn = None;
                }
            }
            Err(_) => conn = None,
        }
    }
    println!(
        "     the hostile client: 6,000 initialize, {opened} sessions opened, {refused} refused {statuses:?}"
    );
    second_client_served(t, report, "sessions");
}

fn streams(t: &Target, report: &mut Report) {
    let mut held: Vec<Conn> = Vec::new();
    let (mut get_streams, mut listens, mut refused, mut unanswered) = (0, 0, 0, 0);
    // Standalone streams, one per session it gets.
    let mut opener = t.connect(HOSTILE).ok();
    while held.len() < 1_100 && unanswered < 3 {
        let Some(o) = opener.as_mut() else { break };
        let Ok((Some(sid), _)) = o.initialize(json!({})) else { break };
        match t.connect(HOSTILE).and_then(|mut c| c.get_stream(&sid).map(|r| (c, r))) {
            Ok((c, r)) if r.status == 200 => {
                get_streams += 1;
                held.push(c);
            }
            Ok(_) => {
                refused += 1;
                if refused > 8 {
                    break;
                }
            }
            Err(_) => unanswered += 1,
        }
    }
    // Listen streams (no session needed) up to 1,100 connections in all.
    let (mut refused_listens, mut misses) = (0, 0);
    while held.len() < 1_100 && misses < 3 && refused_listens < 8 {
        let listen = t.connect(HOSTILE).and_then(|mut c| {
            let body = json!({ "jsonrpc": "2.0", "id": 1, "method": "subscriptions/listen", "params": {
                "notifications": { "toolsListChanged": true },
                "_meta": { "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                           "io.modelcontextprotocol/clientCapabilities": {} } } })
            .to_string();
            let raw = c.post(
                &[("MCP-Protocol-Version", "2026-07-28"), ("Mcp-Method", "subscriptions/listen")],
                body.as_bytes(),
            );
            c.send(&raw)?;
            c.s.set_read_timeout(Some(Duration::from_secs(2)))?;
            let r = c.read(true)?;
            Ok((c, r))
        });
        match listen {
            Ok((c, r))
                if r.status == 200
                    && r.header("content-type").is_some_and(|v| v.contains("event-stream")) =>
            {
                listens += 1;
                held.push(c);
            }
            Ok(_) => refused_listens += 1,
            Err(_) => misses += 1,
        }
    }
    let streams = held.len();
    // And idle connections, past the server's connection cap (1,024 by default).
    let mut idle = 0;
    while held.len() < 1_100 {
        match t.connect(HOSTILE) {
            Ok(c) => {
                held.push(c);
                idle += 1;
            }
            Err(_) => break,
        }
    }
    println!(
        "     the hostile client holds {streams} streams ({get_streams} standalone, {listens} listen) and {idle} idle connections; refused {}, unanswered {}",
        refused + refused_listens,
        unanswered + misses
    );
    second_client_served(t, report, "streams");
    drop(held);
}

/// What came of a round of `resources/subscribe`.
#[derive(Default)]
struct Subscribed {
    accepted: usize,
    bytes: usize,
    refused: usize,
    failed: usize,
}

/// `sessions` sessions of the hostile client, each subscribing to `uris` uris of `len`
/// bytes (of the fixture's template `test://template/{id}/data`).
fn subscribe_in(t: &Target, sessions: usize, uris: usize, len: usize) -> Subscribed {
    let mut out = Subscribed::default();
    for s in 0..sessions {
        let Ok(mut conn) = t.connect(HOSTILE) else {
            out.failed += 1;
            continue;
        };
        let Ok((Some(sid), _)) = conn.initialize(json!({})) else {
            out.failed += 1;
            continue;
        };
        for u in 0..uris {
            let mut uri = format!("test://template/{s}-{u}-");
            uri.push_str(&"a".repeat(len.saturating_sub(uri.len() + 5)));
            uri.push_str("/data");
            match conn.in_session(&sid, u as u64 + 1, "resources/subscribe", json!({ "uri": uri })) {
                Ok(r) if r.json().get("result").is_some() => {
                    out.accepted += 1;
                    out.bytes += uri.len();
                }
                Ok(_) => out.refused += 1,
                Err(_) => {
                    out.failed += 1;
                    break;
                }
            }
        }
    }
    out
}

fn subscriptions(t: &Target, report: &mut Report) {
    // Uris of a usual length are kept.
    let usual = subscribe_in(t, 1, 16, 100);
    report.check(
        usual.accepted == 16,
        &format!("subscriptions: 16 uris of 100 bytes kept ({})", usual.accepted),
    );
    let mut huge = subscribe_in(t, 8, 64, 200_000);
    let more = subscribe_in(t, 4, 8, 1_000_000);
    huge.accepted += more.accepted;
    huge.bytes += more.bytes;
    huge.refused += more.refused;
    huge.failed += more.failed;
    println!(
        "     the hostile client: {} huge subscriptions kept ({} bytes of uris), {} refused, {} failed",
        huge.accepted, huge.bytes, huge.refused, huge.failed
    );
    report.check(huge.failed == 0, &format!("subscriptions: every subscribe answered ({} not)", huge.failed));
    second_client_served(t, report, "subscriptions");
}

fn tasks(t: &Target, report: &mut Report) {
    let result = (|| -> io::Result<()> {
        let mut owner = t.connect(SECOND)?;
        let (Some(mine), _) = owner.initialize(json!({ "tasks": {} }))? else {
            report.check(false, "tasks: the second client's session");
            return Ok(());
        };
        let made = owner.in_session(
            &mine,
            1,
            "tools/call",
            json!({ "name": "slow_compute", "arguments": { "seconds": 30 }, "task": { "ttl": 60_000 } }),
        )?;
        let Some(task) = made.json()["result"]["task"]["taskId"].as_str().map(str::to_owned) else {
            report.check(false, &format!("tasks: a task made: {:?}", made.json()));
            return Ok(());
        };
        let mut other = t.connect(HOSTILE)?;
        let (Some(theirs), _) = other.initialize(json!({ "tasks": {} }))? else {
            report.check(false, "tasks: the hostile client's session");
            return Ok(());
        };
        for (i, method) in ["tasks/get", "tasks/cancel", "tasks/result"].into_iter().enumerate() {
            let r = other.in_session(&theirs, 10 + i as u64, method, json!({ "taskId": task }))?;
            let v = r.json();
            report.check(
                v.get("error").is_some() && v.get("result").is_none(),
                &format!("tasks: another session's {method} of the task is refused: {v}"),
            );
        }
        let listed = other.in_session(&theirs, 20, "tasks/list", json!({}))?.json();
        let shown = listed["result"]["tasks"]
            .as_array()
            .is_some_and(|l| l.iter().any(|x| x["taskId"] == task.as_str()));
        report.check(!shown, &format!("tasks: another session's tasks/list does not show it: {listed}"));
        let still = owner.in_session(&mine, 2, "tasks/get", json!({ "taskId": task }))?.json();
        report.check(
            still["result"]["status"] == "working",
            &format!("tasks: the owner still sees its task working: {}", still["result"]["status"]),
        );
        let _ = owner.in_session(&mine, 3, "tasks/cancel", json!({ "taskId": task }));
        Ok(())
    })();
    if let Err(e) = result {
        report.check(false, &format!("tasks: {e}"));
    }
}

fn rate_keys(t: &Target, proxy: IpAddr, rate: u32, report: &mut Report) {
    let proxy = proxy.to_string();
    let call = |conn: &mut Conn, id: u64, headers: &[(&str, &str)]| -> io::Result<u16> {
        let raw = {
            let body = echo_request(conn, id, "k");
            // `echo_request` wrote the headers; add the forwarding ones after the first line.
            let at = find(&body, b"\r\n").expect("a request line") + 2;
            let mut raw = body[..at].to_vec();
            for (n, v) in headers {
                raw.extend_from_slice(format!("{n}: {v}\r\n").as_bytes());
            }
            raw.extend_from_slice(&body[at..]);
            raw
        };
        Ok(conn.exchange(&raw)?.status)
    };
    // 12,000 invented addresses through the proxy, one call each.
    let mut statuses = std::collections::BTreeMap::new();
    let mut conn = None;
    for i in 0..12_000u32 {
        if conn.is_none() {
            conn = t.connect(&proxy).ok();
        }
        let Some(c) = conn.as_mut() else { break };
        let addr = format!("10.{}.{}.{}", (i >> 16) & 255, (i >> 8) & 255, i & 255);
        match call(c, u64::from(i), &[("X-Forwarded-For", &addr)]) {
            Ok(s) => *statuses.entry(s).or_insert(0usize) += 1,
            Err(_) => conn = None,
        }
    }
    println!("     12,000 invented addresses through the proxy: {statuses:?}");
    let fresh = t.connect(&proxy).and_then(|mut c| call(&mut c, 1, &[("X-Forwarded-For", "198.51.100.77")]));
    report.check(
        matches!(fresh, Ok(200)),
        &format!("rate-keys: a new client through the proxy after the flood is served: {fresh:?}"),
    );
    // A client that names itself: through the proxy (which appends the real address to
    // X-Forwarded-For) with its own rotating `Forwarded`; and directly with both headers.
    let mut through = Vec::new();
    if let Ok(mut c) = t.connect(&proxy) {
        for i in 0..rate + 3 {
            let spoof = format!("for=192.0.2.{}", i + 1);
            through.push(
                call(&mut c, u64::from(i), &[("Forwarded", &spoof), ("X-Forwarded-For", "203.0.113.5")])
                    .unwrap_or(0),
            );
        }
    }
    report.check(
        through.iter().skip(rate as usize).all(|&s| s == 429),
        &format!("rate-keys: a spoofed Forwarded through the proxy is ignored, the real client limited at {rate}: {through:?}"),
    );
    let mut direct = Vec::new();
    if let Ok(mut c) = t.connect(HOSTILE) {
        for i in 0..rate + 3 {
            let spoof = format!("192.0.2.{}", i + 1);
            let fwd = format!("for={spoof}");
            direct.push(
                call(&mut c, u64::from(i), &[("Forwarded", &fwd), ("X-Forwarded-For", &spoof)]).unwrap_or(0),
            );
        }
    }
    report.check(
        direct.iter().skip(rate as usize).all(|&s| s == 429),
        &format!("rate-keys: forwarding headers from a client that is not the proxy are ignored: {direct:?}"),
    );
}

fn slow_calls(t: &Target, report: &mut Report) {
    let mut held = Vec::new();
    for i in 0..1_100u64 {
        let Ok(mut c) = t.connect(HOSTILE) else { break };
        let body = json!({ "jsonrpc": "2.0", "id": i, "method": "tools/call", "params": {
            "name": "slow_compute", "arguments": { "seconds": 30 },
            "_meta": { "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                       "io.modelcontextprotocol/clientCapabilities": {} } } })
        .to_string();
        let raw = c.post(
            &[
                ("MCP-Protocol-Version", "2026-07-28"),
                ("Mcp-Method", "tools/call"),
                ("Mcp-Name", "slow_compute"),
            ],
            body.as_bytes(),
        );
        if c.send(&raw).is_err() {
            break;
        }
        held.push(c);
    }
    // What the server answered at once (the rest is with the host, or waits).
    let mut statuses = std::collections::BTreeMap::new();
    for c in &mut held {
        let _ = c.s.set_read_timeout(Some(Duration::from_millis(5)));
        let status = c.read(false).map(|r| r.status).unwrap_or(0);
        *statuses.entry(status).or_insert(0usize) += 1;
    }
    println!(
        "     the hostile client sent {} slow calls; answered at once: {statuses:?} (0: not yet)",
        held.len()
    );
    second_client_served(t, report, "slow-calls");
    drop(held);
}
