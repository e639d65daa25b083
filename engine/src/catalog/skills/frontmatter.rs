//! The YAML frontmatter of a `SKILL.md`: the block between a first line `---` and the next
//! line `---`, parsed with serde-saphyr into the JSON object a `skills/list` entry carries.
//!
//! The block is found as clients find it (an optional byte-order mark, `---` and a line end,
//! the YAML, a line end, `---` followed only by spaces or tabs up to the line end or the end of
//! the file), so the object the engine serves is the object a client derives from the bytes it
//! reads. Parsing is bounded (nesting, events, alias expansion) and refuses duplicate keys.

use serde_json::{Map, Value};

use super::rules::SkillError;

/// The most parser events one frontmatter may produce (a frontmatter is a few lines; this is
/// far past any real one and bounds a hostile file).
const MAX_EVENTS: usize = 100_000;
/// The deepest nesting a frontmatter may have.
const MAX_DEPTH: usize = 64;

/// The frontmatter block of `text` (without its delimiters), or `None` when `text` does not
/// begin with one.
pub(crate) fn block(text: &str) -> Option<&str> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let rest = text.strip_prefix("---\r\n").or_else(|| text.strip_prefix("---\n"))?;
    // The closing delimiter: a line end, `---`, spaces or tabs, then a line end or the end.
    let mut from = 0;
    while let Some(at) = memchr::memchr(b'\n', &rest.as_bytes()[from..]).map(|i| from + i) {
        let line = &rest[at + 1..];
        if let Some(after) = line.strip_prefix("---") {
            let trail = after.bytes().take_while(|b| *b == b' ' || *b == b'\t').count();
            let after = &after[trail..];
            if after.is_empty() || after.starts_with('\n') || after.starts_with("\r\n") {
                let end = if at > 0 && rest.as_bytes()[at - 1] == b'\r' { at - 1 } else { at };
                return Some(&rest[..end]);
            }
        }
        from = at + 1;
    }
    None
}

/// The frontmatter of a `SKILL.md` as a JSON object, with `name` and `description` checked to
/// be non-empty strings.
pub(crate) fn parse(skill_md: &[u8]) -> Result<Map<String, Value>, SkillError> {
    let text = core::str::from_utf8(skill_md).map_err(|_| SkillError::SkillMdNotUtf8)?;
    let yaml = block(text).ok_or(SkillError::NoFrontmatter)?;
    let mut budget = serde_saphyr::Budget::default();
    budget.max_events = MAX_EVENTS;
    budget.max_depth = MAX_DEPTH;
    budget.max_documents = 1;
    let mut options = serde_saphyr::Options::default();
    options.budget = Some(budget);
    options.duplicate_keys = serde_saphyr::options::DuplicateKeyPolicy::Error;
    let value: Value = serde_saphyr::from_str_with_options(yaml, options)
        .map_err(|e| SkillError::FrontmatterYaml(first_line(&e.to_string())))?;
    let Value::Object(map) = value else { return Err(SkillError::FrontmatterNotMapping) };
    for field in ["name", "description"] {
        match map.get(field) {
            Some(Value::String(s)) if !s.is_empty() => {}
            _ => return Err(SkillError::MissingField(field)),
        }
    }
    Ok(map)
}

fn first_line(message: &str) -> String {
    message.lines().next().unwrap_or(message).chars().take(200).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_block_is_found_as_clients_find_it() {
        assert_eq!(block("---\nname: a\n---\nbody"), Some("name: a"));
        assert_eq!(block("\u{feff}---\r\nname: a\r\n---  \r\nbody"), Some("name: a"));
        assert_eq!(block("---\nname: a\n---"), Some("name: a"));
        assert_eq!(block("---\nname: a\n----\nx: 1\n---\n"), Some("name: a\n----\nx: 1"));
        assert_eq!(block("---\nname: a\n--- x\n"), None);
        assert_eq!(block("# title\n---\nname: a\n---\n"), None);
        assert_eq!(block("---\nname: a\n"), None);
    }

    #[test]
    fn name_and_description_are_required_strings() {
        let ok =
            parse(b"---\nname: pdf\ndescription: Reads PDFs.\nmetadata:\n  tier: 2\n---\n# PDF\n").unwrap();
        assert_eq!(ok["name"], "pdf");
        assert_eq!(ok["metadata"]["tier"], 2);
        assert!(matches!(parse(b"---\ndescription: x\n---\n"), Err(SkillError::MissingField("name"))));
        assert!(matches!(
            parse(b"---\nname: a\ndescription: 3\n---\n"),
            Err(SkillError::MissingField("description"))
        ));
        assert!(matches!(
            parse(b"---\nname: a\ndescription: \"\"\n---\n"),
            Err(SkillError::MissingField("description"))
        ));
        assert!(matches!(parse(b"---\n- a\n- b\n---\n"), Err(SkillError::FrontmatterNotMapping)));
        assert!(matches!(parse(b"no frontmatter"), Err(SkillError::NoFrontmatter)));
        assert!(matches!(parse(b"---\nname: a\nname: b\n---\n"), Err(SkillError::FrontmatterYaml(_))));
        assert!(matches!(parse(b"---\nname: [a\n---\n"), Err(SkillError::FrontmatterYaml(_))));
        assert!(matches!(parse(&[0xff, 0xfe]), Err(SkillError::SkillMdNotUtf8)));
    }

    #[test]
    fn an_alias_bomb_is_refused_not_expanded() {
        let mut y = String::from("---\nname: a\ndescription: b\nx0: &x0 [1, 1, 1, 1, 1, 1, 1, 1, 1, 1]\n");
        for i in 1..12 {
            let p = i - 1;
            y.push_str(&format!(
                "x{i}: &x{i} [*x{p}, *x{p}, *x{p}, *x{p}, *x{p}, *x{p}, *x{p}, *x{p}, *x{p}, *x{p}]\n"
            ));
        }
        y.push_str("---\n");
        assert!(matches!(parse(y.as_bytes()), Err(SkillError::FrontmatterYaml(_))));
    }
}
