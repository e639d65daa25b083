//! skills: the skills extension. The frontmatter parser and the skill rules as a catalog
//! is built from a fuzzed `SKILL.md`, then `skills/list`, `skills/get`, `resources/read`
//! and `resources/directory/read` with fuzzed uris and cursors against the skills built.

use std::collections::HashMap;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use mcp_engine::skills::Skill;
use mcp_engine::{Catalog, Config, Engine, Event, Instant, Resource, ResourceContents};
use serde_json::{Value, json};
use sha2::Digest as _;

/// The methods a request of the harness picks from.
const METHODS: [&str; 4] = ["skills/list", "skills/get", "resources/read", "resources/directory/read"];

/// A valid skill beside the fuzzed one: a reference file in a folder and a binary file.
fn fixed() -> Skill {
    Skill::new("skill://f/fixed")
        .file("SKILL.md", "---\nname: fixed\ndescription: A fixed skill.\n---\n# Fixed\n")
        .file("reference/a.md", "alpha")
        .file("bin/blob", [0u8, 159, 146, 150, 0])
}

/// Input: two bytes of length, that many bytes of a `SKILL.md` for `skill://f/fz` (with a
/// reference file and a binary file), then requests: a method byte and a parameter up to
/// the next `0xff` (a uri, or a cursor for `skills/list`). A skill the catalog refuses must
/// be refused with an error; one it accepts is listed with its frontmatter name, and every
/// answer is JSON-RPC whose file contents match the digest and size the entry lists.
pub fn skills(data: &[u8]) {
    let Some((len, rest)) = data.split_first_chunk::<2>() else { return };
    let len = usize::from(u16::from_le_bytes(*len)).min(rest.len());
    let (md, requests) = rest.split_at(len);
    let fuzzed =
        Skill::new("skill://f/fz").file("SKILL.md", md).file("ref/x.md", "x").file("y.bin", [0u8, 255]);
    let built =
        Catalog::builder().resource(Resource::new("test://r", "r")).skill(fixed()).skill(fuzzed).build();
    let catalog = match built {
        Ok(c) => {
            assert_eq!(c.skills().len(), 2);
            c
        }
        // Refused at build (a frontmatter or rule it breaks): the fixed skill alone.
        Err(_) => {
            Catalog::builder().resource(Resource::new("test://r", "r")).skill(fixed()).build().expect("valid")
        }
    };
    let mut cfg = Config::new("fuzz", "0");
    cfg.skills_directory_read(requests.first().is_some_and(|b| b & 1 == 1));
    let mut e = Engine::new(cfg, catalog);
    let mut input = String::new();
    for (id, part) in requests.split(|&b| b == 0xff).enumerate().take(16) {
        let Some((&m, param)) = part.split_first() else { continue };
        let method = METHODS[usize::from(m) % METHODS.len()];
        let text = String::from_utf8_lossy(param);
        // Some uris aimed at the skills, the rest as fuzzed.
        let value = match m / 4 % 4 {
            0 => format!("skill://f/fz/{text}"),
            1 => format!("skill://f/fixed/{text}"),
            _ => text.into_owned(),
        };
        let mut params = match method {
            "skills/list" if value.is_empty() => json!({}),
            "skills/list" => json!({ "cursor": value }),
            _ => json!({ "uri": value }),
        };
        params["_meta"] = json!({
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {}
        });
        let line = json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params });
        input.push_str(&line.to_string());
        input.push('\n');
    }
    e.handle_input(Instant::ZERO, input.as_bytes());
    while let Some(ev) = e.poll_event() {
        match ev {
            // A uri that is no skill file is the host's to read.
            Event::ReadResource(r) => {
                let uri = r.uri;
                let _ = r.answer(&[ResourceContents::text(uri, None, "x")]);
            }
            Event::Cancelled(_) => {}
            _ => panic!("an event this harness does not expect"),
        }
    }
    let out = e.pending_output().to_vec();
    let mut answers = Vec::new();
    for line in out.split(|&b| b == b'\n').filter(|l| !l.is_empty()) {
        let v: Value = serde_json::from_slice(line).expect("every output line is JSON");
        assert!(v.is_object() && v["jsonrpc"] == "2.0", "{v}");
        assert!(v.get("result").is_some() != v.get("error").is_some(), "{v}");
        answers.push(v);
    }
    // The files each listed or fetched entry names, with their digest and size.
    let mut triples = HashMap::new();
    for v in &answers {
        let listed = v["result"]["skills"].as_array().into_iter().flatten();
        for entry in listed.chain(v["result"].get("skill")) {
            for f in entry["resources"].as_array().into_iter().flatten() {
                if let (Some(uri), Some(size), Some(digest)) =
                    (f["uri"].as_str(), f["size"].as_u64(), f["digest"].as_str())
                {
                    triples.insert(uri.to_owned(), (size, digest.to_owned()));
                }
            }
        }
    }
    // Every read of one of those files returns exactly the bytes they describe.
    for v in &answers {
        for c in v["result"]["contents"].as_array().into_iter().flatten() {
            let Some((size, digest)) = c["uri"].as_str().and_then(|u| triples.get(u)) else { continue };
            let bytes = match (c.get("text"), c.get("blob")) {
                (Some(Value::String(t)), None) => t.as_bytes().to_vec(),
                (None, Some(Value::String(b))) => STANDARD.decode(b).expect("a blob is base64"),
                _ => panic!("neither text nor blob: {v}"),
            };
            assert_eq!(bytes.len() as u64, *size, "{v}");
            let hex: String = sha2::Sha256::digest(&bytes).iter().map(|b| format!("{b:02x}")).collect();
            assert_eq!(digest.strip_prefix("sha256:"), Some(hex.as_str()), "{v}");
        }
    }
}
