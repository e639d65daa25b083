//! The core's side of the connectome (feature `connectome`): counting each request it
//! dispatches into the fixed-size [`Observed`] counts, and answering reads of the
//! connectome resources a host put in its catalog with their canonical bytes. The host's
//! handle on it is `observe::Connectome`.

use crate::connectome::{
    self, DeclarationError, Declarations, Diff, Graph, Method as Followed, Observed, Target, Which,
};
use crate::error::PeerError;
use crate::jsonrpc::{Reply, Req, field};
use crate::mcp::Core;
use crate::mcp::lifecycle::Method;
use crate::mcp::tickets::{PendingKind, Ticket};
use crate::mcp::write::{result_end, result_start};
use crate::revision::Revision;
use crate::wire::cursor::ListKind;

/// What the core keeps for the connectome.
pub(crate) struct Connectome {
    pub(crate) observed: Observed,
    /// The host's declared edges (`observe::Connectome::set_declarations`).
    pub(crate) declarations: Declarations,
}

impl Connectome {
    pub(crate) fn new(catalog: &crate::catalog::Catalog) -> Self {
        Self { observed: Observed::new(catalog), declarations: Declarations::new() }
    }
}

impl Core {
    /// Counts the request of `method` just run: its caller, and the definition it was
    /// handed to the host for (a ticket other than `before` is pending). Methods that
    /// reach no definition are not counted.
    #[inline]
    pub(crate) fn observe(&mut self, method: Method, before: Option<Ticket>) {
        let followed = match method {
            Method::CallTool => Followed::CallTool,
            Method::ReadResource => Followed::ReadResource,
            Method::GetPrompt => Followed::GetPrompt,
            Method::Complete => Followed::Complete,
            _ => return,
        };
        let target = self.tickets.pending.filter(|p| Some(p.ticket) != before).and_then(|p| match p.kind {
            PendingKind::Tool(i) => Some(Target::Tool(i)),
            PendingKind::Resource(Some(t)) => Some(Target::Template(t)),
            PendingKind::Resource(None) => {
                self.catalog.resource_index(&self.scratch.uri).map(Target::Resource)
            }
            PendingKind::Prompt(i) => Some(Target::Prompt(i)),
            PendingKind::Complete(Ok(i)) => Some(Target::CompletePrompt(i)),
            PendingKind::Complete(Err(i)) => Some(Target::CompleteTemplate(i)),
        });
        self.connectome.observed.record(self.request.principal.as_ref(), followed, target);
    }

    /// Answers a `resources/read` of a connectome resource the catalog lists (and the
    /// request may read) with its canonical bytes; `None` for any other read, which is
    /// served as usual. The read counts like any other (before the bytes are drawn, so
    /// the observed graph includes it).
    pub(crate) fn connectome_read<'t>(
        &mut self,
        req: &Req<'_, 't>,
        rev: Revision,
    ) -> Option<Result<(), PeerError<'t>>> {
        let uri = req.str_at(req.uri)?;
        let which = Which::of(uri)?;
        let i = self.catalog.resource_index(uri).filter(|&i| self.may_use(ListKind::Resources, i))?;
        let principal = self.request.principal;
        self.connectome.observed.record(
            principal.as_ref(),
            Followed::ReadResource,
            Some(Target::Resource(i)),
        );
        let bytes = match which {
            Which::Declared => self.connectome_declared().canonical_bytes(),
            Which::Observed => self.connectome_observed().canonical_bytes(),
            Which::Diff => self.connectome_diff().canonical_bytes(),
        };
        // Canonical JSON is UTF-8.
        let text = String::from_utf8(bytes).unwrap_or_default();
        let mut out = core::mem::take(&mut self.outbox.out);
        result_start(&mut out, Reply::Id(req.id));
        field(&mut out, "contents");
        let contents = [crate::content::ResourceContents::text(uri, Some("application/json"), &text)];
        crate::content::write_array(&mut out, &contents, crate::content::ResourceContents::write_json);
        result_end(&mut out, &self.prepared.meta, rev, Some(self.cfg.resources_cache));
        self.outbox.out = out;
        Some(Ok(()))
    }

    /// The observed counts.
    pub(crate) fn connectome_counts(&self) -> &Observed {
        &self.connectome.observed
    }

    /// Forgets every observed count.
    pub(crate) fn clear_observed(&mut self) {
        self.connectome.observed.clear();
    }

    /// Sets the host's declared edges, checked against the current catalog.
    pub(crate) fn set_connectome_declarations(&mut self, d: Declarations) -> Result<(), DeclarationError> {
        connectome::declared(&self.catalog, &self.cfg, &d)?;
        self.connectome.declarations = d;
        Ok(())
    }

    /// The declared graph of the current catalog (declarations on what it no longer has
    /// are left out and noted).
    pub(crate) fn connectome_declared(&self) -> Graph {
        connectome::declared_lenient(&self.catalog, &self.cfg, &self.connectome.declarations)
    }

    /// The observed graph.
    pub(crate) fn connectome_observed(&self) -> Graph {
        self.connectome.observed.graph(&self.catalog)
    }

    /// The diff of the two.
    pub(crate) fn connectome_diff(&self) -> Diff {
        connectome::diff(&self.connectome_declared(), &self.connectome_observed())
    }

    /// Counts a read of `uri` that the host reports tool `tool` made.
    pub(crate) fn report_read(&mut self, tool: &str, uri: &str) -> bool {
        self.connectome.observed.record_read(&self.catalog, tool, uri)
    }
}
