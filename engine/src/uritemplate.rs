//! Placeholder; replaced by the real module.
pub(crate) const MAX_TEMPLATE_VARS: usize = 16;
pub(crate) type Captures = heapless::Vec<(u8, u32, u32), MAX_TEMPLATE_VARS>;
#[derive(Debug, Clone)]
pub(crate) struct UriTemplate { names: Vec<Box<str>>, raw: Box<str> }
/// Template error.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum TemplateError { /// bad
Bad }
impl core::fmt::Display for TemplateError { fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result { f.write_str("bad template") } }
impl std::error::Error for TemplateError {}
impl UriTemplate {
    pub(crate) fn parse(template: &str) -> Result<Self, TemplateError> { Ok(Self { names: vec![], raw: template.into() }) }
    pub(crate) fn var_names(&self) -> &[Box<str>] { &self.names }
    pub(crate) fn matches(&self, uri: &str, captures: &mut Captures) -> bool { captures.clear(); uri == &*self.raw }
}
