//! A blocking HTTP/1.1 client over `std::net::TcpStream`, just enough for the tests:
//! requests are written raw, responses are parsed by hand (`Content-Length` bodies only).

use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpStream};

use serde_json::Value;

use super::HANG;

/// The echo request of the tests: a 2026-07-28 `tools/call` of `echo`.
pub fn echo_body(id: u64, text: &str) -> String {
    let text = serde_json::to_string(text).expect("a JSON string");
    format!(
        r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"echo","arguments":{{"text":{text}}},"_meta":{{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{{}}}}}}}}"#
    )
}

/// A `POST /mcp` of `tools/call` `echo` with the headers a conforming client sends,
/// `extra` header lines (each ending in CRLF) added.
pub fn echo_post(addr: SocketAddr, id: u64, text: &str, extra: &str) -> Vec<u8> {
    let body = echo_body(id, text);
    format!(
        "POST /mcp HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\n\
         MCP-Protocol-Version: 2026-07-28\r\nMcp-Method: tools/call\r\nMcp-Name: echo\r\n\
         {extra}Content-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}

/// A parsed response.
#[derive(Debug)]
pub struct Response {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Response {
    /// The first value of header `name` (case-insensitive).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(n, _)| n.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str())
    }

    /// Whether the server says it closes the connection.
    pub fn closes(&self) -> bool {
        self.header("connection").is_some_and(|v| v.eq_ignore_ascii_case("close"))
    }

    /// The body as JSON.
    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body)
            .unwrap_or_else(|e| panic!("not JSON ({e}): {}", String::from_utf8_lossy(&self.body)))
    }

    /// The text of the first content block of a tool result, checking the response is
    /// a `200` JSON-RPC result with id `id`.
    pub fn echo_text(&self, id: u64) -> String {
        assert_eq!(self.status, 200, "{self:?}");
        assert_eq!(self.header("content-type"), Some("application/json"), "{self:?}");
        let v = self.json();
        assert_eq!(v["id"], id, "{v}");
        v["result"]["content"][0]["text"]
            .as_str()
            .unwrap_or_else(|| panic!("not a text result: {v}"))
            .to_owned()
    }
}

/// One connection to the server.
pub struct Client {
    pub stream: TcpStream,
    /// Bytes read and not parsed yet.
    buf: Vec<u8>,
}

impl Client {
    /// Connects, with read and write timeouts as hang protection.
    pub fn connect(addr: SocketAddr) -> Self {
        let stream = TcpStream::connect(addr).expect("connect to the server");
        stream.set_read_timeout(Some(HANG)).expect("read timeout");
        stream.set_write_timeout(Some(HANG)).expect("write timeout");
        stream.set_nodelay(true).expect("nodelay");
        Self { stream, buf: Vec::new() }
    }

    /// Writes `bytes` entirely.
    pub fn send(&mut self, bytes: &[u8]) {
        self.stream.write_all(bytes).expect("write to the server");
    }

    /// Reads more bytes into the buffer; returns how many (0 at end of file).
    fn fill(&mut self) -> io::Result<usize> {
        let mut chunk = [0u8; 16 * 1024];
        let n = self.stream.read(&mut chunk)?;
        self.buf.extend_from_slice(&chunk[..n]);
        Ok(n)
    }

    /// Reads one response; `None` if the server closed the connection before sending
    /// a byte of one.
    pub fn try_recv(&mut self) -> Option<Response> {
        let head_len = loop {
            if let Some(i) = self.buf.windows(4).position(|w| w == b"\r\n\r\n") {
                break i + 4;
            }
            if self.fill().expect("read from the server") == 0 {
                assert!(self.buf.is_empty(), "end of file in a response head: {:?}", self.text());
                return None;
            }
        };
        let head = String::from_utf8(self.buf[..head_len - 4].to_vec()).expect("a UTF-8 head");
        let mut lines = head.split("\r\n");
        let status_line = lines.next().expect("a status line");
        let mut parts = status_line.splitn(3, ' ');
        assert_eq!(parts.next(), Some("HTTP/1.1"), "{status_line}");
        let status = parts.next().and_then(|s| s.parse().ok()).unwrap_or_else(|| panic!("{status_line}"));
        let headers: Vec<(String, String)> = lines
            .map(|l| {
                let (n, v) = l.split_once(':').unwrap_or_else(|| panic!("a header line: {l:?}"));
                (n.trim().to_owned(), v.trim().to_owned())
            })
            .collect();
        let len: usize = headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case("content-length"))
            .map_or(0, |(_, v)| v.parse().expect("a content-length"));
        while self.buf.len() < head_len + len {
            assert!(self.fill().expect("read a body") > 0, "end of file in a body");
        }
        let body = self.buf[head_len..head_len + len].to_vec();
        self.buf.drain(..head_len + len);
        Some(Response { status, headers, body })
    }

    /// Reads one response; panics at end of file.
    pub fn recv(&mut self) -> Response {
        self.try_recv().expect("the server closed the connection early")
    }

    /// Sends one request and reads its response.
    pub fn call(&mut self, request: &[u8]) -> Response {
        self.send(request);
        self.recv()
    }

    /// Whether the server closed the connection with nothing more to send: the next
    /// read returns 0 (not an error: a reset would mean the server closed with unread
    /// bytes instead of lingering).
    pub fn is_closed_by_server(&mut self) -> bool {
        self.buf.is_empty() && self.fill().expect("read from the server") == 0
    }

    fn text(&self) -> String {
        String::from_utf8_lossy(&self.buf).into_owned()
    }
}
