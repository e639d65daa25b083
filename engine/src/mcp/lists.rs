//! The four list methods: pages of the prepared fragments, and the sealed cursors
//! (`wire::cursor`) that name the next page, bound to the caller (the principal), the
//! page size, the revision and the list's contents, and expiring (`Config::cursor_ttl`).
//! Over a protected endpoint, a page holds only the definitions the caller's scopes reach.

use crate::catalog::Catalog;
use crate::config::Config;
use crate::error::PeerError;
use crate::jsonrpc::{Reply, Req, field};
use crate::mcp::prepared::Prepared;
use crate::mcp::scopes::Grant;
use crate::mcp::write::{result_end, result_start};
use crate::revision::Revision;
use crate::time::Clock;
use crate::wire::cursor::{self, Binding, CursorError, ListKind};
use crate::wire::json;

/// What a list page is written from: the parts the list methods use, and who asks.
pub(crate) struct Lister<'a> {
    pub(crate) catalog: &'a Catalog,
    /// Its cursor key seals and opens cursors.
    pub(crate) prepared: &'a mut Prepared,
    pub(crate) cfg: &'a Config,
    /// What the caller was granted (a page holds only what it may use).
    pub(crate) grant: Grant<'a>,
    /// The caller (cursors are bound to it).
    pub(crate) principal: Option<&'a [u8; 32]>,
    pub(crate) clock: Clock,
}

impl Lister<'_> {
    /// `execution.taskSupport` of tool `i` under `2025-11-25` with tasks on, unless it is
    /// `forbidden` (the default a client assumes when it is absent).
    fn task_support(&self, kind: ListKind, i: usize, rev: Revision) -> Option<&'static str> {
        if kind != ListKind::Tools || rev != Revision::V2025_11_25 || !self.prepared.features.tasks {
            return None;
        }
        match self.catalog.tools.get(i)?.tool.task_support {
            crate::catalog::TaskSupport::Optional => Some("optional"),
            crate::catalog::TaskSupport::Required => Some("required"),
            crate::catalog::TaskSupport::Forbidden => None,
        }
    }

    /// A list page: from the offset the cursor names, `page_size` items (the whole list
    /// without a secret key), and the cursor of the next page.
    pub(crate) fn list<'t>(
        self,
        out: &mut Vec<u8>,
        req: &Req<'_, 't>,
        rev: Revision,
        kind: ListKind,
    ) -> Result<(), PeerError<'t>> {
        let reply = Reply::Id(req.id);
        let cursor = match req.param("cursor") {
            None => None,
            Some(ci) => Some(json::str_at(req.n, ci).ok_or(PeerError::CursorNotString)?),
        };
        let len = self.catalog.list_len(kind);
        let page_size = u32::try_from(self.cfg.page_size).unwrap_or(u32::MAX);
        let binding = Binding {
            page_size,
            revision: rev.as_str(),
            principal: self.principal,
            lists: self.catalog.list_digests(),
        };
        let (clock, life) = (self.clock, self.prepared.cursor_life);
        let start = match cursor {
            None => 0,
            // Without a key no cursor was issued: any cursor is not ours.
            Some(c) => match self
                .prepared
                .cursor_key
                .as_mut()
                .map(|k| cursor::open(k, kind, c, &binding, clock, life))
            {
                Some(Ok(offset)) if (offset as usize) <= len => offset as usize,
                Some(Err(CursorError::OtherList(other))) => {
                    return Err(PeerError::CursorOtherList { cursor: other.method(), list: kind.method() });
                }
                Some(Err(CursorError::Expired)) => return Err(PeerError::CursorExpired),
                _ => return Err(PeerError::InvalidCursor),
            },
        };
        // Without a key, no cursor can be sealed: the list is served whole.
        let page = if self.prepared.cursor_key.is_some() { self.cfg.page_size } else { len };
        result_start(out, reply);
        field(
            out,
            match kind {
                ListKind::Tools => "tools",
                ListKind::Resources => "resources",
                ListKind::ResourceTemplates => "resourceTemplates",
                ListKind::Prompts => "prompts",
                ListKind::Skills => "skills",
            },
        );
        out.push(b'[');
        // Definitions the caller may not use are left out (they do not exist for it); a
        // page still holds `page` items when there are that many further on, and ends
        // past any hidden ones, so that it never names a next page that would be empty.
        let (mut end, mut shown) = (start, 0);
        while end < len && shown < page {
            if self.grant.may_use(kind, end) {
                if shown > 0 {
                    out.push(b',');
                }
                let fragment = self.catalog.list_fragment(kind, end, rev.has_icons()).as_bytes();
                match self.task_support(kind, end, rev) {
                    // 2025-11-25's tasks utility: the tool says whether it runs as a task.
                    Some(support) => {
                        out.extend_from_slice(fragment.strip_suffix(b"}").unwrap_or(fragment));
                        out.extend_from_slice(b",\"execution\":{\"taskSupport\":\"");
                        out.extend_from_slice(support.as_bytes());
                        out.extend_from_slice(b"\"}}");
                    }
                    None => out.extend_from_slice(fragment),
                }
                shown += 1;
            }
            end += 1;
        }
        while end < len && !self.grant.may_use(kind, end) {
            end += 1;
        }
        out.push(b']');
        if let Some(key) = self.prepared.cursor_key.as_mut().filter(|_| end < len) {
            let mut buf = [0u8; cursor::CURSOR_LEN];
            let offset = u32::try_from(end).unwrap_or(u32::MAX);
            let next = cursor::seal(key, kind, offset, clock.expiry(life), &binding, &mut buf);
            field(out, "nextCursor");
            // Base64url: nothing to escape.
            out.push(b'"');
            out.extend_from_slice(next.as_bytes());
            out.push(b'"');
        }
        let mut cache = match kind {
            ListKind::Tools => self.cfg.tools_cache,
            ListKind::Resources | ListKind::ResourceTemplates | ListKind::Skills => self.cfg.resources_cache,
            ListKind::Prompts => self.cfg.prompts_cache,
        };
        // A page that depends on the caller's scopes is the caller's alone.
        if self.grant.scoped_list(kind) {
            cache.scope = crate::config::CacheScope::Private;
        }
        result_end(out, &self.prepared.meta, rev, Some(cache));
        Ok(())
    }
}
