//! A skills folder served with one call on the router (`Router::skills_dir`): the fixture's
//! folder, read from disk, listed by `skills/list` and read back byte for byte through the
//! stdio loop; a folder that cannot be loaded is refused by `build` with the reason.

mod common;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use base64::Engine as _;
use common::{Client, META, read};
use mcp_engine::{Config, Engine};
use mcp_io_tokio::Router;

fn folder() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/fixture/skills")
}

#[tokio::test]
async fn a_skills_folder_is_served_with_one_call() {
    let (catalog, handler) = Router::new(()).skills_dir(folder()).build().expect("the fixture's skills load");
    let mut client =
        Client::start_with(Engine::new(Config::new("skills", "1"), catalog), Arc::clone(&handler), 1 << 20);
    client.send(&format!(r#"{{"jsonrpc":"2.0","id":1,"method":"skills/list","params":{{{META}}}}}"#)).await;
    let r = client.recv().await;
    let skills = r["result"]["skills"].as_array().unwrap_or_else(|| panic!("{r}"));
    let mut names: Vec<&str> = skills.iter().filter_map(|s| s["frontmatter"]["name"].as_str()).collect();
    names.sort_unstable();
    assert_eq!(names, ["pdf-forms", "release-notes"], "{r}");
    // Every file each entry lists reads back as the bytes on disk.
    let mut id = 2;
    for skill in skills {
        let root = skill["uri"].as_str().expect("uri").trim_end_matches("SKILL.md").to_owned();
        let name = skill["frontmatter"]["name"].as_str().expect("name");
        for file in skill["resources"].as_array().unwrap_or_else(|| panic!("{skill}")) {
            let uri = file["uri"].as_str().expect("a file's uri");
            let relative = uri.strip_prefix(&root).unwrap_or_else(|| panic!("{uri} under {root}"));
            let on_disk = std::fs::read(folder().join(name).join(relative)).expect("the file on disk");
            assert_eq!(file["size"], on_disk.len(), "{file}");
            client.send(&read(id, uri)).await;
            let r = client.recv().await;
            let c = &r["result"]["contents"][0];
            let bytes = match (c["text"].as_str(), c["blob"].as_str()) {
                (Some(t), None) => t.as_bytes().to_vec(),
                (None, Some(b)) => base64::engine::general_purpose::STANDARD.decode(b).expect("base64"),
                _ => panic!("neither text nor blob: {r}"),
            };
            assert_eq!(bytes, on_disk, "{uri}");
            id += 1;
        }
    }
    assert!(id > 5, "the fixture's skills hold at least four files");
}

#[test]
fn a_folder_that_cannot_be_loaded_is_refused_by_build() {
    let missing = std::env::temp_dir().join("mcp-io-tokio-no-skills-here-7c1e");
    let refused = Router::new(()).skills_dir(&missing).build();
    let Err(e) = refused else { panic!("a missing folder is refused") };
    assert!(e.to_string().contains("mcp-io-tokio-no-skills-here-7c1e"), "{e}");
}
