//! The purity contract of `dunning-core` (see the crate docs): no runtime, socket or
//! database crate in its normal dependency tree, and no clock, RNG, environment, file
//! or socket call in its source. `core/clippy.toml` bans the calls too; this is the
//! belt to those braces, and it also runs where clippy does not.

use std::path::{Path, PathBuf};
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

/// Every `.rs` file under `dir`, recursively.
fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let entries = std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    for entry in entries {
        let path = entry.expect("a readable directory entry").path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The code of a source file with comments removed (line, block and doc comments).
/// String, raw-string and char literals are kept as code (a banned path inside one is
/// suspicious enough) and are skipped over, so `"//"` inside them starts no comment.
fn strip_comments(src: &str) -> String {
    let s: Vec<char> = src.chars().collect();
    let mut out = String::with_capacity(src.len());
    let mut i = 0;
    let ident = |c: char| c.is_alphanumeric() || c == '_';
    while i < s.len() {
        let c = s[i];
        let next = s.get(i + 1).copied();
        // Raw string: r"..", r#".."#, br#".."# (an `r` that does not end an identifier).
        if c == 'r'
            && (i == 0 || !ident(s[i - 1]) || (s[i - 1] == 'b' && (i < 2 || !ident(s[i - 2]))))
        {
            let hashes = s[i + 1..].iter().take_while(|&&h| h == '#').count();
            if s.get(i + 1 + hashes) == Some(&'"') {
                let body = i + hashes + 2;
                let close: Vec<char> = std::iter::once('"')
                    .chain(std::iter::repeat_n('#', hashes))
                    .collect();
                let end = (body..s.len())
                    .find(|&j| s[j..].starts_with(&close))
                    .map_or(s.len(), |j| j + close.len());
                out.extend(&s[i..end]);
                i = end;
                continue;
            }
        }
        match (c, next) {
            ('"', _) => {
                let mut j = i + 1;
                while j < s.len() && s[j] != '"' {
                    j += if s[j] == '\\' { 2 } else { 1 };
                }
                let end = (j + 1).min(s.len());
                out.extend(&s[i..end]);
                i = end;
            }
            // Char literals ('x', '\n', '\'', '"'); a lone quote is a lifetime.
            ('\'', Some('\\')) => {
                let end = (i + 2..s.len())
                    .find(|&j| s[j] == '\'' && j > i + 2)
                    .map_or(s.len(), |j| j + 1);
                out.extend(&s[i..end]);
                i = end;
            }
            ('\'', Some(_)) if s.get(i + 2) == Some(&'\'') => {
                out.extend(&s[i..i + 3]);
                i += 3;
            }
            ('/', Some('/')) => {
                while i < s.len() && s[i] != '\n' {
                    i += 1;
                }
            }
            ('/', Some('*')) => {
                let mut depth = 0;
                while i < s.len() {
                    if s[i] == '/' && s.get(i + 1) == Some(&'*') {
                        depth += 1;
                        i += 2;
                    } else if s[i] == '*' && s.get(i + 1) == Some(&'/') {
                        depth -= 1;
                        i += 2;
                        if depth == 0 {
                            break;
                        }
                    } else {
                        if s[i] == '\n' {
                            out.push('\n');
                        }
                        i += 1;
                    }
                }
            }
            _ => {
                out.push(c);
                i += 1;
            }
        }
    }
    out
}

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
