//! The skills extension (`io.modelcontextprotocol/skills`, issue 29) through both engines:
//! declared under `capabilities.extensions` with `resources`, `skills/list` paginated with
//! whole entries, `skills/get`, every listed file read back with `resources/read` matching
//! its digest and size (text and binary), `resources/directory/read`, the errors, scopes
//! and catalog replacement.

use base64::Engine as _;
use mcp_engine::Commands;
use mcp_engine::skills::Skill;
use mcp_engine::{Catalog, Config, Engine, Instant, Resource};
use mcp_fixture::skills::skills;
use mcp_tests::peer::{Peer, WIRES};
use mcp_tests::{legacy_open, lines, modern};
use serde_json::{Value, json};
use sha2::Digest as _;

fn catalog() -> Catalog {
    Catalog::builder().resource(Resource::new("test://plain", "plain")).skills(skills()).build().unwrap()
}

fn config(directory: bool) -> Config {
    let mut c = Config::new("skills", "1");
    c.skills_directory_read(directory);
    c
}

fn peer(wire: mcp_tests::peer::Wire, c: Config, catalog: Catalog) -> Peer {
    Peer::new(wire, c, catalog, Box::new(|_| {}))
}

/// Every skill entry of `skills/list`, following `nextCursor`, with the number of pages.
fn list_all(p: &mut Peer) -> (Vec<Value>, usize) {
    let (mut all, mut cursor, mut pages) = (Vec::new(), None::<String>, 0);
    loop {
        let params = cursor.as_ref().map_or(json!({}), |c| json!({ "cursor": c }));
        let (_, v) = p.call(pages + 1, "skills/list", params);
        let r = &v["result"];
        assert!(r["ttlMs"].is_u64() && r["cacheScope"].is_string(), "{v}");
        all.extend(r["skills"].as_array().unwrap_or_else(|| panic!("{v}")).iter().cloned());
        pages += 1;
        match r["nextCursor"].as_str() {
            Some(c) => cursor = Some(c.to_owned()),
            None => return (all, pages),
        }
    }
}

/// The bytes `resources/read` returns for `uri` (text as UTF-8, blobs decoded), its MIME type.
fn read(p: &mut Peer, uri: &str) -> (Vec<u8>, String) {
    let (_, v) = p.call(900, "resources/read", json!({ "uri": uri }));
    let c = &v["result"]["contents"][0];
    assert_eq!(c["uri"], uri, "{v}");
    let bytes = match (c.get("text"), c.get("blob")) {
        (Some(Value::String(t)), None) => t.as_bytes().to_vec(),
        (None, Some(Value::String(b))) => base64::engine::general_purpose::STANDARD.decode(b).unwrap(),
        _ => panic!("neither text nor blob: {v}"),
    };
    (bytes, c["mimeType"].as_str().unwrap_or_default().to_owned())
}

#[test]
fn the_extension_is_declared_with_resources_on_both_eras() {
    for directory in [false, true] {
        let settings = if directory { json!({ "directoryRead": true }) } else { json!({}) };
        let mut e = Engine::new(config(directory), catalog());
        e.handle_input(Instant::ZERO, modern(1, "server/discover", json!({})).as_bytes());
        let v = &lines(e.pending_output())[0];
        let caps = &v["result"]["capabilities"];
        assert_eq!(caps["extensions"]["io.modelcontextprotocol/skills"], settings, "{v}");
        assert!(caps["resources"].is_object(), "{v}");

        let mut e = Engine::new(config(directory), catalog());
        e.handle_input(Instant::ZERO, legacy_open("2025-11-25").as_bytes());
        let v = &lines(e.pending_output())[0];
        assert_eq!(
            v["result"]["capabilities"]["extensions"]["io.modelcontextprotocol/skills"], settings,
            "{v}"
        );
    }
    // Without skills, nothing is declared and the methods do not exist.
    let mut e = Engine::new(
        config(true),
        Catalog::builder().resource(Resource::new("test://a", "a")).build().unwrap(),
    );
    e.handle_input(Instant::ZERO, modern(1, "server/discover", json!({})).as_bytes());
    e.handle_input(Instant::ZERO, modern(2, "skills/list", json!({})).as_bytes());
    let out = lines(e.pending_output());
    assert!(out[0]["result"]["capabilities"].get("extensions").is_none(), "{}", out[0]);
    assert_eq!(out[1]["error"]["code"], -32601, "{}", out[1]);
}

#[test]
fn every_listed_file_reads_back_as_its_digest_and_size() {
    for wire in WIRES {
        let mut p = peer(wire, config(false), catalog());
        let (entries, _) = list_all(&mut p);
        let uris: Vec<&str> = entries.iter().map(|e| e["uri"].as_str().unwrap()).collect();
        assert_eq!(uris, ["skill://pdf-forms/SKILL.md", "skill://release-notes/SKILL.md"], "{wire:?}");
        let mut files = 0;
        for entry in &entries {
            assert_eq!(
                entry["frontmatter"]["name"],
                entry["uri"].as_str().unwrap().split('/').nth(2).unwrap()
            );
            assert!(entry["frontmatter"]["description"].is_string());
            let triples = entry["resources"].as_array().unwrap();
            assert!(triples.iter().any(|t| t["uri"] == entry["uri"]), "SKILL.md is listed: {entry}");
            for t in triples {
                let uri = t["uri"].as_str().unwrap();
                let (bytes, mime) = read(&mut p, uri);
                assert_eq!(t["size"], bytes.len(), "{wire:?} {uri}");
                let hex: String = sha2::Sha256::digest(&bytes).iter().map(|b| format!("{b:02x}")).collect();
                let digest = format!("sha256:{hex}");
                assert_eq!(t["digest"], digest.as_str(), "{wire:?} {uri}");
                if uri.ends_with("SKILL.md") {
                    assert_eq!(mime, "text/markdown");
                }
                if uri.ends_with(".png") {
                    assert_eq!(mime, "image/png");
                    assert_eq!(&bytes[..4], b"\x89PNG");
                }
                files += 1;
            }
        }
        assert_eq!(files, 4, "{wire:?}");
        // `skills/get` is the listed entry, with the cache members and no cursor.
        let (_, v) = p.call(50, "skills/get", json!({ "uri": "skill://pdf-forms/SKILL.md" }));
        assert_eq!(v["result"]["skill"], entries[0], "{wire:?}");
        assert!(v["result"].get("nextCursor").is_none() && v["result"]["ttlMs"].is_u64(), "{v}");
        // The SKILL.md files are resources too: listed with the frontmatter's name and description.
        let (_, v) = p.call(51, "resources/list", json!({}));
        let listed = v["result"]["resources"].as_array().unwrap();
        let md = listed.iter().find(|r| r["uri"] == "skill://pdf-forms/SKILL.md").expect("SKILL.md listed");
        assert_eq!(md["name"], "pdf-forms");
        assert_eq!(md["description"], entries[0]["frontmatter"]["description"]);
        assert_eq!(md["mimeType"], "text/markdown");
        assert!(listed.iter().any(|r| r["uri"] == "test://plain"));
    }
}

#[test]
fn a_page_never_splits_an_entry() {
    let five = || {
        let mut b = Catalog::builder();
        for i in 0..5 {
            let name = format!("s{i}");
            let md = format!("---\nname: {name}\ndescription: skill {i}\n---\n");
            b = b.skill(Skill::new(format!("skill://{name}")).file("SKILL.md", md).file("a.txt", "a"));
        }
        b.build().unwrap()
    };
    let mut c = config(false);
    c.secret_key([7; 32]).page_size(2);
    for wire in WIRES {
        let mut p = peer(wire, c.clone(), five());
        let (entries, pages) = list_all(&mut p);
        assert_eq!(pages, 3, "{wire:?}");
        assert_eq!(entries.len(), 5);
        assert!(entries.iter().all(|e| e["resources"].as_array().map(Vec::len) == Some(2)));
    }
}

#[test]
fn unknown_skills_and_non_directories_are_invalid_params() {
    for wire in WIRES {
        let mut p = peer(wire, config(true), catalog());
        let (_, v) = p.call(1, "skills/get", json!({ "uri": "skill://nope/SKILL.md" }));
        assert_eq!(v["error"]["code"], -32602, "{v}");
        assert_eq!(v["error"]["data"]["uri"], "skill://nope/SKILL.md");
        let (_, v) = p.call(2, "skills/get", json!({}));
        assert_eq!(v["error"]["code"], -32602, "{v}");
        for not_dir in ["skill://pdf-forms/SKILL.md", "skill://nope", "test://plain"] {
            let (_, v) = p.call(3, "resources/directory/read", json!({ "uri": not_dir }));
            assert_eq!(v["error"]["code"], -32602, "{not_dir}: {v}");
        }
        let (_, v) =
            p.call(4, "resources/directory/read", json!({ "uri": "skill://pdf-forms", "cursor": "x" }));
        assert_eq!(v["error"]["code"], -32602, "{v}");
    }
}

#[test]
fn a_directory_lists_its_direct_children() {
    for wire in WIRES {
        let mut p = peer(wire, config(true), catalog());
        let (_, v) = p.call(1, "resources/directory/read", json!({ "uri": "skill://pdf-forms" }));
        let children: Vec<(&str, &str)> = v["result"]["resources"]
            .as_array()
            .unwrap_or_else(|| panic!("{v}"))
            .iter()
            .map(|c| (c["uri"].as_str().unwrap(), c["mimeType"].as_str().unwrap()))
            .collect();
        assert_eq!(
            children,
            [
                ("skill://pdf-forms/assets", "inode/directory"),
                ("skill://pdf-forms/reference", "inode/directory"),
                ("skill://pdf-forms/SKILL.md", "text/markdown"),
            ],
            "{wire:?}"
        );
        assert!(v["result"].get("nextCursor").is_none());
        let (_, v) = p.call(2, "resources/directory/read", json!({ "uri": "skill://pdf-forms/reference/" }));
        assert_eq!(v["result"]["resources"][0]["uri"], "skill://pdf-forms/reference/fields.md", "{v}");
    }
    // Not offered unless turned on.
    let mut p = peer(mcp_tests::peer::Wire::Stdio, config(false), catalog());
    let (_, v) = p.call(1, "resources/directory/read", json!({ "uri": "skill://pdf-forms" }));
    assert_eq!(v["error"]["code"], -32601, "{v}");
}

#[test]
fn a_changed_skill_is_a_resource_list_change() {
    let mut c = config(false);
    c.list_changed(true);
    let mut e = Engine::new(c, catalog());
    let changed = Catalog::builder()
        .resource(Resource::new("test://plain", "plain"))
        .skills(mcp_engine::skills::skills_in(
            "skill://",
            mcp_fixture::skills::SKILL_FILES.iter().map(|(p, b)| {
                let bytes: Vec<u8> = if p.ends_with("fields.md") { b"changed".to_vec() } else { b.to_vec() };
                (*p, bytes)
            }),
        ))
        .build()
        .unwrap();
    let change = e.replace_catalog(changed).unwrap();
    assert!(change.resources && !change.tools && !change.prompts, "{change:?}");
    // Dropping every skill would change the capabilities: refused.
    let none = Catalog::builder().resource(Resource::new("test://plain", "plain")).build().unwrap();
    assert!(e.replace_catalog(none).is_err());
}
