//! Your own mio loop: the stdio server registered next to a source of your own.
//!
//! Tool calls are handed to a worker thread; it sends each result back over a channel
//! and wakes the loop through a `mio::Waker`. The loop then answers the tickets and calls
//! `drive`, which writes the answers.
//!
//! ```text
//! printf '%s\n' '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"reverse","arguments":{"text":"hello"},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}' \
//!   | cargo run -q -p mcp-io-mio --example custom_loop
//! ```

use mcp_engine::Commands;
use std::io;
use std::sync::{Arc, mpsc};
use std::thread;

use mcp_engine::{Catalog, Config, Content, Engine, Event, Ticket, Tool, ToolOutput};
use mcp_io_mio::StdioServer;
use mio::{Events, Poll, Token, Waker};

const STDIN: Token = Token(0);
const STDOUT: Token = Token(1);
const WORKER: Token = Token(2);

#[derive(serde::Deserialize)]
struct Args {
    text: String,
}

fn main() -> io::Result<()> {
    let catalog = Catalog::builder()
        .tool(Tool::new("reverse").description("Reverses a text, on a worker thread.").input_schema(
            serde_json::json!({
                "type": "object",
                "properties": { "text": { "type": "string" } },
                "required": ["text"]
            }),
        ))
        .build()
        .map_err(io::Error::other)?;
    let engine = Engine::new(Config::new("custom-loop", env!("CARGO_PKG_VERSION")), catalog);

    let mut poll = Poll::new()?;
    let mut events = Events::with_capacity(64);
    let mut server = StdioServer::stdio(engine)?;
    server.register(poll.registry(), STDIN, STDOUT)?;

    // The worker: takes jobs, sends results back, wakes the loop.
    let waker = Arc::new(Waker::new(poll.registry(), WORKER)?);
    let (job_tx, job_rx) = mpsc::channel::<(Ticket, String)>();
    let (done_tx, done_rx) = mpsc::channel::<(Ticket, String)>();
    let worker = thread::spawn(move || {
        for (ticket, text) in job_rx {
            let reversed: String = text.chars().rev().collect();
            if done_tx.send((ticket, reversed)).is_err() {
                break;
            }
            let _ = waker.wake();
        }
    });

    // The host: hand every tool call to the worker. Nothing is answered here.
    let mut host = move |event: Event<'_>| {
        if let Event::CallTool(call) = event {
            let text = call.arguments.deserialize::<Args>().map(|a| a.text).unwrap_or_default();
            let _ = job_tx.send((call.ticket, text));
        }
        // Event::Cancelled: the worker's late answer will be refused, which is fine.
    };

    server.drive(poll.registry(), &mut host)?;
    while !server.is_finished() {
        if let Err(e) = poll.poll(&mut events, server.poll_timeout()) {
            if e.kind() == io::ErrorKind::Interrupted {
                continue;
            }
            return Err(e);
        }
        for event in events.iter() {
            if event.token() == WORKER {
                // Answer the tickets the worker finished, then let the server write.
                for (ticket, text) in done_rx.try_iter() {
                    let _ =
                        server.engine_mut().answer_tool(ticket, &ToolOutput::new(&[Content::text(&text)]));
                }
                server.drive(poll.registry(), &mut host)?;
            } else {
                server.handle_ready(poll.registry(), event, &mut host)?;
            }
        }
    }

    server.deregister(poll.registry())?;
    drop(host); // closes the job channel: the worker ends
    worker.join().map_err(|_| io::Error::other("the worker panicked"))
}
