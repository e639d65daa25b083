//! The skills extension's methods (`io.modelcontextprotocol/skills`), answered by the engine
//! from what the catalog prepared: `skills/get`, `resources/read` of a file of a skill whose
//! files the host gave (a dynamic skill's files are read by the host, as any resource), and
//! `resources/directory/read`. `skills/list` is a list like the others (`lists`). Nothing
//! here allocates: every answer is prepared bytes copied into the output.

use crate::catalog::Catalog;
use crate::config::{CachePolicy, CacheScope, Config};
use crate::error::PeerError;
use crate::jsonrpc::{Reply, Req, field};
use crate::mcp::scopes::Grant;
use crate::mcp::write::{result_end, result_start};
use crate::revision::Revision;
use crate::wire::cursor::ListKind;
use crate::wire::json;

/// What a skill answer is written from.
pub(crate) struct SkillAnswers<'a> {
    pub(crate) catalog: &'a Catalog,
    pub(crate) cfg: &'a Config,
    /// The server's `_meta` members for `2026-07-28` results.
    pub(crate) meta: &'a [u8],
    /// What the caller was granted (a skill it may not use does not exist for it).
    pub(crate) grant: Grant<'a>,
    /// The output the answer is written to.
    pub(crate) out: &'a mut Vec<u8>,
}

impl SkillAnswers<'_> {
    /// The caching hint of a skill answer: the resources' policy, private when a skill in
    /// the catalog requires scopes (the answer then depends on the caller).
    fn cache(&self) -> CachePolicy {
        let mut cache = self.cfg.resources_cache;
        if self.grant.scoped_list(ListKind::Skills) {
            cache.scope = CacheScope::Private;
        }
        cache
    }

    /// The skill at position `i`, if the caller may use it.
    fn visible(&self, i: usize) -> bool {
        self.grant.may_use(ListKind::Skills, i)
    }

    /// `skills/get`: the entry of the skill whose `SKILL.md` is `uri` (as `skills/list`
    /// lists it), `-32602` when no skill the caller may use has that uri.
    pub(crate) fn get<'t>(self, req: &Req<'_, 't>, rev: Revision) -> Result<(), PeerError<'t>> {
        let uri =
            req.param("uri").and_then(|u| json::str_at(req.n, u)).ok_or(PeerError::NotAString("uri"))?;
        let i = self
            .catalog
            .skill_index(uri)
            .filter(|&i| self.visible(i))
            .ok_or(PeerError::SkillNotFound(uri))?;
        let cache = self.cache();
        let out = self.out;
        result_start(out, Reply::Id(req.id));
        field(out, "skill");
        out.extend_from_slice(self.catalog.skills[i].wire.as_bytes());
        result_end(out, self.meta, rev, Some(cache));
        Ok(())
    }

    /// `resources/read` of a file of a skill whose files the engine holds: answered here
    /// with the bytes its digest was computed over. `None` when `uri` is no such file (a
    /// dynamic skill's file, or not a skill's: the read goes on as any resource read).
    pub(crate) fn read<'t>(self, req: &Req<'_, 't>, rev: Revision) -> Option<Result<(), PeerError<'t>>> {
        let uri = req.str_at(req.uri)?;
        let (skill, file) = self.catalog.skill_file(uri)?;
        let contents = file.contents.as_deref()?;
        if !self.visible(skill) {
            return Some(Err(PeerError::ResourceNotFound { uri, stateless: rev.is_stateless() }));
        }
        let cache = self.cache();
        let out = self.out;
        result_start(out, Reply::Id(req.id));
        field(out, "contents");
        out.push(b'[');
        out.extend_from_slice(contents.as_bytes());
        out.push(b']');
        result_end(out, self.meta, rev, Some(cache));
        Some(Ok(()))
    }

    /// `resources/directory/read`: the direct children of a skill's folder (or subfolder),
    /// in one page, shaped as `resources/list`; `-32602` for anything that is not such a
    /// folder the caller may use (a file, a dynamic skill, another uri).
    pub(crate) fn directory<'t>(self, req: &Req<'_, 't>, rev: Revision) -> Result<(), PeerError<'t>> {
        let uri =
            req.param("uri").and_then(|u| json::str_at(req.n, u)).ok_or(PeerError::NotAString("uri"))?;
        if let Some(c) = req.param("cursor") {
            // One page, so no cursor was ever issued: any cursor is not ours.
            json::str_at(req.n, c).ok_or(PeerError::CursorNotString)?;
            return Err(PeerError::InvalidCursor);
        }
        let (skill, dir) = self.catalog.skill_dir(uri).ok_or(PeerError::NotADirectory(uri))?;
        if !self.visible(skill) {
            return Err(PeerError::NotADirectory(uri));
        }
        let cache = self.cache();
        let out = self.out;
        result_start(out, Reply::Id(req.id));
        field(out, "resources");
        out.push(b'[');
        out.extend_from_slice(dir.children.as_bytes());
        out.push(b']');
        result_end(out, self.meta, rev, Some(cache));
        Ok(())
    }
}
