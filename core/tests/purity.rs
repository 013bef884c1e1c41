//! The purity contract of `dunning-core` (see the crate docs): no runtime, socket or
//! database crate in its normal dependency tree, and no clock, RNG, environment, file
//! or socket call in its source. `core/clippy.toml` bans the calls too; this is the
//! belt to those braces, and it also runs where clippy does not.

use std::path::Path;
use std::process::Command;

/// Crates that would mean I/O, a runtime or a store inside the core.
const BANNED_CRATES: &[&str] = &["tokio", "mio", "hyper", "reqwest", "rusqlite", "socket2"];

/// Calls that would mean time, chance, environment, files or sockets.
const BANNED_CALLS: &[&str] = &[
    "Instant::now",
    "SystemTime::now",
    "thread_rng",
    "std::env::var",
    "std::fs::",
    "std::net::",
];

fn core_dir() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

#[test]
fn normal_dependency_tree_has_no_io_crates() {
    let workspace = core_dir()
        .parent()
        .expect("core/ sits in the workspace root");
    let tree_args = [
        "tree",
        "-p",
        "dunning-core",
        "-e",
        "normal",
        "--prefix",
        "none",
    ];
    let run = |extra: &[&str]| {
        Command::new(env!("CARGO"))
            .current_dir(workspace)
            .args(tree_args)
            .args(extra)
            .output()
            .expect("cargo runs")
    };
    // Offline first (no index update); online only if the local cache cannot resolve.
    let mut out = run(&["--offline"]);
    if !out.status.success() {
        out = run(&[]);
    }
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "cargo tree failed: {stderr}");
    let tree = String::from_utf8_lossy(&out.stdout);
    let crates: Vec<&str> = tree
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .collect();
    assert!(
        crates.first() == Some(&"dunning-core") && crates.contains(&"serde_json"),
        "unexpected cargo tree output:\n{tree}"
    );
    let found: Vec<&&str> = BANNED_CRATES
        .iter()
        .filter(|b| crates.contains(b))
        .collect();
    assert!(
        found.is_empty(),
        "dunning-core's normal dependencies include {found:?}:\n{tree}"
    );
}

#[path = "../../tests/shared/source_scan.rs"]
mod source_scan;
use source_scan::{rust_files, strip_comments};

#[test]
fn comment_stripping_keeps_code_only() {
    let src = concat!(
        "let a = 1; // Instant::now\n",
        "/* SystemTime::now /* nested */ */ let b = \"//x\\\"\"; // thread_rng\n",
        "/// std::fs::read\n",
        "let q = '\"'; let e = '\\''; fn f<'a>(x: &'a str) {} // std::net::\n",
        "let r = br#\"{\"k\":\"//\"}\"#; std::env::var(\"X\");\n",
    );
    let code = strip_comments(src);
    assert_eq!(
        code,
        concat!(
            "let a = 1; \n",
            " let b = \"//x\\\"\"; \n",
            "\n",
            "let q = '\"'; let e = '\\''; fn f<'a>(x: &'a str) {} \n",
            "let r = br#\"{\"k\":\"//\"}\"#; std::env::var(\"X\");\n",
        )
    );
    assert!(
        code.contains("std::env::var"),
        "code after a raw string is still code"
    );
}

#[test]
#[allow(
    clippy::disallowed_methods,
    reason = "the test reads the core's source; the ban is for the core itself"
)]
fn source_makes_no_clock_rng_env_fs_or_net_calls() {
    let mut files = Vec::new();
    rust_files(&core_dir().join("src"), &mut files);
    assert!(
        files.iter().any(|f| f.ends_with("server.rs")),
        "core/src not found"
    );
    let mut hits = Vec::new();
    for file in &files {
        let src = std::fs::read_to_string(file).expect("source is UTF-8");
        let code = strip_comments(&src);
        for (n, line) in code.lines().enumerate() {
            for banned in BANNED_CALLS {
                if line.contains(banned) {
                    hits.push(format!("{}:{}: {banned}", file.display(), n + 1));
                }
            }
        }
    }
    assert!(
        hits.is_empty(),
        "banned calls in core/src:\n{}",
        hits.join("\n")
    );
}
