//! Long-lived streams cannot lock out new connections (issue 27), over real TCP: one
//! client (127.0.0.2) holds every connection of a server with a small connection cap with
//! standalone `GET` streams; another client (127.0.0.3) still connects and is served, and
//! the first client's oldest stream ends with its last chunk. Before, the engine refused
//! the second client's connection and the server held it unanswered until one of the
//! streams ended.

mod support;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{IpAddr, Ipv4Addr, SocketAddr, TcpListener, TcpStream};
use std::thread;

use mcp_engine::Config;
use mcp_engine::http::{AllowedOrigins, Authorization, HttpConfig, HttpEngine, HttpEvent};
use mcp_fixture as everything;
use support::{HANG, within};

const A: IpAddr = IpAddr::V4(Ipv4Addr::new(127, 0, 0, 2));
const B: IpAddr = IpAddr::V4(Ipv4Addr::new(127, 0, 0, 3));

/// A server thread on a fresh `127.0.0.1:0` listener with the fixture's answers.
fn spawn_server(engine: HttpEngine) -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = listener.local_addr().expect("local_addr");
    thread::spawn(move || {
        mcp_io_mio::serve_http(listener, engine, |event| {
            if let HttpEvent::Mcp(event) = event {
                everything::respond(event);
            }
            None
        })
    });
    addr
}

/// A blocking connection to `server` from the address `from` (read and write timeouts as
/// hang protection only).
struct Conn {
    reader: BufReader<TcpStream>,
    writer: TcpStream,
    server: SocketAddr,
}

impl Conn {
    fn from(from: IpAddr, server: SocketAddr) -> Self {
        let socket =
            socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None).expect("a socket");
        socket.bind(&SocketAddr::new(from, 0).into()).expect("bind the client's address");
        socket.connect(&server.into()).expect("connect");
        let stream: TcpStream = socket.into();
        stream.set_read_timeout(Some(HANG)).expect("read timeout");
        stream.set_write_timeout(Some(HANG)).expect("write timeout");
        stream.set_nodelay(true).expect("nodelay");
        Self { reader: BufReader::new(stream.try_clone().expect("clone")), writer: stream, server }
    }

    fn send(&mut self, request: &str) {
        self.writer.write_all(request.as_bytes()).expect("write the request");
    }

    /// Reads a response head and its `Content-Length` body: (status, headers, body).
    fn response(&mut self) -> (u16, Vec<(String, String)>, String) {
        let mut line = String::new();
        self.reader.read_line(&mut line).expect("read the status line");
        assert!(line.starts_with("HTTP/1.1 "), "not a status line: {line:?}");
        let status = line[9..12].parse().expect("a status code");
        let mut headers = Vec::new();
        loop {
            line.clear();
            self.reader.read_line(&mut line).expect("read a header");
            let l = line.trim_end_matches(['\r', '\n']);
            if l.is_empty() {
                break;
            }
            let (n, v) = l.split_once(':').expect("a header line");
            headers.push((n.trim().to_ascii_lowercase(), v.trim().to_owned()));
        }
        let len = headers.iter().find(|(n, _)| n == "content-length").map_or(0, |(_, v)| v.parse().unwrap());
        let mut body = vec![0; len];
        self.reader.read_exact(&mut body).expect("read the body");
        (status, headers, String::from_utf8(body).expect("UTF-8"))
    }

    /// A `2025-11-25` `POST`, in session `session` when given.
    fn post(&mut self, body: &str, session: Option<&str>) {
        let mut req = format!(
            "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nContent-Type: application/json\r\n\
             Accept: application/json, text/event-stream\r\n",
            self.server.port()
        );
        if let Some(id) = session {
            req.push_str(&format!("Mcp-Session-Id: {id}\r\nMCP-Protocol-Version: 2025-11-25\r\n"));
        }
        req.push_str(&format!("Content-Length: {}\r\n\r\n{body}", body.len()));
        self.send(&req);
    }

    /// Opens a session here, then its standalone stream.
    fn session_stream(&mut self) {
        self.post(INITIALIZE, None);
        let (status, headers, body) = self.response();
        assert_eq!(status, 200, "{body}");
        let id = header(&headers, "mcp-session-id").expect("a session id").to_owned();
        self.post(INITIALIZED, Some(&id));
        assert_eq!(self.response().0, 202);
        let get = format!(
            "GET /mcp HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nAccept: text/event-stream\r\nMcp-Session-Id: {id}\r\n\r\n",
            self.server.port()
        );
        self.send(&get);
        let (status, headers, _) = self.response();
        assert_eq!(status, 200);
        assert_eq!(header(&headers, "content-type"), Some("text/event-stream"));
    }
}

fn header<'a>(headers: &'a [(String, String)], name: &str) -> Option<&'a str> {
    headers.iter().find(|(n, _)| n == name).map(|(_, v)| v.as_str())
}

const INITIALIZE: &str = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#;
const INITIALIZED: &str = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;

#[test]
fn streams_of_one_client_holding_every_connection_do_not_lock_another_out() {
    within(|| {
        let mut http = HttpConfig::new(AllowedOrigins::Any, Authorization::Everyone);
        http.max_connections(6);
        let server =
            spawn_server(HttpEngine::new(Config::new("stream-shares", "1"), http, everything::catalog()));
        // Client A takes every connection with a standalone stream.
        let mut streams: Vec<Conn> = (0..6)
            .map(|_| {
                let mut conn = Conn::from(A, server);
                conn.session_stream();
                conn
            })
            .collect();
        // Client B connects and opens a session: served.
        let mut b = Conn::from(B, server);
        b.post(INITIALIZE, None);
        let (status, headers, body) = b.response();
        assert_eq!(status, 200, "{body}");
        assert!(header(&headers, "mcp-session-id").is_some());
        // A's oldest stream ended to make room: `retry:`, its last chunk, then the end.
        let mut rest = String::new();
        streams[0].reader.read_to_string(&mut rest).expect("read to the end");
        assert!(rest.contains("retry: 5000\n"), "{rest}");
        assert!(rest.ends_with("0\r\n\r\n"), "the chunked stream ends: {rest}");
    });
}
