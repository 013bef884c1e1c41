//! The core is a reusable MCP server: the product's words (its scope names, its own
//! error codes) come from the dispatcher's catalogue. This scans the core's sources,
//! outside unit-test modules and the fuzzing test server, for the ones that once lived
//! here.

// A test reads the core's own sources; the core itself does no I/O.
#![allow(clippy::disallowed_methods)]

use std::path::Path;

/// Words that belong to the product's catalogue, not to the core.
const PRODUCT_WORDS: &[&str] = &[
    "dunning.read",
    "dunning.write",
    "dunning.admin",
    "NOT_SETTLED",
];

fn sources(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("core/src is readable") {
        let path = entry.expect("entry").path();
        if path.is_dir() {
            // The fuzzing module is a test server, with the product's words on purpose.
            if path.file_name().is_some_and(|n| n != "fuzzing") {
                sources(&path, out);
            }
        } else if path.extension().is_some_and(|e| e == "rs")
            && path.file_name().is_some_and(|n| n != "fuzzing.rs")
        {
            out.push(path);
        }
    }
}

#[test]
fn the_core_names_no_scope_or_error_code_of_the_product() {
    let mut files = Vec::new();
    sources(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("src"),
        &mut files,
    );
    assert!(files.len() > 10, "the scan found the sources");
    let mut found = Vec::new();
    for file in &files {
        // Unit tests may use any words: a unit-test module of its own (`tests.rs`,
        // declared `#[cfg(test)] mod tests;`) is skipped, and in other files only what
        // comes before `#[cfg(test)]` is scanned.
        if file.file_name().is_some_and(|n| n == "tests.rs") {
            continue;
        }
        let text = std::fs::read_to_string(file).expect("utf-8 source");
        let code = text.split("#[cfg(test)]").next().unwrap_or_default();
        for (n, line) in code.lines().enumerate() {
            for word in PRODUCT_WORDS {
                if line.contains(word) && !line.trim_start().starts_with("//") {
                    found.push(format!("{}:{}: {word}", file.display(), n + 1));
                }
            }
        }
    }
    assert!(found.is_empty(), "product words in the core: {found:#?}");
}
