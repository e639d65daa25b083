//! The held-connections benchmark: a server (`srv-mio` or `srv-tokio`) holds many idle and
//! many dripping connections, opened by a second process (`held --hold`), while this
//! process opens a fresh connection every 100 ms and sends one `tools/call`. It reports
//! the probes' latency, the server's resident memory, and when the server closed the held
//! connections.
//!
//! ```text
//! cargo run --release --manifest-path benches/load/Cargo.toml --bin held -- \
//!     [--servers mio,tokio] [--idle N] [--drip N] [--no-build]
//! ```
//!
//! The server runs with its defaults except `max_connections`, raised so that it holds
//! every connection (`SRV_MAX_CONNECTIONS`), and the head timeout, 60 s instead of 10 s
//! (`SRV_HEAD_TIMEOUT_MS`): opening 16,000 connections takes 10-15 s on an idle 2-core
//! machine and up to 50 s on a busy one, so with the default the first ones expire
//! before the last are open and no probe would ever see them all held. The run fails unless at least `MIN_HELD_PROBES` probes were answered
//! while every connection was held, so that window cannot silently vanish. Idle connections send
//! nothing; dripping ones send a request head one byte every 500 ms, never finishing it.
//! Both must be closed by the head timeout (a dripping one after a `408`). The open-file
//! limit here is 20,000 per process and cannot be raised, so the holders live in a
//! process of their own, and they connect from `127.0.0.2` so that their ports do not slow
//! the probes' `connect` (see `connect_from_other_address`).

use std::io::{self, BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::process::{Command, ExitCode, Stdio};
use std::time::{Duration, Instant};

/// How long after the head timeout a held connection may still be open before it counts
/// as not closed by its deadline (the server's timer runs late under load).
const SLACK: Duration = Duration::from_secs(3);
/// The server's head timeout in this run (`SRV_HEAD_TIMEOUT_MS`; the default is 10 s).
const HEAD_TIMEOUT: Duration = Duration::from_secs(60);
/// Probes that must be answered while every connection is held for the run to pass (at
/// one per `PROBE_EVERY`, a window of 2 s).
const MIN_HELD_PROBES: usize = 20;
/// How long after the holder has connected everything probing starts.
const SETTLE: Duration = Duration::from_millis(500);
/// A probe every this often.
const PROBE_EVERY: Duration = Duration::from_millis(100);
/// One byte of the dripping heads every this often.
const DRIP_EVERY: Duration = Duration::from_millis(500);

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let limit = mcp_load::raise_open_file_limit();
    if args.first().map(String::as_str) == Some("--hold") {
        return hold(&args[1..]);
    }
    let mut servers = vec!["mio".to_owned(), "tokio".to_owned()];
    let (mut idle, mut drip, mut build) = (8000usize, 8000usize, true);
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--servers" => servers = it.next().expect("a list").split(',').map(str::to_owned).collect(),
            "--idle" => idle = it.next().and_then(|n| n.parse().ok()).expect("a count"),
            "--drip" => drip = it.next().and_then(|n| n.parse().ok()).expect("a count"),
            "--no-build" => build = false,
            other => {
                eprintln!("unknown argument {other}");
                return ExitCode::from(2);
            }
        }
    }
    // Each process holds every connection (the holder's end, the server's end), plus
    // probes and files: scale the counts down where the open-file limit is lower.
    let room = usize::try_from(limit).unwrap_or(usize::MAX).saturating_sub(1100);
    if idle + drip > room {
        let (asked_idle, asked_drip) = (idle, drip);
        idle = room * asked_idle / (asked_idle + asked_drip);
        drip = room - idle;
        eprintln!(
            "note: the open-file limit is {limit}: holding {idle} + {drip} instead of {asked_idle} + {asked_drip}"
        );
    }
    if build {
        let manifest = concat!(env!("CARGO_MANIFEST_DIR"), "/Cargo.toml");
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
        let mut build = Command::new(cargo);
        build.args(["build", "--release", "--quiet", "--manifest-path", manifest, "--bin", "held"]);
        for server in &servers {
            build.args(["--bin", &format!("srv-{server}")]);
        }
        let ok = build.status().is_ok_and(|s| s.success());
        if !ok {
            eprintln!("building the servers failed");
            return ExitCode::FAILURE;
        }
    }
    println!(
        "| server | held (idle + dripping) | probes answered | p50 (all held) | p99 (all held) | max (all held) | p99 / max (while the server closes them) | server RSS held | server peak RSS | held closed by deadline |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|");
    let mut ok = true;
    for server in &servers {
        match run(server, idle, drip) {
            Ok(row) => {
                ok &= row.passed;
                println!("{}", row.line);
            }
            Err(e) => {
                eprintln!("{server}: {e}");
                ok = false;
            }
        }
    }
    if ok { ExitCode::SUCCESS } else { ExitCode::FAILURE }
}

struct Row {
    line: String,
    passed: bool,
}

fn run(server: &str, idle: usize, drip: usize) -> io::Result<Row> {
    let bin_dir = std::env::current_exe()?.parent().expect("a directory").to_owned();
    let mut child = Command::new(bin_dir.join(format!("srv-{server}")))
        .args(["--http", "127.0.0.1:0"])
        .env("SRV_MAX_CONNECTIONS", (idle + drip + 1000).to_string())
        .env("SRV_HEAD_TIMEOUT_MS", HEAD_TIMEOUT.as_millis().to_string())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()?;
    let pid = child.id();
    let mut stderr = BufReader::new(child.stderr.take().expect("stderr"));
    let mut line = String::new();
    stderr.read_line(&mut line)?;
    let addr: SocketAddr = line
        .trim()
        .strip_prefix("listening on http://")
        .and_then(|l| l.strip_suffix("/mcp"))
        .and_then(|a| a.parse().ok())
        .ok_or_else(|| io::Error::other(format!("no address in {line:?}")))?;
    std::thread::spawn(move || io::copy(&mut stderr, &mut io::sink()));
    let result = measure(server, addr, pid, idle, drip);
    let _ = child.kill();
    let _ = child.wait();
    result
}

fn measure(server: &str, addr: SocketAddr, pid: u32, idle: usize, drip: usize) -> io::Result<Row> {
    let exe = std::env::current_exe()?;
    let mut holder = Command::new(exe)
        .args(["--hold", &addr.to_string(), &idle.to_string(), &drip.to_string()])
        .stdout(Stdio::piped())
        .spawn()?;
    let mut out = BufReader::new(holder.stdout.take().expect("stdout"));
    let mut line = String::new();
    // The holder says when every connection is open.
    out.read_line(&mut line)?;
    let Some(since_first) = line.trim().strip_prefix("held ").and_then(|ms| ms.parse::<u64>().ok()) else {
        return Err(io::Error::other(format!("the holder failed: {line:?}")));
    };
    // The first held connection's deadline: until then, every connection is held.
    let first_deadline = Instant::now() + HEAD_TIMEOUT - Duration::from_millis(since_first);
    // `connect` returns once the kernel queued a connection, before the server accepted
    // it: give the server a moment to take the last of them (the first probe would
    // otherwise measure the accept queue, 15-20 ms here, not a server holding them).
    std::thread::sleep(SETTLE);
    let rss_held = rss(pid, "VmRSS:");
    // Probe while every connection is held, and on while the server closes them.
    let mut latencies = Vec::new();
    let mut during_expiry = Vec::new();
    let mut failed = 0;
    let mut next = Instant::now();
    let mut id = 0u64;
    while Instant::now() < first_deadline + Duration::from_secs(4) {
        std::thread::sleep(next.saturating_duration_since(Instant::now()));
        next += PROBE_EVERY;
        id += 1;
        let held = Instant::now() < first_deadline;
        match probe(addr, id) {
            Ok(d) if held => latencies.push(d),
            Ok(d) => during_expiry.push(d),
            Err(e) => {
                eprintln!("{server}: probe {id} failed: {e}");
                failed += 1;
            }
        }
    }
    if std::env::var_os("HELD_TRACE").is_some() {
        let slow: Vec<String> = latencies
            .iter()
            .enumerate()
            .filter(|(_, d)| d.as_millis() >= 5)
            .map(|(i, d)| format!("#{i} {d:?}"))
            .collect();
        eprintln!("{server}: probes over 5 ms: {slow:?}");
    }
    let rss_peak = rss(pid, "VmHWM:");
    line.clear();
    out.read_line(&mut line)?;
    let _ = holder.wait();
    // "closed N of M, late L, max_after_ms X"
    let parts: Vec<u64> = line.split_whitespace().filter_map(|w| w.parse().ok()).collect();
    let [closed, total, late, max_ms] = parts[..] else {
        return Err(io::Error::other(format!("the holder's report: {line:?}")));
    };
    latencies.sort();
    during_expiry.sort();
    let pct =
        |l: &[Duration], p: f64| l.get(((l.len() as f64 * p).ceil() as usize).saturating_sub(1)).copied();
    let ms = |d: Option<Duration>| d.map_or("-".into(), |d| format!("{:.2} ms", d.as_secs_f64() * 1e3));
    if latencies.len() < MIN_HELD_PROBES {
        eprintln!(
            "{server}: {} probes while every connection was held, fewer than {MIN_HELD_PROBES}: the holder opened too slowly for the head timeout",
            latencies.len()
        );
    }
    let passed = failed == 0 && closed == total && late == 0 && latencies.len() >= MIN_HELD_PROBES;
    let answered = latencies.len() + during_expiry.len();
    let line = format!(
        "| {server} | {} ({idle} + {drip}) | {answered} of {} | {} | {} | {} | {} / {} | {} MiB | {} MiB | {closed} of {total} (latest {:.1} s after open; {late} late) |",
        idle + drip,
        answered + failed,
        ms(pct(&latencies, 0.5)),
        ms(pct(&latencies, 0.99)),
        ms(latencies.last().copied()),
        ms(pct(&during_expiry, 0.99)),
        ms(during_expiry.last().copied()),
        rss_held / 1024,
        rss_peak / 1024,
        max_ms as f64 / 1e3,
    );
    Ok(Row { line, passed })
}

/// A `/proc/PID/status` field in KiB.
fn rss(pid: u32, field: &str) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix(field))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

/// One fresh connection, one `tools/call`, its response read: the time it took.
fn probe(addr: SocketAddr, id: u64) -> io::Result<Duration> {
    let start = Instant::now();
    let mut s = TcpStream::connect(addr)?;
    s.set_nodelay(true)?;
    s.set_read_timeout(Some(Duration::from_secs(5)))?;
    let body = format!(
        r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"echo","arguments":{{"text":"hello"}},"_meta":{{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{{}}}}}}}}"#
    );
    let req = format!(
        "POST /mcp HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nMCP-Protocol-Version: 2026-07-28\r\nMcp-Method: tools/call\r\nMcp-Name: echo\r\nConnection: close\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    s.write_all(req.as_bytes())?;
    let mut resp = Vec::new();
    s.read_to_end(&mut resp)?;
    let d = start.elapsed();
    let text = String::from_utf8_lossy(&resp);
    if !text.starts_with("HTTP/1.1 200") || !text.contains(r#""text":"hello""#) {
        return Err(io::Error::other(format!("unexpected response: {text:?}")));
    }
    Ok(d)
}

/// The holder process: opens `idle` connections that send nothing and `drip` that send a
/// head one byte at a time, says `held`, then watches for the server closing each, and
/// reports `closed N of M late L max_after_ms X` (late: open past the head timeout plus
/// slack).
fn hold(args: &[String]) -> ExitCode {
    let addr: SocketAddr = args[0].parse().expect("an address");
    let idle: usize = args[1].parse().expect("a count");
    let drip: usize = args[2].parse().expect("a count");
    let head = format!("POST /mcp HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\nX-Slow: ");
    // Connections are opened on a thread of their own while this one watches those open
    // already, so that a close is seen when it happens.
    let (tx, rx) = std::sync::mpsc::channel::<(TcpStream, Instant, bool)>();
    let connector = std::thread::spawn(move || -> Result<Duration, String> {
        let start = Instant::now();
        for i in 0..idle + drip {
            let s = connect_from_other_address(addr).map_err(|e| format!("connect {i} failed: {e}"))?;
            s.set_nonblocking(true).map_err(|e| e.to_string())?;
            if tx.send((s, Instant::now(), i >= idle)).is_err() {
                break;
            }
        }
        Ok(start.elapsed())
    });
    let mut conns: Vec<(TcpStream, Instant, bool, Option<Duration>)> = Vec::with_capacity(idle + drip);
    let mut buf = [0u8; 512];
    let mut sent = 0usize;
    let mut next_drip = Instant::now();
    let mut all_open: Option<Instant> = None;
    loop {
        while let Ok((s, opened, dripping)) = rx.try_recv() {
            conns.push((s, opened, dripping, None));
        }
        if all_open.is_none() && connector.is_finished() {
            while let Ok((s, opened, dripping)) = rx.try_recv() {
                conns.push((s, opened, dripping, None));
            }
            all_open = Some(Instant::now());
            let first = conns.iter().map(|c| c.1).min().unwrap_or_else(Instant::now);
            println!("held {}", first.elapsed().as_millis());
            let _ = io::stdout().flush();
        }
        if Instant::now() >= next_drip {
            next_drip += DRIP_EVERY;
            let byte = head.as_bytes()[sent % head.len()];
            sent += 1;
            for (s, _, dripping, closed) in conns.iter_mut() {
                if *dripping && closed.is_none() {
                    let _ = s.write(&[byte]);
                }
            }
        }
        let mut open = 0;
        for (s, opened, _, closed) in conns.iter_mut() {
            if closed.is_some() {
                continue;
            }
            match s.read(&mut buf) {
                Ok(0) => *closed = Some(opened.elapsed()),
                Ok(_) => open += 1, // the 408; the close follows
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => open += 1,
                Err(_) => *closed = Some(opened.elapsed()),
            }
        }
        if let Some(at) = all_open
            && (open == 0 || at.elapsed() > HEAD_TIMEOUT + SLACK + Duration::from_secs(5))
        {
            break;
        }
        // A scan of every socket costs a read each: not more often than this.
        std::thread::sleep(Duration::from_millis(200));
    }
    match connector.join() {
        Ok(Ok(took)) => {
            eprintln!("holder: {} connections opened in {:.1} s", idle + drip, took.as_secs_f64())
        }
        Ok(Err(e)) => {
            println!("{e}");
            return ExitCode::FAILURE;
        }
        Err(_) => return ExitCode::FAILURE,
    }
    let closed = conns.iter().filter(|c| c.3.is_some()).count();
    let late = conns.iter().filter(|c| c.3.is_none_or(|d| d > HEAD_TIMEOUT + SLACK)).count();
    let max = conns.iter().filter_map(|c| c.3).max().unwrap_or_default();
    println!("closed {closed} of {} late {late} max_after_ms {}", conns.len(), max.as_millis());
    ExitCode::SUCCESS
}

/// Connects to `addr` from `127.0.0.2`: the holders' 16,000 connections then take no
/// ephemeral ports of `127.0.0.1`, whose search would otherwise slow every probe's
/// `connect` in the kernel (milliseconds per connect once most of the port range is in use
/// towards one destination), which is the load generator's cost, not the server's.
fn connect_from_other_address(addr: SocketAddr) -> io::Result<TcpStream> {
    let socket = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None)?;
    let from: SocketAddr = "127.0.0.2:0".parse().expect("an address");
    socket.bind(&from.into())?;
    socket.connect(&addr.into())?;
    Ok(socket.into())
}
