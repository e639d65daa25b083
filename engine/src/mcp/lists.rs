//! The four list methods.

use crate::error::PeerError;
use crate::jsonrpc::{Reply, Req, field};
use crate::mcp::Core;
use crate::mcp::answers::{result_end, result_start};
use crate::revision::Revision;
use crate::wire::cursor::{self, CursorError, ListKind};
use crate::wire::json;

impl Core {
    /// A list page: from the item after the cursor's key, `page_size` items, and the
    /// cursor of the next page.
    pub(crate) fn list<'t>(
        &mut self,
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
        let start = match cursor {
            None => 0,
            Some(c) => {
                let mut buf = [0u8; cursor::MAX_CURSOR_KEY + 8];
                match cursor::decode(kind, c, &mut buf) {
                    Ok(key) => self.catalog.list_after(kind, key),
                    Err(CursorError::OtherList(other)) => {
                        return Err(PeerError::CursorOtherList {
                            cursor: other.method(),
                            list: kind.method(),
                        });
                    }
                    Err(CursorError::Invalid) => return Err(PeerError::InvalidCursor),
                }
            }
        };
        let end = (start + self.cfg.page_size).min(len);
        let mut out = core::mem::take(&mut self.outbox.out);
        result_start(&mut out, reply);
        field(
            &mut out,
            match kind {
                ListKind::Tools => "tools",
                ListKind::Resources => "resources",
                ListKind::ResourceTemplates => "resourceTemplates",
                ListKind::Prompts => "prompts",
            },
        );
        out.push(b'[');
        for i in start..end {
            if i > start {
                out.push(b',');
            }
            out.extend_from_slice(self.catalog.list_fragment(kind, i, rev.has_icons()).as_bytes());
        }
        out.push(b']');
        if end < len && end > 0 {
            let mut buf = [0u8; cursor::MAX_CURSOR_LEN];
            if let Some(next) = cursor::encode(kind, self.catalog.list_key(kind, end - 1), &mut buf) {
                field(&mut out, "nextCursor");
                json::write_str(&mut out, next);
            }
        }
        let cache = match kind {
            ListKind::Tools => self.cfg.tools_cache,
            ListKind::Resources | ListKind::ResourceTemplates => self.cfg.resources_cache,
            ListKind::Prompts => self.cfg.prompts_cache,
        };
        result_end(&mut out, &self.prepared, rev, Some(cache));
        self.outbox.out = out;
        Ok(())
    }
}
