//! The host's catalog: tools, resources, resource templates and prompts.
//!
//! A [`Catalog`] is built once with [`CatalogBuilder`] and is the single source both for
//! what the engine lists and for what it enforces: the schema a tool advertises is the
//! schema its arguments are validated against, a resource is readable only when it is
//! listed or matched by a listed template, and a prompt's arguments are validated
//! against a schema derived from its declared arguments.
//!
//! Building refuses, with a [`CatalogError`] naming the item, every mistake that would
//! otherwise surface as a protocol fault at request time: repeated names or uris, a
//! template outside the supported RFC 6570 subset (`{var}`, `{+var}`, prefix modifiers,
//! one trailing `{?a,b,rest*}`; see `uritemplate`) or with an ambiguous layout, a tool input schema whose
//! root is not `"type": "object"`, a schema that does not compile, and an invalid
//! `x-mcp-header` annotation.
//!
//! Everything the engine writes when it lists the catalog is serialized here, once, per
//! protocol revision, so a `tools/list` page is a concatenation of prepared fragments.
//!
//! This layer owns the declarations (`defs`) and everything decided on them at build time:
//! schema validation over the tape (`schema`), uri templates (`uritemplate`) and the
//! `x-mcp-header` annotations (`xheader`). May use: `wire`, `content` and the leaf
//! modules. May not touch: requests, tickets or transports.

mod defs;
#[cfg(feature = "schemars")]
mod derive;
pub(crate) mod schema;
pub(crate) mod scopes;
pub(crate) mod skills;
#[cfg_attr(not(fuzzing), allow(unreachable_pub))] // exported by `crate::internal` under `cfg(fuzzing)`
pub(crate) mod uritemplate;
pub(crate) mod xheader;

use core::fmt;
use std::sync::Arc;

use serde::Serialize;
use serde_json::Value;

use crate::catalog::schema::SchemaValidator;
use crate::catalog::uritemplate::{Captures, TemplateError, UriTemplate, is_uri_text};
use crate::catalog::xheader::{HeaderParam, XHeaderError, collect_header_params};
use crate::wire::cursor::{LISTS, ListKind};

pub use defs::{
    Icon, Prompt, PromptArgument, Resource, ResourceTemplate, TaskSupport, Tool, ToolAnnotations,
};
#[cfg(feature = "schemars")]
pub use derive::{input_schema_of, output_schema_of};
pub(crate) use skills::{Skill, SkillError};

/// Why a catalog was refused. Every variant names the offending item.
#[derive(Debug)]
#[non_exhaustive]
pub enum CatalogError {
    /// Two tools share a name.
    DuplicateTool(String),
    /// Two resources share a uri.
    DuplicateResource(String),
    /// Two templates share a uri template.
    DuplicateTemplate(String),
    /// Two prompts share a name.
    DuplicatePrompt(String),
    /// A prompt declares the same argument twice.
    DuplicatePromptArgument {
        /// The prompt.
        prompt: String,
        /// The argument.
        argument: String,
    },
    /// A tool name is empty, longer than 128 characters or uses a character outside
    /// `[A-Za-z0-9_.-]`.
    InvalidToolName(String),
    /// A resource uri, template or prompt name is longer than the 1,024 bytes a
    /// pagination cursor can carry.
    KeyTooLong(String),
    /// A resource uri, template, or a name is empty.
    EmptyField {
        /// Which kind of item.
        item: &'static str,
        /// Which field.
        field: &'static str,
    },
    /// A tool input schema whose root is not an object schema with `"type": "object"`.
    InputSchemaNotObject(String),
    /// A schema that `jsonschema` refuses to compile.
    InvalidSchema {
        /// The tool or prompt.
        item: String,
        /// The compiler's message.
        message: String,
    },
    /// An invalid `x-mcp-header` annotation in a tool input schema.
    InvalidHeaderAnnotation {
        /// The tool.
        tool: String,
        /// What is wrong and where.
        error: XHeaderError,
    },
    /// A prompt's arguments derived from a type
    /// (`Prompt::arguments_for`, feature `schemars`) that are not
    /// an object of strings.
    InvalidPromptArguments {
        /// The prompt.
        prompt: String,
        /// What is wrong.
        reason: String,
    },
    /// Scopes a definition requires that are not RFC 6750 scope tokens, an empty or
    /// oversize set (more than 16 scopes, or more than 8 alternative sets), or more than 64
    /// distinct scope names across the catalog.
    InvalidScopes {
        /// The definition (or `catalog` for the count).
        item: String,
        /// What is wrong.
        reason: &'static str,
    },
    /// A skill that breaks a rule of the skills extension (its uri, name, frontmatter,
    /// files or bounds; see [`SkillError`]).
    InvalidSkill {
        /// The skill's uri (its `SKILL.md`).
        skill: String,
        /// What is wrong.
        error: SkillError,
    },
    /// Two skills share a uri.
    DuplicateSkill(String),
    /// A resource template with an unsupported or malformed expression.
    InvalidTemplate {
        /// The template.
        template: String,
        /// What is wrong.
        error: TemplateError,
    },
}

impl fmt::Display for CatalogError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::DuplicateTool(n) => write!(f, "tool `{n}` is declared twice"),
            Self::DuplicateResource(u) => write!(f, "resource `{u}` is declared twice"),
            Self::DuplicateTemplate(t) => write!(f, "resource template `{t}` is declared twice"),
            Self::DuplicatePrompt(n) => write!(f, "prompt `{n}` is declared twice"),
            Self::DuplicatePromptArgument { prompt, argument } => {
                write!(f, "prompt `{prompt}` declares argument `{argument}` twice")
            }
            Self::InvalidToolName(n) => {
                write!(f, "tool name `{n}` is not 1 to 128 characters of [A-Za-z0-9_.-]")
            }
            Self::EmptyField { item, field } => write!(f, "a {item} has an empty `{field}`"),
            Self::KeyTooLong(k) => {
                let head: String = k.chars().take(40).collect();
                write!(f, "`{head}...` is longer than {} bytes", crate::wire::cursor::MAX_CURSOR_KEY)
            }
            Self::InputSchemaNotObject(n) => {
                write!(f, "the input schema of tool `{n}` must be a JSON object with \"type\": \"object\"")
            }
            Self::InvalidSchema { item, message } => {
                write!(f, "the schema of `{item}` does not compile: {message}")
            }
            Self::InvalidHeaderAnnotation { tool, error } => write!(f, "tool `{tool}`: {error}"),
            Self::InvalidPromptArguments { prompt, reason } => write!(f, "prompt `{prompt}`: {reason}"),
            Self::InvalidTemplate { template, error } => {
                write!(f, "resource template `{template}`: {error}")
            }
            Self::InvalidScopes { item, reason } => write!(f, "`{item}`: {reason}"),
            Self::InvalidSkill { skill, error } => write!(f, "skill `{skill}`: {error}"),
            Self::DuplicateSkill(u) => write!(f, "skill `{u}` is declared twice"),
        }
    }
}

impl std::error::Error for CatalogError {}

/// Serialized list entries: one for revisions with icons, one for `2025-06-18`.
#[derive(Debug)]
pub(crate) struct Fragments {
    pub(crate) full: Box<str>,
    pub(crate) legacy_0618: Box<str>,
}

impl Fragments {
    fn of<T: Serialize>(full: &T, without_icons: &T) -> Self {
        Self {
            // Serializing these plain structs into a String cannot fail.
            full: serde_json::to_string(full).unwrap_or_default().into_boxed_str(),
            legacy_0618: serde_json::to_string(without_icons).unwrap_or_default().into_boxed_str(),
        }
    }
    pub(crate) fn for_revision(&self, icons: bool) -> &str {
        if icons { &self.full } else { &self.legacy_0618 }
    }
}

pub(crate) struct ToolEntry {
    pub(crate) tool: Tool,
    pub(crate) validator: Option<SchemaValidator>,
    pub(crate) output_validator: Option<jsonschema::Validator>,
    #[allow(dead_code)] // read by the HTTP header matcher
    pub(crate) header_params: Vec<HeaderParam>,
    pub(crate) wire: Fragments,
}

pub(crate) struct ResourceEntry {
    pub(crate) resource: Resource,
    pub(crate) wire: Fragments,
}

pub(crate) struct TemplateEntry {
    pub(crate) template: ResourceTemplate,
    pub(crate) parsed: UriTemplate,
    pub(crate) wire: Fragments,
}

pub(crate) struct PromptEntry {
    pub(crate) prompt: Prompt,
    pub(crate) validator: SchemaValidator,
    pub(crate) wire: Fragments,
}

/// A validated catalog. Build it with [`Catalog::builder`].
///
/// Cheap to share: a clone is a handful of reference-count increments, with no copy of
/// a schema, a compiled validator or a prepared list entry. One catalog can serve a stdio
/// engine and an HTTP engine at once:
///
/// ```
/// use mcp_engine::http::{AllowedOrigins, Authorization, HttpConfig, HttpEngine};
/// use mcp_engine::{Catalog, Commands, Config, Engine, Tool};
///
/// let catalog = Catalog::builder().tool(Tool::new("now")).build()?;
/// let config = Config::new("clock", "1.0");
/// let stdio = Engine::new(config.clone(), catalog.clone());
/// let http = HttpConfig::new(AllowedOrigins::Any, Authorization::Everyone);
/// let http = HttpEngine::new(config, http, catalog);
/// assert_eq!(stdio.catalog().tools().count(), http.catalog().tools().count());
/// # Ok::<(), mcp_engine::CatalogError>(())
/// ```
#[derive(Clone)]
pub struct Catalog {
    pub(crate) tools: Arc<[ToolEntry]>,
    pub(crate) resources: Arc<[ResourceEntry]>,
    pub(crate) templates: Arc<[TemplateEntry]>,
    pub(crate) prompts: Arc<[PromptEntry]>,
    pub(crate) skills: Arc<[skills::SkillEntry]>,
    /// Tools by name, prompts by name, resources by uri, and the list digests.
    index: Arc<Index>,
}

/// The lookups of a [`Catalog`], shared between its clones.
struct Index {
    tool_names: KeyIndex,
    prompt_names: KeyIndex,
    resource_uris: KeyIndex,
    /// Skills by the uri of their `SKILL.md`; their files and folders by uri, each as
    /// (skill, position) in `skill_paths`.
    skill_uris: KeyIndex,
    skill_files: KeyIndex,
    skill_dirs: KeyIndex,
    skill_paths: Vec<(u32, u32, bool)>,
    /// A SHA-256 digest of each list as it is served (by `ListKind::index`): list cursors
    /// are bound to it, so a cursor of a list whose contents changed is refused.
    list_digests: [[u8; 32]; LISTS],
}

/// The positions of a list's items by key (a name or a uri), hashed at build, so that a
/// request finds its item with one hash and, nearly always, one comparison. (A binary
/// search compared names that share long prefixes about seven times a call.) Looking up
/// allocates nothing.
#[derive(Default)]
struct KeyIndex {
    table: hashbrown::HashTable<u32>,
    hasher: hashbrown::DefaultHashBuilder,
}

impl KeyIndex {
    fn new<'a>(keys: impl ExactSizeIterator<Item = &'a str>) -> Self {
        let mut index = Self::default();
        index.table.reserve(keys.len(), |_| 0);
        let mut hashes = Vec::with_capacity(keys.len());
        for (i, key) in keys.enumerate() {
            hashes.push(core::hash::BuildHasher::hash_one(&index.hasher, key));
            // The keys are unique (the builder refused duplicates).
            let at = u32::try_from(i).unwrap_or(u32::MAX);
            index.table.insert_unique(hashes[i], at, |&j| hashes[j as usize]);
        }
        index
    }

    /// This index with every position moved up by `by` (its keys then sit at
    /// `by..` of a shared table).
    fn shifted(mut self, by: usize) -> Self {
        let by = u32::try_from(by).unwrap_or(u32::MAX);
        for at in self.table.iter_mut() {
            *at += by;
        }
        self
    }

    /// The position of `key`, given the key of each position.
    fn find<'a>(&self, key: &str, key_at: impl Fn(usize) -> &'a str) -> Option<usize> {
        let hash = core::hash::BuildHasher::hash_one(&self.hasher, key);
        self.table.find(hash, |&i| key_at(i as usize) == key).map(|&i| i as usize)
    }
}

impl fmt::Debug for Catalog {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Catalog")
            .field("tools", &self.tools.len())
            .field("resources", &self.resources.len())
            .field("templates", &self.templates.len())
            .field("prompts", &self.prompts.len())
            .field("skills", &self.skills.len())
            .finish()
    }
}

impl Catalog {
    /// Starts an empty catalog.
    pub fn builder() -> CatalogBuilder {
        CatalogBuilder::default()
    }

    /// An empty catalog: the server offers nothing but discovery.
    pub fn empty() -> Self {
        Self::assemble(Vec::new(), Vec::new(), Vec::new(), Vec::new(), Vec::new())
    }

    /// The tools, sorted by name.
    pub fn tools(&self) -> impl ExactSizeIterator<Item = &Tool> {
        self.tools.iter().map(|e| &e.tool)
    }
    /// The resources, sorted by uri.
    pub fn resources(&self) -> impl ExactSizeIterator<Item = &Resource> {
        self.resources.iter().map(|e| &e.resource)
    }
    /// The resource templates, sorted by uri template.
    pub fn templates(&self) -> impl ExactSizeIterator<Item = &ResourceTemplate> {
        self.templates.iter().map(|e| &e.template)
    }
    /// The prompts, sorted by name.
    pub fn prompts(&self) -> impl ExactSizeIterator<Item = &Prompt> {
        self.prompts.iter().map(|e| &e.prompt)
    }
    /// The skills, sorted by uri.
    pub fn skills(&self) -> impl ExactSizeIterator<Item = &Skill> {
        self.skills.iter().map(|e| &e.skill)
    }

    /// The variables of the template `uri_template`, in order of appearance, each with
    /// whether a matching uri always defines it; `None` when the catalog has no such
    /// template. Path variables (`{id}`, `{+path}`) are always defined, query variables
    /// (`{?q}`) only when the uri has them, and an exploded query variable (`{?rest*}`)
    /// is not listed: what it collects is in
    /// [`TemplateVars::pairs`](crate::event::TemplateVars::pairs).
    ///
    /// ```
    /// use mcp_engine::{Catalog, ResourceTemplate};
    ///
    /// let catalog = Catalog::builder()
    ///     .template(ResourceTemplate::new("note://{id}{?rev,rest*}", "note"))
    ///     .build()?;
    /// let vars: Vec<_> = catalog.template_variables("note://{id}{?rev,rest*}").unwrap().collect();
    /// assert_eq!(vars, [("id", true), ("rev", false)]);
    /// assert!(catalog.template_variables("note://{other}").is_none());
    /// # Ok::<(), mcp_engine::CatalogError>(())
    /// ```
    pub fn template_variables(&self, uri_template: &str) -> Option<impl Iterator<Item = (&str, bool)>> {
        let entry = self.templates.iter().find(|t| t.template.uri_template == uri_template)?;
        Some(entry.parsed.named_variables())
    }

    /// The tool called `name`.
    pub fn tool(&self, name: &str) -> Option<&Tool> {
        self.tool_index(name).map(|i| &self.tools[i].tool)
    }

    /// The `Mcp-Param-*` headers that a tool's input schema declares with `x-mcp-header`.
    pub fn tool_header_params(&self, name: &str) -> Option<&[HeaderParam]> {
        self.tool_index(name).map(|i| &*self.tools[i].header_params)
    }

    pub(crate) fn tool_index(&self, name: &str) -> Option<usize> {
        self.index.tool_names.find(name, |i| &self.tools[i].tool.name)
    }
    pub(crate) fn resource_index(&self, uri: &str) -> Option<usize> {
        self.index.resource_uris.find(uri, |i| &self.resources[i].resource.uri)
    }
    pub(crate) fn prompt_index(&self, name: &str) -> Option<usize> {
        self.index.prompt_names.find(name, |i| &self.prompts[i].prompt.name)
    }
    /// The position of the skill whose `SKILL.md` is `uri`.
    pub(crate) fn skill_index(&self, uri: &str) -> Option<usize> {
        self.index.skill_uris.find(uri, |i| &self.skills[i].uri)
    }
    /// The skill file at `uri`: the skill's position and the file.
    pub(crate) fn skill_file(&self, uri: &str) -> Option<(usize, &skills::SkillFile)> {
        let paths = &self.index.skill_paths;
        let at = self.index.skill_files.find(uri, |i| {
            let (s, f, _) = paths[i];
            &self.skills[s as usize].files[f as usize].uri
        })?;
        let (s, f, _) = paths[at];
        Some((s as usize, &self.skills[s as usize].files[f as usize]))
    }
    /// The dynamic skill `uri` is a file of (its `SKILL.md` or a file under its folder),
    /// whose files the host reads.
    pub(crate) fn dynamic_skill_of(&self, uri: &str) -> Option<usize> {
        self.skills.iter().position(|s| {
            s.skill.dynamic
                && uri
                    .strip_prefix(&*s.skill.root)
                    .is_some_and(|rest| rest.len() > 1 && rest.starts_with('/'))
        })
    }
    /// The skill folder at `uri` (without a trailing `/`): the skill's position and the folder.
    pub(crate) fn skill_dir(&self, uri: &str) -> Option<(usize, &skills::SkillDir)> {
        let uri = uri.strip_suffix('/').unwrap_or(uri);
        let paths = &self.index.skill_paths;
        let at = self.index.skill_dirs.find(uri, |i| {
            let (s, d, _) = paths[i];
            &self.skills[s as usize].dirs[d as usize].uri
        })?;
        let (s, d, _) = paths[at];
        Some((s as usize, &self.skills[s as usize].dirs[d as usize]))
    }

    /// Whether `tools` is advertised (the catalog has at least one tool).
    pub fn has_tools(&self) -> bool {
        !self.tools.is_empty()
    }
    /// Whether `resources` is advertised (at least one resource, template or skill: a
    /// skill's files are resources).
    pub fn has_resources(&self) -> bool {
        !self.resources.is_empty() || !self.templates.is_empty() || !self.skills.is_empty()
    }
    /// Whether `prompts` is advertised (at least one prompt).
    pub fn has_prompts(&self) -> bool {
        !self.prompts.is_empty()
    }
    /// Whether the skills extension is advertised (at least one skill).
    pub fn has_skills(&self) -> bool {
        !self.skills.is_empty()
    }

    /// Resolves a uri to a readable target: a listed resource, or the first listed
    /// template (in uri-template order) that matches, with its decoded captures (a
    /// template whose rules a value breaks, say a `..`, does not match).
    pub(crate) fn resolve_uri(&self, uri: &str, captures: &mut Captures) -> Option<Option<usize>> {
        if !is_uri_text(uri) {
            return None;
        }
        if self.index.resource_uris.find(uri, |i| &self.resources[i].resource.uri).is_some()
            || self.dynamic_skill_of(uri).is_some()
        {
            captures.clear();
            return Some(None);
        }
        self.templates.iter().position(|t| t.parsed.matches(uri, captures)).map(Some)
    }

    /// The number of items and the sort key of item `i` of a list.
    pub(crate) fn list_len(&self, kind: ListKind) -> usize {
        match kind {
            ListKind::Tools => self.tools.len(),
            // The skills' `SKILL.md` files are resources too, listed after the declared ones.
            ListKind::Resources => self.resources.len() + self.skills.len(),
            ListKind::ResourceTemplates => self.templates.len(),
            ListKind::Prompts => self.prompts.len(),
            ListKind::Skills => self.skills.len(),
        }
    }
    pub(crate) fn list_key(&self, kind: ListKind, i: usize) -> &str {
        match kind {
            ListKind::Tools => &self.tools[i].tool.name,
            ListKind::Resources => match self.resources.get(i) {
                Some(r) => &r.resource.uri,
                None => &self.skills[i - self.resources.len()].uri,
            },
            ListKind::ResourceTemplates => &self.templates[i].template.uri_template,
            ListKind::Prompts => &self.prompts[i].prompt.name,
            ListKind::Skills => &self.skills[i].uri,
        }
    }
    pub(crate) fn list_fragment(&self, kind: ListKind, i: usize, icons: bool) -> &str {
        match kind {
            ListKind::Tools => self.tools[i].wire.for_revision(icons),
            ListKind::Resources => match self.resources.get(i) {
                Some(r) => r.wire.for_revision(icons),
                None => &self.skills[i - self.resources.len()].listed,
            },
            ListKind::ResourceTemplates => self.templates[i].wire.for_revision(icons),
            ListKind::Prompts => self.prompts[i].wire.for_revision(icons),
            ListKind::Skills => &self.skills[i].wire,
        }
    }
    /// The digest of each list as it is served, by `ListKind::index`.
    pub(crate) fn list_digests(&self) -> &[[u8; 32]; LISTS] {
        &self.index.list_digests
    }
    /// The catalog of these sorted, checked entries: their indexes, and the digest of each
    /// list ([`Self::list_digests`]: each list's length, then each item's key and fragment
    /// as the latest revision serves it, length-prefixed).
    fn assemble(
        tools: Vec<ToolEntry>,
        resources: Vec<ResourceEntry>,
        templates: Vec<TemplateEntry>,
        prompts: Vec<PromptEntry>,
        skills: Vec<skills::SkillEntry>,
    ) -> Self {
        use sha2::Digest as _;
        // The skills' files and folders, each as (skill, position, is a folder); the file
        // index covers the first run, the folder index the second.
        let files: Vec<(u32, u32, bool)> = skills
            .iter()
            .enumerate()
            .flat_map(|(s, e)| (0..e.files.len()).map(move |f| (s as u32, f as u32, false)))
            .collect();
        let dirs: Vec<(u32, u32, bool)> = skills
            .iter()
            .enumerate()
            .flat_map(|(s, e)| (0..e.dirs.len()).map(move |d| (s as u32, d as u32, true)))
            .collect();
        let skill_files =
            KeyIndex::new(files.iter().map(|&(s, f, _)| &*skills[s as usize].files[f as usize].uri));
        let skill_dirs =
            KeyIndex::new(dirs.iter().map(|&(s, d, _)| &*skills[s as usize].dirs[d as usize].uri));
        // One table: the folder index's positions are shifted past the files.
        let mut skill_paths = files;
        let shift = skill_paths.len();
        skill_paths.extend(dirs);
        let index = Index {
            tool_names: KeyIndex::new(tools.iter().map(|e| e.tool.name.as_str())),
            prompt_names: KeyIndex::new(prompts.iter().map(|e| e.prompt.name.as_str())),
            resource_uris: KeyIndex::new(resources.iter().map(|e| e.resource.uri.as_str())),
            skill_uris: KeyIndex::new(skills.iter().map(|e| &*e.uri)),
            skill_files,
            skill_dirs: skill_dirs.shifted(shift),
            skill_paths,
            list_digests: [[0; 32]; LISTS],
        };
        let mut this = Self {
            tools: tools.into(),
            resources: resources.into(),
            templates: templates.into(),
            prompts: prompts.into(),
            skills: skills.into(),
            index: Arc::new(index),
        };
        let mut digests = [[0; 32]; LISTS];
        for kind in ListKind::ALL {
            let mut h = sha2::Sha256::new();
            let n = this.list_len(kind);
            h.update((n as u64).to_le_bytes());
            for i in 0..n {
                for part in [this.list_key(kind, i), this.list_fragment(kind, i, true)] {
                    h.update((part.len() as u64).to_le_bytes());
                    h.update(part.as_bytes());
                }
            }
            digests[kind.index()] = h.finalize().into();
        }
        // The index is not shared yet, so this always finds it.
        if let Some(index) = Arc::get_mut(&mut this.index) {
            index.list_digests = digests;
        }
        this
    }
}

/// Collects catalog items; [`CatalogBuilder::build`] validates them.
#[derive(Debug, Default)]
pub struct CatalogBuilder {
    tools: Vec<Tool>,
    resources: Vec<Resource>,
    templates: Vec<ResourceTemplate>,
    prompts: Vec<Prompt>,
    skills: Vec<Skill>,
    /// `format` is an annotation only ([`CatalogBuilder::validate_formats`]`(false)`).
    formats_annotate: bool,
}

impl CatalogBuilder {
    /// Whether the `format` keyword of the tools' input and output schemas is checked
    /// (default: yes). On, every format jsonschema knows is asserted, whatever the
    /// schema's draft: `date`, `date-time`, `time`, `duration`, `email`, `idn-email`,
    /// `hostname`, `idn-hostname`, `ipv4`, `ipv6`, `uri`, `uri-reference`, `iri`,
    /// `iri-reference`, `uri-template`, `uuid`, `json-pointer`,
    /// `relative-json-pointer`, `regex` (as each draft defines them; `uuid` and `duration`
    /// from 2019-09). Arguments that do not match are refused as any other schema
    /// violation, before the handler runs (`"due": "not-a-date"` for `"format": "date"`: a
    /// tool result with `isError: true` saying `"not-a-date" is not a "date"`, or, under
    /// `2025-06-18`, `-32602` with the same message); structured output that does not
    /// match its output schema is answered as a failed call, as any output mismatch. A
    /// format it does not know (schemars writes `uint32`,
    /// `int64`, `double`...) is an annotation either way. Off, every format is an
    /// annotation, as JSON Schema 2019-09 and later say by default: for a host that
    /// advertises formats as hints and checks them itself.
    ///
    /// ```
    /// use mcp_engine::{Catalog, Tool};
    /// use serde_json::json;
    ///
    /// let due = json!({"type": "object", "properties": {"due": {"type": "string", "format": "date"}}});
    /// let checked = Catalog::builder().tool(Tool::new("plan").input_schema(due.clone())).build()?;
    /// let hints_only = Catalog::builder().validate_formats(false).tool(Tool::new("plan").input_schema(due)).build()?;
    /// # let _ = (checked, hints_only);
    /// # Ok::<(), mcp_engine::CatalogError>(())
    /// ```
    #[must_use]
    pub fn validate_formats(mut self, on: bool) -> Self {
        self.formats_annotate = !on;
        self
    }

    /// Adds a tool.
    #[must_use]
    pub fn tool(mut self, tool: Tool) -> Self {
        self.tools.push(tool);
        self
    }
    /// Adds a resource.
    #[must_use]
    pub fn resource(mut self, resource: Resource) -> Self {
        self.resources.push(resource);
        self
    }
    /// Adds a resource template.
    #[must_use]
    pub fn template(mut self, template: ResourceTemplate) -> Self {
        self.templates.push(template);
        self
    }
    /// Adds a prompt.
    #[must_use]
    pub fn prompt(mut self, prompt: Prompt) -> Self {
        self.prompts.push(prompt);
        self
    }
    /// Adds a skill (the skills extension: its `SKILL.md` frontmatter is parsed, its files
    /// digested and its rules checked when the catalog is built).
    #[must_use]
    pub fn skill(mut self, skill: Skill) -> Self {
        self.skills.push(skill);
        self
    }
    /// Adds skills ([`skills_in`](crate::skills::skills_in) makes them from a tree of files).
    #[must_use]
    pub fn skills(mut self, skills: impl IntoIterator<Item = Skill>) -> Self {
        self.skills.extend(skills);
        self
    }

    /// Validates everything, compiles every schema once, sorts each list by its key and
    /// prepares the wire form of every item.
    pub fn build(self) -> Result<Catalog, CatalogError> {
        let formats = !self.formats_annotate;
        let mut tools = Vec::with_capacity(self.tools.len());
        for tool in self.tools {
            tools.push(build_tool(tool, formats)?);
        }
        tools.sort_by(|a, b| a.tool.name.cmp(&b.tool.name));
        if let Some(w) = tools.windows(2).find(|w| w[0].tool.name == w[1].tool.name) {
            return Err(CatalogError::DuplicateTool(w[0].tool.name.clone()));
        }

        let mut resources = Vec::with_capacity(self.resources.len());
        for resource in self.resources {
            non_empty("resource", "uri", &resource.uri)?;
            non_empty("resource", "name", &resource.name)?;
            let wire = Fragments::of(
                &ResourceWire { r: &resource, icons: true },
                &ResourceWire { r: &resource, icons: false },
            );
            resources.push(ResourceEntry { resource, wire });
        }
        resources.sort_by(|a, b| a.resource.uri.cmp(&b.resource.uri));
        if let Some(w) = resources.windows(2).find(|w| w[0].resource.uri == w[1].resource.uri) {
            return Err(CatalogError::DuplicateResource(w[0].resource.uri.clone()));
        }

        let mut templates = Vec::with_capacity(self.templates.len());
        for template in self.templates {
            non_empty("resource template", "uriTemplate", &template.uri_template)?;
            non_empty("resource template", "name", &template.name)?;
            let parsed = UriTemplate::parse(&template.uri_template).map_err(|error| {
                CatalogError::InvalidTemplate { template: template.uri_template.clone(), error }
            })?;
            let wire = Fragments::of(
                &TemplateWire { t: &template, icons: true },
                &TemplateWire { t: &template, icons: false },
            );
            templates.push(TemplateEntry { template, parsed, wire });
        }
        templates.sort_by(|a, b| a.template.uri_template.cmp(&b.template.uri_template));
        if let Some(w) =
            templates.windows(2).find(|w| w[0].template.uri_template == w[1].template.uri_template)
        {
            return Err(CatalogError::DuplicateTemplate(w[0].template.uri_template.clone()));
        }

        let mut prompts = Vec::with_capacity(self.prompts.len());
        for prompt in self.prompts {
            non_empty("prompt", "name", &prompt.name)?;
            let mut names: Vec<&str> = prompt.arguments.iter().map(|a| a.name.as_str()).collect();
            names.sort_unstable();
            if let Some(w) = names.windows(2).find(|w| w[0] == w[1]) {
                return Err(CatalogError::DuplicatePromptArgument {
                    prompt: prompt.name.clone(),
                    argument: w[0].to_owned(),
                });
            }
            let validator = compile_input(&prompt.name, &prompt.argument_schema(), formats)?;
            let wire = Fragments::of(
                &PromptWire { p: &prompt, icons: true },
                &PromptWire { p: &prompt, icons: false },
            );
            prompts.push(PromptEntry { prompt, validator, wire });
        }
        prompts.sort_by(|a, b| a.prompt.name.cmp(&b.prompt.name));
        if let Some(w) = prompts.windows(2).find(|w| w[0].prompt.name == w[1].prompt.name) {
            return Err(CatalogError::DuplicatePrompt(w[0].prompt.name.clone()));
        }

        let mut skills = Vec::with_capacity(self.skills.len());
        for skill in self.skills {
            let uri = skill.uri();
            non_empty("skill", "uri", &uri)?;
            let entry =
                skills::prepare(skill).map_err(|error| CatalogError::InvalidSkill { skill: uri, error })?;
            skills.push(entry);
        }
        skills.sort_by(|a, b| a.uri.cmp(&b.uri));
        if let Some(w) = skills.windows(2).find(|w| w[0].uri == w[1].uri) {
            return Err(CatalogError::DuplicateSkill(w[0].uri.to_string()));
        }
        // A skill's file is a resource: it may not also be declared as one.
        let declared = |uri: &str| resources.binary_search_by(|r| r.resource.uri.as_str().cmp(uri)).is_ok();
        if let Some(f) = skills.iter().flat_map(|s| &s.files).find(|f| declared(&f.uri)) {
            return Err(CatalogError::DuplicateResource(f.uri.to_string()));
        }

        let catalog = Catalog::assemble(tools, resources, templates, prompts, skills);
        scopes::check(&catalog)?;
        Ok(catalog)
    }
}

fn non_empty(item: &'static str, field: &'static str, value: &str) -> Result<(), CatalogError> {
    if value.is_empty() {
        return Err(CatalogError::EmptyField { item, field });
    }
    if value.len() > crate::wire::cursor::MAX_CURSOR_KEY {
        return Err(CatalogError::KeyTooLong(value.to_owned()));
    }
    Ok(())
}

fn valid_tool_name(name: &str) -> bool {
    (1..=128).contains(&name.len())
        && name.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.'))
}

/// Compiles an output schema (`formats`: asserted, else annotations).
fn compile(item: &str, schema: &Value, formats: bool) -> Result<jsonschema::Validator, CatalogError> {
    jsonschema::options()
        .should_validate_formats(formats)
        .build(schema)
        .map_err(|e| CatalogError::InvalidSchema { item: item.to_owned(), message: e.to_string() })
}

/// Compiles a schema that request arguments are validated against: for the request's tape
/// (validity, allocation-free) and for `serde_json::Value` (error messages).
fn compile_input(item: &str, schema: &Value, formats: bool) -> Result<SchemaValidator, CatalogError> {
    SchemaValidator::new(schema, formats)
        .map_err(|e| CatalogError::InvalidSchema { item: item.to_owned(), message: e.to_string() })
}

fn build_tool(tool: Tool, formats: bool) -> Result<ToolEntry, CatalogError> {
    if !valid_tool_name(&tool.name) {
        return Err(CatalogError::InvalidToolName(tool.name));
    }
    let (validator, header_params) = match &tool.input_schema {
        None => (None, Vec::new()),
        Some(schema) => {
            let is_object_schema =
                schema.as_object().is_some_and(|o| o.get("type").and_then(Value::as_str) == Some("object"));
            if !is_object_schema {
                return Err(CatalogError::InputSchemaNotObject(tool.name));
            }
            let headers = collect_header_params(schema)
                .map_err(|error| CatalogError::InvalidHeaderAnnotation { tool: tool.name.clone(), error })?;
            (Some(compile_input(&tool.name, schema, formats)?), headers)
        }
    };
    let output_validator = match &tool.output_schema {
        Some(schema) => Some(compile(&tool.name, schema, formats)?),
        None => None,
    };
    let wire = Fragments::of(&ToolWire { t: &tool, icons: true }, &ToolWire { t: &tool, icons: false });
    Ok(ToolEntry { tool, validator, output_validator, header_params, wire })
}

fn no_icons(icons: &&[Icon]) -> bool {
    icons.is_empty()
}

static OPEN_OBJECT: std::sync::LazyLock<Value> =
    std::sync::LazyLock::new(|| serde_json::json!({ "type": "object" }));

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ToolWireRepr<'a> {
    name: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    title: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    description: Option<&'a str>,
    input_schema: &'a Value,
    #[serde(skip_serializing_if = "Option::is_none")]
    output_schema: Option<&'a Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    annotations: Option<&'a ToolAnnotations>,
    #[serde(skip_serializing_if = "no_icons")]
    icons: &'a [Icon],
}

struct ToolWire<'a> {
    t: &'a Tool,
    icons: bool,
}

impl Serialize for ToolWire<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let t = self.t;
        ToolWireRepr {
            name: &t.name,
            title: t.title.as_deref(),
            description: t.description.as_deref(),
            input_schema: t.input_schema.as_ref().unwrap_or(&OPEN_OBJECT),
            output_schema: t.output_schema.as_ref(),
            annotations: t.annotations.as_ref(),
            icons: if self.icons { &t.icons } else { &[] },
        }
        .serialize(s)
    }
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ResourceWireRepr<'a> {
    uri: &'a str,
    name: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    title: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    description: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    mime_type: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    size: Option<u64>,
    #[serde(skip_serializing_if = "no_icons")]
    icons: &'a [Icon],
}

struct ResourceWire<'a> {
    r: &'a Resource,
    icons: bool,
}

impl Serialize for ResourceWire<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let r = self.r;
        ResourceWireRepr {
            uri: &r.uri,
            name: &r.name,
            title: r.title.as_deref(),
            description: r.description.as_deref(),
            mime_type: r.mime_type.as_deref(),
            size: r.size,
            icons: if self.icons { &r.icons } else { &[] },
        }
        .serialize(s)
    }
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct TemplateWireRepr<'a> {
    uri_template: &'a str,
    name: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    title: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    description: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    mime_type: Option<&'a str>,
    #[serde(skip_serializing_if = "no_icons")]
    icons: &'a [Icon],
}

struct TemplateWire<'a> {
    t: &'a ResourceTemplate,
    icons: bool,
}

impl Serialize for TemplateWire<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let t = self.t;
        TemplateWireRepr {
            uri_template: &t.uri_template,
            name: &t.name,
            title: t.title.as_deref(),
            description: t.description.as_deref(),
            mime_type: t.mime_type.as_deref(),
            icons: if self.icons { &t.icons } else { &[] },
        }
        .serialize(s)
    }
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct PromptWireRepr<'a> {
    name: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    title: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    description: Option<&'a str>,
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    arguments: &'a [PromptArgument],
    #[serde(skip_serializing_if = "no_icons")]
    icons: &'a [Icon],
}

struct PromptWire<'a> {
    p: &'a Prompt,
    icons: bool,
}

impl Serialize for PromptWire<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let p = self.p;
        PromptWireRepr {
            name: &p.name,
            title: p.title.as_deref(),
            description: p.description.as_deref(),
            arguments: &p.arguments,
            icons: if self.icons { &p.icons } else { &[] },
        }
        .serialize(s)
    }
}

#[cfg(test)]
mod tests;
