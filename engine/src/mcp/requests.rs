//! Methods that reach the host: `tools/call`, `resources/read`, `prompts/get`,
//! `completion/complete`, each validated and handed over as the event to poll
//! ([`HostRequests`], the parts they use, lent by the core).

use core::fmt;

use simd_json::{Node, StaticNode};

use crate::catalog::Catalog;
use crate::config::Config;
use crate::error::{Detailed, PeerError};
use crate::jsonrpc::{IdRef, Reply, Req};
use crate::mcp::answered::AnswerLog;
use crate::mcp::answers::Answers;
use crate::mcp::inputs::Inputs;
use crate::mcp::lifecycle::{Session, request_log_level};
use crate::mcp::mrtr::{self, ClientCapabilities, Entry, Method};
use crate::mcp::prepared::Prepared;
use crate::mcp::scopes::Grant;
use crate::mcp::scratch::Scratch;
use crate::mcp::served::Log;
use crate::mcp::tasks::Tasks;
use crate::mcp::tickets::{Busy, IdBuf, Kind, Pending, PendingKind, Ticket, Tickets};
use crate::mcp::write::{result_end, result_start};
use crate::output::{Outbox, Route};
use crate::revision::Revision;
use crate::time::Clock;
use crate::wire::cursor::ListKind;
use crate::wire::json;
use crate::wire::trace::{self, TraceParent};

/// Who a request that reaches the host comes from, as the transport handed it in.
#[derive(Clone, Copy)]
pub(crate) struct Caller<'a> {
    /// Its route (its ticket's).
    pub(crate) route: Route,
    /// Its principal (`None`: anonymous).
    pub(crate) principal: Option<[u8; 32]>,
    /// What it was granted: a definition it may not use does not exist for it.
    pub(crate) grant: Grant<'a>,
    /// Its response cannot be a stream (HTTP/1.0).
    pub(crate) no_stream: bool,
}

/// The methods that reach the host, over the parts they use (lent by the core for the
/// request being dispatched): the catalog and configuration, the scratch buffers the event
/// reads, the ticket table, the outbox, the input and task tables, the records of what
/// was answered, the session and the caller.
pub(crate) struct HostRequests<'a> {
    pub(crate) cfg: &'a Config,
    pub(crate) catalog: &'a Catalog,
    pub(crate) prepared: &'a Prepared,
    pub(crate) scratch: &'a mut Scratch,
    pub(crate) tickets: &'a mut Tickets,
    pub(crate) outbox: &'a mut Outbox,
    pub(crate) inputs: &'a mut Inputs,
    pub(crate) tasks: &'a mut Tasks,
    pub(crate) served: &'a mut Log,
    pub(crate) answered: &'a mut AnswerLog,
    /// The session the request is served in (the stream's, or the HTTP session's).
    pub(crate) session: &'a Session,
    pub(crate) caller: Caller<'a>,
    pub(crate) clock: Clock,
}

impl HostRequests<'_> {
    /// The handle an answer goes through.
    fn answers(&mut self) -> Answers<'_> {
        Answers {
            tickets: self.tickets,
            outbox: self.outbox,
            inputs: self.inputs,
            tasks: self.tasks,
            prepared: self.prepared,
            catalog: self.catalog,
            resources_cache: self.cfg.resources_cache,
            clock: self.clock,
            log: self.answered,
        }
    }

    /// Copies `params.arguments` into `self.scratch.args` as compact JSON (`{}` when absent).
    fn take_arguments<'t>(&mut self, req: &Req<'_, 't>) -> Result<(), PeerError<'t>> {
        self.scratch.args.clear();
        match req.arguments {
            None => self.scratch.args.extend_from_slice(b"{}"),
            Some(ai) if json::is_object(req.n, ai) => {
                json::write_value(req.n, ai, &mut self.scratch.args);
            }
            Some(_) => return Err(PeerError::ArgumentsNotObject),
        }
        Ok(())
    }

    /// Reads the request's W3C trace context from `params._meta` into the scratch
    /// buffers the event lends (each part only if valid; nothing is ever refused for it),
    /// and returns its `traceparent`.
    fn take_trace(&mut self, req: &Req<'_, '_>) -> Option<TraceParent> {
        let t = &mut self.scratch.trace;
        t.parent = req.str_at(req.meta.traceparent).and_then(TraceParent::parse);
        // A `tracestate` without a valid `traceparent` is discarded, unread.
        t.has_state = match (t.parent, req.str_at(req.meta.tracestate)) {
            (Some(_), Some(s)) => trace::copy_tracestate(s, &mut t.state),
            _ => false,
        };
        t.baggage.clear();
        t.has_baggage = match req.str_at(req.meta.baggage) {
            Some(b) if trace::valid_baggage(b) => {
                t.baggage.push_str(b);
                true
            }
            _ => false,
        };
        t.parent
    }

    /// Takes a free slot for the request and makes it the event to poll.
    fn hand_over<'t>(
        &mut self,
        req: &Req<'_, 't>,
        kind: PendingKind,
        revision: Revision,
    ) -> Result<(), PeerError<'t>> {
        let id = IdBuf::of(req.id).ok_or(PeerError::IdTooLong)?;
        // `process` pauses before a frame while every slot is busy, so one is free; should
        // that ever not hold, the request is answered rather than dropped.
        let slot = self.tickets.slots.iter().position(|s| s.busy.is_none()).ok_or(PeerError::NoFreeSlot)?;
        let progress = req.meta.progress_token.and_then(|t| match req.n.get(t)? {
            Node::String(s) => IdBuf::of(IdRef::Str(s)),
            Node::Static(StaticNode::I64(v)) => IdBuf::of(IdRef::I(*v)),
            Node::Static(StaticNode::U64(v)) => IdBuf::of(IdRef::U(*v)),
            _ => None,
        });
        let trace = self.take_trace(req);
        let (kind_of, target) = match kind {
            PendingKind::Tool(i) => (Kind::Tool, i),
            PendingKind::Resource(_) => (Kind::Resource, 0),
            PendingKind::Prompt(i) => (Kind::Prompt, i),
            PendingKind::Complete(_) => (Kind::Completion, 0),
        };
        let s = &mut self.tickets.slots[slot];
        s.busy = Some(Busy {
            kind: kind_of,
            revision,
            id,
            route: self.caller.route,
            target: target as u32,
            progress,
            last_progress: None,
            log_level: if self.cfg.logging {
                request_log_level(req).or(if revision.is_stateless() { None } else { self.session.log_level })
            } else {
                None
            },
            caps: self.scratch.round.caps,
            digest: self.scratch.round.digest,
            session: self.session.serial,
            session_token: self.session.token,
            no_stream: self.caller.no_stream,
            principal: self.caller.principal,
            trace,
            tasks: self.scratch.round.tasks,
        });
        if self.scratch.round.tasks {
            self.tasks.keep_args(slot as u16, &self.scratch.args);
        }
        self.tickets.in_flight += 1;
        let ticket = Ticket { slot: slot as u16, generation: s.generation, task: false };
        if !revision.is_stateless() && self.session.caps != ClientCapabilities::NONE {
            // The host may ask this client for input: keep what the request needs to come
            // back to it once the client has answered (see `inputs`).
            let kept = match kind {
                PendingKind::Tool(_) | PendingKind::Prompt(_) => Some(&self.scratch.args[..]),
                PendingKind::Resource(_) => req.str_at(req.uri).map(str::as_bytes),
                PendingKind::Complete(_) => None,
            };
            if let Some(args) = kept {
                self.inputs.keep(ticket, self.session.serial, args);
            }
        }
        self.tickets.pending = Some(Pending { kind, ticket, revision, fresh: true });
        Ok(())
    }

    /// `tools/call`: the tool exists, the client declared what it needs, the arguments
    /// fit its input schema; then the host calls it.
    #[inline]
    pub(crate) fn call_tool<'t>(&mut self, req: &Req<'_, 't>, rev: Revision) -> Result<(), PeerError<'t>> {
        let name = req.str_at(req.name).ok_or(PeerError::NotAString("name"))?;
        let ti = (self.catalog.tool_index(name))
            .filter(|&i| self.caller.grant.may_use(ListKind::Tools, i))
            .ok_or(PeerError::UnknownTool(name))?;
        let required = &self.catalog.tools[ti].tool.required_client_capabilities;
        if rev.is_stateless() && !required.is_empty() {
            let n = req.n;
            let declared = req.meta.capabilities;
            if required.iter().any(|c| declared.and_then(|d| json::get(n, d, c)).is_none()) {
                return Err(self.outbox.detail.render(Detailed::MissingCapability { tool: name, required }));
            }
        }
        let offer = crate::mcp::tasks::methods::task_offer(self.catalog, self.prepared, req, rev, ti, name)?;
        self.take_arguments(req)?;
        // Arguments repeat no member name (`jsonrpc::decode` refuses that), so they are
        // decided on the request's tape and passed on as written, without building a value.
        // Invalid ones take the `serde_json::Value` path for its error messages.
        if let Some(v) = &self.catalog.tools[ti].validator
            && !v.passes(req.n, req.arguments)
        {
            let v = v.value();
            let value: serde_json::Value =
                serde_json::from_slice(&self.scratch.args).map_err(|_| PeerError::Internal)?;
            if !v.is_valid(&value) {
                let problems = Problems { validator: v, value: &value };
                if rev == Revision::V2025_06_18 {
                    return Err(self
                        .outbox
                        .detail
                        .render(Detailed::ToolArguments { tool: name, problems: &problems }));
                }
                // 2025-11-25 and later: a tool result the model can read and correct.
                let mut out = core::mem::take(&mut self.outbox.out);
                result_start(&mut out, Reply::Id(req.id));
                out.extend_from_slice(b"\"content\":[{\"type\":\"text\",\"text\":");
                let text = format_args!("Invalid arguments for tool {name}: {problems}");
                let _ = serde::Serializer::collect_str(&mut serde_json::Serializer::new(&mut out), &text);
                out.extend_from_slice(b"}],\"isError\":true");
                result_end(&mut out, &self.prepared.meta, rev, None);
                self.outbox.out = out;
                self.served.tool_error();
                return Ok(());
            }
        }
        self.round_trip(req, rev, Method::CallTool, name)?;
        self.scratch.round.tasks = offer;
        self.hand_over(req, PendingKind::Tool(ti), rev)?;
        if offer && !rev.is_stateless() {
            // 2025-11-25: the client asked for a task; the host gets the call as one.
            self.answers().augment(req);
        }
        Ok(())
    }

    /// `completion/complete`: the prompt or template and the argument exist; then the
    /// host completes it.
    pub(crate) fn complete<'t>(&mut self, req: &Req<'_, 't>, rev: Revision) -> Result<(), PeerError<'t>> {
        let n = req.n;
        let get = |obj: Option<usize>, key: &str| obj.and_then(|o| json::get(n, o, key));
        let reference = req.param("ref");
        let target = match req.str_at(get(reference, "type")) {
            Some("ref/prompt") => {
                let name = req.str_at(get(reference, "name")).ok_or(PeerError::RefNameNotString)?;
                let found = self
                    .catalog
                    .prompt_index(name)
                    .filter(|&i| self.caller.grant.may_use(ListKind::Prompts, i));
                Ok(found.ok_or(PeerError::UnknownPrompt(name))?)
            }
            Some("ref/resource") => {
                let uri = req.str_at(get(reference, "uri")).ok_or(PeerError::RefUriNotString)?;
                let found = (self.catalog.templates.iter().position(|t| t.template.uri_template == uri))
                    .filter(|&i| self.caller.grant.may_use(ListKind::ResourceTemplates, i));
                Err(found.ok_or(PeerError::NoTemplate(uri))?)
            }
            _ => return Err(PeerError::BadRefType),
        };
        let argument = req.param("argument");
        let name = req.str_at(get(argument, "name"));
        let value = req.str_at(get(argument, "value"));
        let (Some(name), Some(value)) = (name, value) else {
            return Err(PeerError::CompletionArgument);
        };
        let known = match target {
            Ok(i) => self.catalog.prompts[i].prompt.arguments.iter().any(|a| a.name == name),
            Err(i) => self.catalog.templates[i].parsed.var_names().iter().any(|v| &**v == name),
        };
        if !known {
            return Err(PeerError::UnknownArgument(name));
        }
        self.scratch.args.clear();
        match get(req.param("context"), "arguments") {
            Some(a) if json::is_object(n, a) => {
                json::write_value(n, a, &mut self.scratch.args);
            }
            _ => self.scratch.args.extend_from_slice(b"{}"),
        }
        self.hand_over(req, PendingKind::Complete(target), rev)?;
        let (arg, val) = &mut self.scratch.completion;
        arg.clear();
        arg.push_str(name);
        val.clear();
        val.push_str(value);
        Ok(())
    }

    /// `resources/read`: the uri is listed or matches a template; then the host reads it.
    pub(crate) fn read_resource<'t>(
        &mut self,
        req: &Req<'_, 't>,
        rev: Revision,
    ) -> Result<(), PeerError<'t>> {
        let uri = req.str_at(req.uri).ok_or(PeerError::NotAString("uri"))?;
        let found = self.catalog.resolve_uri(uri, &mut self.scratch.captures);
        let target = (found.filter(|&t| self.caller.grant.may_read(self.catalog, uri, t)))
            .ok_or(PeerError::ResourceNotFound { uri, stateless: rev.is_stateless() })?;
        self.scratch.args.clear();
        self.round_trip(req, rev, Method::ReadResource, uri)?;
        self.hand_over(req, PendingKind::Resource(target), rev)?;
        if let Some(p) = self.tickets.pending {
            self.tickets.keep_uri(p.ticket.slot as usize, uri);
        }
        self.scratch.uri.clear();
        self.scratch.uri.push_str(uri);
        Ok(())
    }

    /// Reads what a `2026-07-28` request that may take several rounds brings: the input
    /// kinds its client declared, a `requestState` (verified: a forged, foreign or expired
    /// one is `-32602`) and `inputResponses` (each response to a key the state asked for
    /// must fit its request's kind, other keys are dropped; without a state every member
    /// must be an object). `name` and `self.scratch.args` identify the request for the
    /// state's digest.
    fn round_trip<'t>(
        &mut self,
        req: &Req<'_, 't>,
        rev: Revision,
        method: Method,
        name: &str,
    ) -> Result<(), PeerError<'t>> {
        if !rev.is_stateless() {
            // A session-bound client declared what it can answer once, in `initialize`.
            self.scratch.round.caps = self.session.caps;
            return Ok(());
        }
        let n = req.n;
        let Some(p) = req.params else { return Ok(()) };
        if let Some(caps) = req.meta.capabilities {
            self.scratch.round.caps = ClientCapabilities::from_tape(n, caps);
        }
        let key = self.prepared.state_key.as_ref();
        if key.is_some() {
            let principal = self.caller.principal.as_ref();
            self.scratch.round.digest = mrtr::params_digest(method, name, &self.scratch.args, principal);
        }
        let [state_at, responses_at] = json::members(n, p, ["requestState", "inputResponses"]);
        let mut opened = None;
        if let Some(si) = state_at {
            let text = json::str_at(n, si).ok_or(PeerError::RequestStateNotString)?;
            let digest = self.scratch.round.digest;
            let (clock, life) = (self.clock, self.prepared.state_life);
            let o = mrtr::open(key, text, clock, life, method, &digest, &mut self.scratch.state)
                .map_err(|e| PeerError::RequestState(e.message()))?;
            opened = Some(o);
        }
        if let Some(ri) = responses_at {
            let Some(Node::Object { len, .. }) = n.get(ri) else {
                return Err(PeerError::InputResponsesNotObject);
            };
            self.scratch.responses.clear();
            let mut i = ri + 1;
            for _ in 0..*len {
                let (k, v) = (json::str_at(n, i).unwrap_or_default(), i + 1);
                i = v + 1 + json::children(n, v);
                let kind = match &opened {
                    Some(o) => {
                        let state = &self.scratch.state;
                        match o.asked.iter().find(|(_, r)| state.get(r.clone()) == Some(k.as_bytes())) {
                            Some((kind, _)) => Some(*kind),
                            None => continue, // not asked for: ignored
                        }
                    }
                    None => None,
                };
                let fits = match kind {
                    Some(kind) => json::is_object(n, v) && mrtr::response_fits(n, v, kind),
                    None => json::is_object(n, v),
                };
                if !fits {
                    let expected = kind.map_or("an object", |k| k.method());
                    return Err(PeerError::BadInputResponse { key: k, expected });
                }
                let buf = &self.scratch.responses;
                let seen =
                    self.scratch.round.entries.iter().any(|e| buf.get(e.key.clone()) == Some(k.as_bytes()));
                if seen || self.scratch.round.entries.is_full() {
                    continue;
                }
                let buf = &mut self.scratch.responses;
                let ks = buf.len();
                buf.extend_from_slice(k.as_bytes());
                let vs = buf.len();
                json::write_value(n, v, buf);
                let ve = buf.len();
                let _ = self.scratch.round.entries.push(Entry { key: ks..vs, value: vs..ve, error: false });
            }
        }
        self.scratch.round.host_state = opened.map(|o| o.host);
        Ok(())
    }

    /// `prompts/get`: the prompt exists and the arguments fit what it declares; then the
    /// host renders it.
    pub(crate) fn get_prompt<'t>(&mut self, req: &Req<'_, 't>, rev: Revision) -> Result<(), PeerError<'t>> {
        let name = req.str_at(req.name).ok_or(PeerError::NotAString("name"))?;
        let pi = (self.catalog.prompt_index(name))
            .filter(|&i| self.caller.grant.may_use(ListKind::Prompts, i))
            .ok_or(PeerError::PromptNotFound(name))?;
        self.take_arguments(req)?;
        // As for a tool: decided on the tape, the `Value` path only for error messages.
        if !self.catalog.prompts[pi].validator.passes(req.n, req.arguments) {
            let value: serde_json::Value =
                serde_json::from_slice(&self.scratch.args).map_err(|_| PeerError::Internal)?;
            let v = self.catalog.prompts[pi].validator.value();
            if !v.is_valid(&value) {
                let problems = Problems { validator: v, value: &value };
                let d = Detailed::PromptArguments { prompt: name, problems: &problems };
                return Err(self.outbox.detail.render(d));
            }
        }
        self.round_trip(req, rev, Method::GetPrompt, name)?;
        self.hand_over(req, PendingKind::Prompt(pi), rev)
    }
}

/// At most three schema violations, each cut to 200 bytes.
pub(crate) struct Problems<'a> {
    pub(crate) validator: &'a jsonschema::Validator,
    pub(crate) value: &'a serde_json::Value,
}

impl fmt::Display for Problems<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, e) in self.validator.iter_errors(self.value).take(3).enumerate() {
            if i > 0 {
                f.write_str("; ")?;
            }
            let text = e.to_string();
            let mut cut = text.len().min(200);
            while !text.is_char_boundary(cut) {
                cut -= 1;
            }
            write!(f, "{} (at {:?})", &text[..cut], e.instance_path().as_str())?;
        }
        Ok(())
    }
}
