//! `StdioServer` over `mio::unix::pipe` pairs: the server runs its loop on a thread, the
//! test is the client.

mod support;

use mcp_engine::Commands;
use std::fs::File;
use std::io::{self, Read, Write};
use std::os::fd::OwnedFd;
use std::sync::{Arc, mpsc};
use std::thread::{self, JoinHandle};

use mcp_engine::{Config, Content, Engine, Event, Ticket, ToolOutput};
use mcp_fixture as everything;
use mcp_io_mio::StdioServer;
use mio::unix::pipe::{Receiver, Sender};
use mio::{Events, Poll, Token, Waker};
use serde_json::{Value, json};
use support::{
    ServerEnds, discover, echo, engine, engine_with, legacy_open, modern, ping, pipes, text_of, within,
};

/// A server thread running `StdioServer::run` with the fixture's synchronous answers.
fn spawn_server(engine: Engine, ends: ServerEnds) -> JoinHandle<io::Result<()>> {
    thread::spawn(move || StdioServer::new(engine, ends.rx, ends.tx)?.run(everything::respond))
}

#[test]
fn discover_echo_and_ping() {
    within(|| {
        let (mut client, ends) = pipes();
        let server = spawn_server(engine(), ends);

        let r = client.call(&discover(1));
        assert_eq!(r["id"], 1);
        let versions = r["result"]["supportedVersions"].as_array().expect("supportedVersions");
        assert!(versions.contains(&json!("2026-07-28")), "{r}");
        assert!(r["result"]["capabilities"]["tools"].is_object(), "{r}");
        assert_eq!(
            r["result"]["_meta"]["io.modelcontextprotocol/serverInfo"]["name"],
            "mcp-engine-everything"
        );

        let r = client.call(&echo(2, "hi"));
        assert_eq!(r["id"], 2);
        assert_eq!(r["result"]["content"], json!([{ "type": "text", "text": "hi" }]));
        assert!(r["result"].get("isError").is_none(), "{r}");

        let r = client.call(&legacy_open());
        assert_eq!(r["id"], 0);
        assert_eq!(r["result"]["protocolVersion"], "2025-11-25");
        assert_eq!(r["result"]["serverInfo"]["name"], "mcp-engine-everything");

        let r = client.call(&ping(3));
        assert_eq!(r, json!({ "jsonrpc": "2.0", "id": 3, "result": {} }));

        client.close();
        assert!(client.try_recv().is_none(), "nothing after the last answer");
        server.join().expect("server thread").expect("server result");
    });
}

#[test]
fn fixture_tools_resources_and_prompts() {
    within(|| {
        let (mut client, ends) = pipes();
        let server = spawn_server(engine(), ends);

        let r = client.call(&modern(1, "tools/list", json!({})));
        let tools = r["result"]["tools"].as_array().expect("tools");
        for name in [
            "echo",
            "test_simple_text",
            "test_image_content",
            "test_audio_content",
            "test_embedded_resource",
            "test_multiple_content_types",
            "test_error_handling",
        ] {
            assert!(tools.iter().any(|t| t["name"] == name), "{name} is listed: {r}");
        }
        let r = client.call(&modern(2, "tools/call", json!({ "name": "test_error_handling" })));
        assert_eq!(r["result"]["isError"], true, "{r}");
        let r = client.call(&modern(3, "resources/read", json!({ "uri": "test://template/42/data" })));
        let body: Value =
            serde_json::from_str(r["result"]["contents"][0]["text"].as_str().expect("text")).expect("json");
        assert_eq!(body, json!({ "id": "42", "templateTest": true, "data": "Data for ID: 42" }));
        let r = client.call(&modern(
            4,
            "prompts/get",
            json!({ "name": "test_prompt_with_arguments", "arguments": { "arg1": "a", "arg2": "b" } }),
        ));
        assert_eq!(
            r["result"]["messages"][0]["content"]["text"],
            "Prompt with arguments: arg1='a', arg2='b'"
        );
        let r = client.call(&echo(5, "\u{e9}\u{1F600}"));
        assert_eq!(text_of(&r), "\u{e9}\u{1F600}");

        client.close();
        assert!(client.try_recv().is_none());
        server.join().expect("server thread").expect("server result");
    });
}

#[test]
fn pipelined_200_requests_are_answered_in_order() {
    within(|| {
        let (mut client, ends) = pipes();
        let server = spawn_server(engine(), ends);
        let input: String = (1..=200).map(|i| echo(i, &format!("message {i}"))).collect();
        let mut tx = client.take_writer();
        // All 200 in one write, from another thread so that neither side can stall the other.
        let writer = thread::spawn(move || tx.write_all(input.as_bytes()));
        for i in 1..=200 {
            let r = client.recv();
            assert_eq!(r["id"], i, "{r}");
            assert_eq!(text_of(&r), format!("message {i}"));
        }
        writer.join().expect("writer thread").expect("write");
        // The writer thread dropped its end: end of file for the server.
        assert!(client.try_recv().is_none());
        server.join().expect("server thread").expect("server result");
    });
}

#[test]
fn eof_ends_the_loop_once_answers_are_flushed() {
    within(|| {
        let (mut client, ends) = pipes();
        // Everything, end of file included, is there before the server starts; the last
        // frame has no newline (processed at end of file).
        let mut input = discover(1) + &echo(2, "a") + &legacy_open() + &ping(3);
        input.push_str(echo(4, "last").trim_end());
        client.send(&input);
        client.close();
        let server = spawn_server(engine(), ends);
        let mut ids = Vec::new();
        while let Some(r) = client.try_recv() {
            assert!(r.get("result").is_some(), "{r}");
            ids.push(r["id"].clone());
        }
        assert_eq!(ids, [json!(1), json!(2), json!(0), json!(3), json!(4)]);
        server.join().expect("server thread").expect("the loop ends with Ok once finished");
    });
}

#[test]
fn large_outputs_wait_for_a_slow_reader() {
    within(|| {
        let (mut client, ends) = pipes();
        // Each answer is near 50 kB: the output pipe (64 kB) fills again and again, so the
        // server must wait for writable readiness, and stop reading meanwhile.
        let server = spawn_server(engine(), ends);
        let big = |i: usize| format!("{i:04}{}", "x".repeat(50_000));
        let input: String = (0..60).map(|i| echo(i, &big(i))).collect();
        let mut tx = client.take_writer();
        let writer = thread::spawn(move || tx.write_all(input.as_bytes()));
        for i in 0..60 {
            let r = client.recv();
            assert_eq!(r["id"], i);
            assert_eq!(text_of(&r), big(i));
        }
        writer.join().expect("writer thread").expect("write");
        assert!(client.try_recv().is_none());
        server.join().expect("server thread").expect("server result");
    });
}

/// A user loop that answers tickets later: a worker thread computes each answer and wakes
/// the loop, which answers and calls `drive`. With an in-flight limit of 2 the engine
/// stops taking input until `drive` flushes answers, so reading must resume from `drive`.
#[test]
fn answers_given_later_are_flushed_by_drive() {
    within(|| {
        let (mut client, ends) = pipes();
        let mut cfg = Config::new("mcp-engine-everything", "test");
        cfg.max_in_flight(2);
        let server = thread::spawn(move || -> io::Result<usize> {
            const READ: Token = Token(10);
            const WRITE: Token = Token(11);
            const WORKER: Token = Token(12);
            let mut poll = Poll::new()?;
            let mut events = Events::with_capacity(16);
            let mut server = StdioServer::new(engine_with(cfg), ends.rx, ends.tx)?;
            server.register(poll.registry(), READ, WRITE)?;
            let waker = Arc::new(Waker::new(poll.registry(), WORKER)?);
            // The worker echoes each job's text back.
            let (job_tx, job_rx) = mpsc::channel::<(Ticket, String)>();
            let (done_tx, done_rx) = mpsc::channel::<(Ticket, String)>();
            let worker = thread::spawn(move || {
                for job in job_rx {
                    if done_tx.send(job).is_err() {
                        break;
                    }
                    waker.wake().expect("wake");
                }
            });
            // The host copies the ticket and the text out of the event; nothing is answered here.
            let mut host = move |event: Event<'_>| {
                let Event::CallTool(call) = event else { panic!("only echo calls are sent") };
                let args: Value = serde_json::from_str(call.arguments.raw()).expect("json");
                let text = args["text"].as_str().expect("text").to_owned();
                job_tx.send((call.ticket, text)).expect("worker alive");
            };
            let mut most_in_flight = 0;
            server.drive(poll.registry(), &mut host)?;
            while !server.is_finished() {
                poll.poll(&mut events, None)?;
                for event in events.iter() {
                    if event.token() == WORKER {
                        for (ticket, text) in done_rx.try_iter() {
                            most_in_flight = most_in_flight.max(server.engine().in_flight());
                            let content = [Content::text(&text)];
                            server
                                .engine_mut()
                                .answer_tool(ticket, &ToolOutput::new(&content))
                                .expect("live ticket");
                        }
                        server.drive(poll.registry(), &mut host)?;
                    } else {
                        server.handle_ready(poll.registry(), event, &mut host)?;
                    }
                }
            }
            server.deregister(poll.registry())?;
            drop(host); // closes the job channel: the worker ends
            worker.join().expect("worker");
            Ok(most_in_flight)
        });

        let r = client.call(&echo(1, "one"));
        assert_eq!(text_of(&r), "one");
        let input: String = (2..=100).map(|i| echo(i, &format!("n{i}"))).collect();
        let mut tx = client.take_writer();
        let writer = thread::spawn(move || tx.write_all(input.as_bytes()));
        for i in 2..=100 {
            let r = client.recv();
            assert_eq!(r["id"], i);
            assert_eq!(text_of(&r), format!("n{i}"));
        }
        writer.join().expect("writer thread").expect("write");
        assert!(client.try_recv().is_none());
        let most = server.join().expect("server thread").expect("server result");
        assert!((1..=2).contains(&most), "in flight at most 2, saw {most}");
    });
}

/// A regular file cannot be registered with epoll (`EPERM`); the server reads it
/// without readiness events, and writes to a regular file never block.
#[test]
fn regular_files_as_input_and_output() {
    within(|| {
        let dir = std::env::temp_dir();
        let tag = format!("mcp-io-mio-{}", std::process::id());
        let (in_path, out_path) = (dir.join(format!("{tag}-in.jsonl")), dir.join(format!("{tag}-out.jsonl")));
        let input: String = (1..=300).map(|i| echo(i, &format!("f{i}"))).collect::<String>() + &discover(0);
        std::fs::write(&in_path, input).expect("write input");
        let reader = Receiver::from(OwnedFd::from(File::open(&in_path).expect("open input")));
        let writer = Sender::from(OwnedFd::from(File::create(&out_path).expect("create output")));
        StdioServer::new(engine(), reader, writer).expect("server").run(everything::respond).expect("run");
        let mut out = String::new();
        File::open(&out_path).expect("open output").read_to_string(&mut out).expect("read output");
        let _ = std::fs::remove_file(&in_path);
        let _ = std::fs::remove_file(&out_path);
        let responses: Vec<Value> = out.lines().map(|l| serde_json::from_str(l).expect("json")).collect();
        assert_eq!(responses.len(), 301);
        for (i, r) in responses[..300].iter().enumerate() {
            assert_eq!(r["id"], i + 1);
            assert_eq!(text_of(r), format!("f{}", i + 1));
        }
        assert_eq!(responses[300]["id"], 0);
    });
}

#[test]
fn dev_null_input_finishes_at_once() {
    within(|| {
        let (mut client, ends) = pipes();
        let reader = Receiver::from(OwnedFd::from(File::open("/dev/null").expect("open /dev/null")));
        drop(ends.rx);
        StdioServer::new(engine(), reader, ends.tx).expect("server").run(everything::respond).expect("run");
        client.close();
        assert!(client.try_recv().is_none(), "no output for no input");
    });
}

#[test]
fn events_of_other_tokens_are_ignored_and_registering_twice_fails() {
    within(|| {
        let (mut client, ends) = pipes();
        let mut poll = Poll::new().expect("poll");
        let mut server = StdioServer::new(engine(), ends.rx, ends.tx).expect("server");
        server.register(poll.registry(), Token(1), Token(2)).expect("register");
        let again = server.register(poll.registry(), Token(1), Token(2)).expect_err("second register");
        assert_eq!(again.kind(), io::ErrorKind::AlreadyExists);

        // A waker of our own shares the poll; its event must leave the server alone.
        let waker = Waker::new(poll.registry(), Token(3)).expect("waker");
        waker.wake().expect("wake");
        client.send(&echo(1, "x"));
        let mut events = Events::with_capacity(8);
        let mut answered = 0;
        let mut host = |event: Event<'_>| {
            answered += 1;
            everything::respond(event);
        };
        let mut got_reply = false;
        while !got_reply {
            poll.poll(&mut events, None).expect("poll");
            for event in events.iter() {
                server.handle_ready(poll.registry(), event, &mut host).expect("handle_ready");
                got_reply |= event.token() == Token(1);
            }
        }
        let r = client.recv();
        assert_eq!(text_of(&r), "x");
        assert_eq!(answered, 1);
        assert!(!server.is_finished());
        server.deregister(poll.registry()).expect("deregister");
    });
}

/// Single-threaded and deterministic: the client writes requests whose answers are far
/// larger than a pipe, and reads nothing until the server is stuck on a full pipe. Only
/// then does the writer wait for writable readiness, and every answer arrives once the
/// client reads.
#[test]
fn writer_waits_for_writable_readiness_only_while_output_is_blocked() {
    within(|| {
        const READ: Token = Token(0);
        const WRITE: Token = Token(1);
        let (mut client, ends) = pipes();
        let mut poll = Poll::new().expect("poll");
        let mut events = Events::with_capacity(8);
        let mut server = StdioServer::new(engine(), ends.rx, ends.tx).expect("server");
        server.register(poll.registry(), READ, WRITE).expect("register");
        assert!(!server.is_write_blocked());

        // ~30 kB of requests fit in the pipe; each answer lists the fixture's tools (~2 kB).
        let n = 250;
        let input: String = (0..n).map(|i| modern(i, "tools/list", json!({}))).collect();
        assert!(input.len() < 60_000);
        client.send(&input);
        client.close();
        while !server.is_write_blocked() {
            poll.poll(&mut events, None).expect("poll");
            for event in events.iter() {
                assert_eq!(event.token(), READ, "nothing but input can be ready yet");
                server.handle_ready(poll.registry(), event, everything::respond).expect("handle_ready");
            }
        }
        // Stuck: nothing is ready until the client reads.
        poll.poll(&mut events, Some(std::time::Duration::ZERO)).expect("poll");
        assert!(events.iter().all(|e| e.token() != WRITE), "the pipe is still full");

        let rx = client.rx.get_ref();
        rx.set_nonblocking(true).expect("nonblocking");
        let mut server = Some(server);
        let mut out = Vec::new();
        let mut buf = vec![0u8; 16 * 1024];
        let mut writable_events = 0;
        loop {
            match (&*rx).read(&mut buf) {
                Ok(0) => break,
                Ok(k) => out.extend_from_slice(&buf[..k]),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    let s = server.as_mut().expect("output is missing while the server is gone");
                    poll.poll(&mut events, None).expect("poll");
                    for event in events.iter() {
                        writable_events += usize::from(event.token() == WRITE);
                        s.handle_ready(poll.registry(), event, everything::respond).expect("handle_ready");
                    }
                    if s.is_finished() {
                        assert!(!s.is_write_blocked());
                        s.deregister(poll.registry()).expect("deregister");
                        server = None; // closes the server's end: end of file for the client
                    }
                }
                Err(e) => panic!("read: {e}"),
            }
        }
        assert!(writable_events > 0);
        let text = String::from_utf8(out).expect("utf-8");
        let responses: Vec<Value> = text.lines().map(|l| serde_json::from_str(l).expect("json")).collect();
        let tools = &responses[0]["result"]["tools"];
        assert!(tools.as_array().is_some_and(|t| t.len() >= 7), "{tools}");
        let ids: Vec<u64> = responses
            .iter()
            .map(|v| {
                assert_eq!(&v["result"]["tools"], tools);
                v["id"].as_u64().expect("id")
            })
            .collect();
        assert_eq!(ids, (0..n).collect::<Vec<_>>());
    });
}

/// Megabytes of input that produce no output (notifications) stream through; the server
/// reads in bounded slices and re-arms its registration between them.
#[test]
fn a_long_burst_of_notifications_then_a_ping() {
    within(|| {
        let (mut client, ends) = pipes();
        let server = spawn_server(engine(), ends);
        let r = client.call(&legacy_open());
        assert_eq!(r["id"], 0);
        let note = "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\n";
        let mut input = note.repeat(60_000); // 3.3 MB
        input.push_str(&ping(1));
        let mut tx = client.take_writer();
        let writer = thread::spawn(move || tx.write_all(input.as_bytes()));
        assert_eq!(client.recv(), json!({ "jsonrpc": "2.0", "id": 1, "result": {} }));
        writer.join().expect("writer thread").expect("write");
        assert!(client.try_recv().is_none());
        server.join().expect("server thread").expect("server result");
    });
}
