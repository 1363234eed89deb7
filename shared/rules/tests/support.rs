//! The support matrix against the CRDs: every spec field of the kinds it describes has an entry,
//! every entry names a field that exists, and `docs/support.md` is what the matrix generates.

use std::path::PathBuf;

use capz_rules::support::{Kind, Support, markdown};
use serde_json::Value;

/// The package directory, read when the test runs: the build directory is shared between clones,
/// so the path compiled into a reused test binary may name another clone.
fn manifest_dir() -> PathBuf {
    std::env::var_os("CARGO_MANIFEST_DIR").map_or_else(|| env!("CARGO_MANIFEST_DIR").into(), Into::into)
}

fn plural(kind: Kind) -> String {
    let name = kind.name().to_ascii_lowercase();
    match name.strip_suffix('y') {
        Some(stem) => format!("{stem}ies"),
        None => format!("{name}s"),
    }
}

/// The v1beta1 schema of the kind's fields: its `spec`, or a template's `spec.template.spec`.
fn spec_schema(kind: Kind) -> Result<Value, String> {
    let file = manifest_dir().join(format!(
        "../../deploy/crds/infrastructure.cluster.x-k8s.io_{}.yaml",
        plural(kind)
    ));
    let text = std::fs::read_to_string(&file).map_err(|err| format!("{}: {err}", file.display()))?;
    let crd: Value = serde_saphyr::from_str(&text).map_err(|err| format!("{}: {err}", file.display()))?;
    let version = crd["spec"]["versions"]
        .as_array()
        .and_then(|versions| versions.iter().find(|version| version["name"] == "v1beta1"))
        .ok_or_else(|| format!("{}: no v1beta1", file.display()))?;
    let mut schema = &version["schema"]["openAPIV3Schema"]["properties"]["spec"];
    if kind.spec_root() != "spec" {
        schema = &schema["properties"]["template"]["properties"]["spec"];
    }
    Ok(schema.clone())
}

/// Every field path below `schema` (`[]` for list elements, `{}` for map values), with whether it
/// is a leaf (nothing described below it).
fn fields(schema: &Value, at: &str, out: &mut Vec<(String, bool)>) {
    let join = |name: &str| {
        if at.is_empty() {
            name.to_owned()
        } else {
            format!("{at}.{name}")
        }
    };
    let Some(properties) = schema["properties"].as_object() else {
        return;
    };
    for (name, child) in properties {
        let mut path = join(name);
        let mut inner = child;
        // Lists and maps of objects describe their elements' fields.
        while let Some(element) = inner.get("items").or_else(|| inner.get("additionalProperties")) {
            if element.get("properties").is_none() {
                break;
            }
            path.push_str(if inner.get("items").is_some() { "[]" } else { "{}" });
            inner = element;
        }
        let leaf = inner["properties"]
            .as_object()
            .is_none_or(serde_json::Map::is_empty);
        out.push((path.clone(), leaf));
        fields(inner, &path, out);
    }
}

/// Whether `entry` is `path` or a field above it.
fn covers(entry: &str, path: &str) -> bool {
    path == entry
        || path
            .strip_prefix(entry)
            .is_some_and(|rest| rest.starts_with('.') || rest.starts_with("[]") || rest.starts_with("{}"))
}

#[test]
fn every_spec_field_has_an_entry_and_every_entry_a_field() -> Result<(), String> {
    let mut uncovered = Vec::new();
    let mut unknown = Vec::new();
    for kind in Kind::ALL {
        let mut found = Vec::new();
        fields(&spec_schema(kind)?, "", &mut found);
        assert!(!found.is_empty(), "{}: no fields read", kind.name());
        for (path, leaf) in &found {
            if *leaf && !kind.entries().iter().any(|entry| covers(&entry.field, path)) {
                uncovered.push(format!("{} {}.{path}", kind.name(), kind.spec_root()));
            }
        }
        // Templates leave out what a cluster's controllers write; the kind itself has it all.
        if kind.fields_of() == kind {
            for entry in kind.entries() {
                let named = |path: &String| {
                    [String::new(), "[]".to_owned(), "{}".to_owned()]
                        .iter()
                        .any(|suffix| *path == format!("{}{suffix}", entry.field))
                };
                if !found.iter().any(|(path, _)| named(path)) {
                    unknown.push(format!("{} {}", kind.name(), entry.path(kind)));
                }
            }
        }
    }
    assert!(
        uncovered.is_empty(),
        "spec fields without an entry in shared/rules/src/support.rs: {uncovered:#?}"
    );
    assert!(unknown.is_empty(), "entries naming no CRD field: {unknown:#?}");
    Ok(())
}

#[test]
fn entries_are_unique_and_a_deeper_one_says_something_else() {
    for kind in Kind::ALL.into_iter().filter(|kind| kind.fields_of() == *kind) {
        let entries = kind.entries();
        for (index, entry) in entries.iter().enumerate() {
            assert!(
                entries[..index].iter().all(|other| other.field != entry.field),
                "{} lists {} twice",
                kind.name(),
                entry.field
            );
            let parent = entries
                .iter()
                .filter(|other| other.field != entry.field && covers(&other.field, &entry.field))
                .max_by_key(|other| other.field.len());
            if let Some(parent) = parent {
                assert_ne!(
                    matches!(parent.support, Support::Acted),
                    matches!(entry.support, Support::Acted),
                    "{} {} repeats what {} says",
                    kind.name(),
                    entry.field,
                    parent.field
                );
            }
        }
    }
}

#[test]
fn the_docs_table_is_generated_from_the_matrix() {
    let file = manifest_dir().join("../../docs/support.md");
    let expected = markdown();
    if std::env::var_os("CAPZ_WRITE_SUPPORT_MATRIX").is_some() {
        std::fs::write(&file, &expected).unwrap();
    }
    let found = std::fs::read_to_string(&file).unwrap_or_default();
    assert!(
        found == expected,
        "{} is stale: run `just support-matrix`.\nExpected:\n{expected}",
        file.display()
    );
}
