use super::*;

const PDF_MD: &str = "---\nname: pdf\ndescription: Fill PDF forms.\nmetadata:\n  tier: 2\n---\n# PDF\n";

fn pdf() -> Skill {
    Skill::new("skill://acme/pdf")
        .file("reference/forms.md", "Field types")
        .file(SKILL_MD, PDF_MD)
        .file("logo.png", b"\x89PNG\r\n\x1a\n\0\0")
        .file("notes/with space.txt", "a\0b")
}

#[test]
fn a_skill_is_digested_and_its_wire_forms_prepared() {
    let e = prepare(pdf()).unwrap();
    assert_eq!(&*e.uri, "skill://acme/pdf/SKILL.md");
    assert_eq!(e.name(), "pdf");
    let paths: Vec<&str> = e.files.iter().map(|f| &*f.path).collect();
    assert_eq!(paths, ["SKILL.md", "logo.png", "notes/with space.txt", "reference/forms.md"]);
    let md = &e.files[0];
    assert_eq!(md.size, PDF_MD.len() as u64);
    let expected = format!("sha256:{}", hex(&sha2::Sha256::digest(PDF_MD.as_bytes())));
    assert_eq!(&*md.digest, expected);
    assert_eq!(md.digest.len(), "sha256:".len() + 64);
    assert_eq!(md.mime_type, "text/markdown");
    assert_eq!(&*e.files[2].uri, "skill://acme/pdf/notes/with%20space.txt");

    let entry: Value = serde_json::from_str(&e.wire).unwrap();
    assert_eq!(entry["uri"], "skill://acme/pdf/SKILL.md");
    assert_eq!(entry["frontmatter"]["name"], "pdf");
    assert_eq!(entry["frontmatter"]["metadata"]["tier"], 2);
    let triples = entry["resources"].as_array().unwrap();
    assert_eq!(triples.len(), 4);
    assert_eq!(triples[0]["uri"], "skill://acme/pdf/SKILL.md");
    assert_eq!(triples[0]["digest"], expected.as_str());
    assert!(entry.get("_meta").is_none());

    let listed: Value = serde_json::from_str(&e.listed).unwrap();
    assert_eq!(listed["name"], "pdf");
    assert_eq!(listed["description"], "Fill PDF forms.");
    assert_eq!(listed["mimeType"], "text/markdown");
}

#[test]
fn contents_are_the_digested_bytes_as_text_or_blob() {
    let e = prepare(pdf()).unwrap();
    for f in &e.files {
        let c: Value = serde_json::from_str(f.contents.as_deref().unwrap()).unwrap();
        assert_eq!(c["uri"], &*f.uri);
        let bytes = match (c.get("text"), c.get("blob")) {
            (Some(Value::String(t)), None) => t.as_bytes().to_vec(),
            (None, Some(Value::String(b))) => base64::engine::general_purpose::STANDARD.decode(b).unwrap(),
            other => panic!("{other:?}"),
        };
        assert_eq!(bytes.len() as u64, f.size);
        assert_eq!(format!("sha256:{}", hex(&sha2::Sha256::digest(&bytes))), &*f.digest);
    }
    // Binary and text with NUL are blobs.
    assert!(e.files[1].contents.as_deref().unwrap().contains("\"blob\""));
    assert!(e.files[2].contents.as_deref().unwrap().contains("\"blob\""));
    assert!(e.files[3].contents.as_deref().unwrap().contains("\"text\""));
}

#[test]
fn folders_list_their_direct_children() {
    let e = prepare(pdf()).unwrap();
    let root = e.dir("skill://acme/pdf/").unwrap();
    let children: Value = serde_json::from_str(&format!("[{}]", root.children)).unwrap();
    let uris: Vec<(&str, &str)> = children
        .as_array()
        .unwrap()
        .iter()
        .map(|c| (c["uri"].as_str().unwrap(), c["mimeType"].as_str().unwrap()))
        .collect();
    assert_eq!(
        uris,
        [
            ("skill://acme/pdf/notes", DIRECTORY_MIME),
            ("skill://acme/pdf/reference", DIRECTORY_MIME),
            ("skill://acme/pdf/SKILL.md", "text/markdown"),
            ("skill://acme/pdf/logo.png", "image/png"),
        ]
    );
    let reference = e.dir("skill://acme/pdf/reference").unwrap();
    assert!(reference.children.contains("forms.md"));
    assert!(e.dir("skill://acme/pdf/SKILL.md").is_none());
    assert!(e.file("skill://acme/pdf/reference/forms.md").is_some());
}

#[test]
fn a_dynamic_skill_lists_dynamic_and_prepares_no_contents() {
    let e = prepare(Skill::dynamic("skill://pdf", PDF_MD)).unwrap();
    let entry: Value = serde_json::from_str(&e.wire).unwrap();
    assert_eq!(entry["resources"], "dynamic");
    assert!(e.files.iter().all(|f| f.contents.is_none()));
    assert!(e.dirs.is_empty());
}

#[test]
fn every_rule_is_refused_at_build() {
    let md = |name: &str| format!("---\nname: {name}\ndescription: d\n---\n");
    let with = |root: &str, md: String| Skill::new(root).file(SKILL_MD, md);
    assert_eq!(prepare(with("pdf", md("pdf"))).unwrap_err(), SkillError::InvalidUri);
    assert_eq!(prepare(with("skill://", md("pdf"))).unwrap_err(), SkillError::InvalidUri);
    assert_eq!(prepare(with("skill://a//pdf", md("pdf"))).unwrap_err(), SkillError::InvalidUri);
    assert_eq!(prepare(with("skill://a b/pdf", md("pdf"))).unwrap_err(), SkillError::InvalidUri);
    for bad in ["Pdf", "-pdf", "pdf-", "p--df", "p_df", &"a".repeat(65)] {
        assert_eq!(
            prepare(with(&format!("skill://{bad}"), md(bad))).unwrap_err(),
            SkillError::InvalidName,
            "{bad}"
        );
    }
    assert!(prepare(with(&format!("skill://{}", "a".repeat(64)), md(&"a".repeat(64)))).is_ok());
    assert_eq!(
        prepare(with("skill://pdf", md("docx"))).unwrap_err(),
        SkillError::NameMismatch { segment: "pdf".into(), name: "docx".into() }
    );
    assert_eq!(prepare(Skill::new("skill://pdf").file("x.md", "x")).unwrap_err(), SkillError::NoSkillMd);
    for bad in ["/abs", "a//b", "./a", "a/../b", "a\\b", "a\nb", ""] {
        let s = with("skill://pdf", md("pdf")).file(bad, "x");
        assert_eq!(prepare(s).unwrap_err(), SkillError::InvalidPath(bad.into()), "{bad:?}");
    }
    let twice = with("skill://pdf", md("pdf")).file("a", "1").file("a", "2");
    assert_eq!(prepare(twice).unwrap_err(), SkillError::DuplicatePath("a".into()));
    let mut many = with("skill://pdf", md("pdf"));
    for i in 0..MAX_FILES {
        many = many.file(format!("f{i}"), "x");
    }
    assert_eq!(prepare(many).unwrap_err(), SkillError::TooManyFiles(MAX_FILES + 1));
    let big = with("skill://pdf", md("pdf")).file("big", vec![b'x'; MAX_BYTES as usize]);
    assert!(matches!(prepare(big).unwrap_err(), SkillError::TooLarge(_)));
    let reserved = "---\nname: pdf\ndescription: d\nmetadata:\n  io.modelcontextprotocol/x: 1\n---\n";
    assert_eq!(
        prepare(with("skill://pdf", reserved.into())).unwrap_err(),
        SkillError::ReservedKey("io.modelcontextprotocol/x".into())
    );
    let bare_meta = with("skill://pdf", md("pdf")).meta("tier", Value::from(1));
    assert_eq!(prepare(bare_meta).unwrap_err(), SkillError::ReservedKey("tier".into()));
    let meta = with("skill://pdf", md("pdf")).meta("io.modelcontextprotocol.skills/tier", Value::from(1));
    let e = prepare(meta).unwrap();
    assert!(e.wire.contains("\"_meta\":{\"io.modelcontextprotocol.skills/tier\":1}"));
}

#[test]
fn a_tree_becomes_skills_nested_ones_on_their_own() {
    let skills = skills_in(
        "skill://acme",
        [
            ("pdf/SKILL.md", PDF_MD.as_bytes()),
            ("pdf/reference/forms.md", b"f".as_slice()),
            ("pdf/.git/config", b"hidden".as_slice()),
            ("pdf/tables/SKILL.md", b"---\nname: tables\ndescription: t\n---\n".as_slice()),
            ("pdf/tables/x.csv", b"a,b".as_slice()),
            ("loose.txt", b"outside every skill".as_slice()),
        ],
    );
    let roots: Vec<&str> = skills.iter().map(|s| s.root.as_str()).collect();
    assert_eq!(roots, ["skill://acme/pdf", "skill://acme/pdf/tables"]);
    let files = |i: usize| -> Vec<&str> { skills[i].files.iter().map(|f| f.0.as_str()).collect() };
    assert_eq!(files(0), ["SKILL.md", "reference/forms.md"]);
    assert_eq!(files(1), ["SKILL.md", "x.csv"]);
    for s in skills {
        prepare(s).unwrap();
    }
    let one = skills_in("skill://pdf", [("SKILL.md", PDF_MD.as_bytes())]);
    assert_eq!(one[0].uri(), "skill://pdf/SKILL.md");
}

#[test]
fn the_catalog_finds_skills_their_files_and_folders() {
    use crate::catalog::{Catalog, CatalogError, Resource};
    let other = Skill::new("skill://docx")
        .file(SKILL_MD, "---\nname: docx\ndescription: Word.\n---\n")
        .file("a/b.md", "b");
    let c = Catalog::builder().skill(pdf()).skill(other.clone()).build().unwrap();
    assert!(c.has_skills());
    let uris: Vec<String> = c.skills().map(Skill::uri).collect();
    assert_eq!(uris, ["skill://acme/pdf/SKILL.md", "skill://docx/SKILL.md"]);
    assert_eq!(c.skill_index("skill://docx/SKILL.md"), Some(1));
    assert_eq!(c.skill_index("skill://docx"), None);
    let (s, f) = c.skill_file("skill://acme/pdf/reference/forms.md").unwrap();
    assert_eq!((s, &*f.path), (0, "reference/forms.md"));
    assert_eq!(c.skill_file("skill://docx/a/b.md").map(|(s, f)| (s, &*f.path)), Some((1, "a/b.md")));
    assert!(c.skill_file("skill://docx/a").is_none());
    let (s, d) = c.skill_dir("skill://docx/a/").unwrap();
    assert_eq!((s, &*d.uri), (1, "skill://docx/a"));
    assert_eq!(c.skill_dir("skill://acme/pdf").map(|(s, _)| s), Some(0));
    assert!(c.skill_dir("skill://acme/pdf/SKILL.md").is_none());

    let twice = Catalog::builder().skill(other.clone()).skill(other.clone()).build().unwrap_err();
    assert!(matches!(twice, CatalogError::DuplicateSkill(u) if u == "skill://docx/SKILL.md"));
    let clash = Catalog::builder().skill(other).resource(Resource::new("skill://docx/a/b.md", "b")).build();
    assert!(matches!(clash.unwrap_err(), CatalogError::DuplicateResource(u) if u == "skill://docx/a/b.md"));
    let bad = Catalog::builder().skill(Skill::new("skill://x").file(SKILL_MD, "no frontmatter")).build();
    let err = bad.unwrap_err();
    assert!(matches!(&err, CatalogError::InvalidSkill { error: SkillError::NoFrontmatter, .. }));
    assert_eq!(
        err.to_string(),
        "skill `skill://x/SKILL.md`: SKILL.md does not begin with a --- frontmatter block"
    );
}
