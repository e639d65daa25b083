//! The floor: answers without parsing, to show what the pipes and sockets cost alone.
//!
//! Over stdio it counts the newlines it reads and writes one fixed response line for each.
//! Over HTTP it counts header terminators (`\r\n\r\n`; the bodies the driver sends hold
//! none) and writes one fixed `200` response with a JSON body for each, one blocking thread
//! per connection. Buffers are reused, so it allocates nothing per request.

use std::io::{self, Read, Write};
use std::net::{TcpListener, TcpStream};

use mcp_load::Mode;

/// The fixed response: the shape of an `echo` result, with a fixed id.
const BODY: &str = r#"{"jsonrpc":"2.0","id":0,"result":{"content":[{"type":"text","text":"hello"}]}}"#;

fn main() -> io::Result<()> {
    let mode = mcp_load::mode("srv-floor");
    mcp_load::serve_stats();
    match mode {
        Mode::Stdio => stdio(),
        Mode::Http(addr) => http(mcp_load::bind(addr)),
    }
}

fn stdio() -> io::Result<()> {
    let line = format!("{BODY}\n");
    let mut input = io::stdin().lock();
    let mut output = io::stdout().lock();
    let mut buf = vec![0u8; 64 * 1024];
    let mut out = Vec::new();
    loop {
        let n = match input.read(&mut buf) {
            Ok(0) => return output.flush(),
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        out.clear();
        for _ in memchr::memchr_iter(b'\n', &buf[..n]) {
            out.extend_from_slice(line.as_bytes());
        }
        output.write_all(&out)?;
        output.flush()?;
    }
}

fn http(listener: TcpListener) -> io::Result<()> {
    let response = format!(
        "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{BODY}",
        BODY.len()
    );
    let response: &'static [u8] = response.leak().as_bytes();
    for conn in listener.incoming() {
        let conn = conn?;
        std::thread::spawn(move || {
            let _ = connection(conn, response);
        });
    }
    Ok(())
}

fn connection(mut conn: TcpStream, response: &[u8]) -> io::Result<()> {
    conn.set_nodelay(true)?;
    const END: &[u8] = b"\r\n\r\n";
    // The read buffer keeps the last three bytes of the previous read in front, so that a
    // terminator split between two reads is still found.
    let mut buf = vec![0u8; 3 + 64 * 1024];
    let mut kept = 0;
    let mut out = Vec::new();
    loop {
        let n = match conn.read(&mut buf[kept..]) {
            Ok(0) => return Ok(()),
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        let data = &buf[..kept + n];
        out.clear();
        for _ in memchr::memmem::find_iter(data, END) {
            out.extend_from_slice(response);
        }
        if !out.is_empty() {
            conn.write_all(&out)?;
        }
        // Keep the tail unless it ends a terminator just counted.
        let tail = data.len().min(END.len() - 1);
        let keep_from = if data.ends_with(END) { data.len() } else { data.len() - tail };
        buf.copy_within(keep_from..kept + n, 0);
        kept = kept + n - keep_from;
    }
}
