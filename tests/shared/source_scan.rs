//! The source scanner of the purity tests (`core/tests/purity.rs`,
//! `domain/tests/no_sockets.rs`) and of `tests/tests/comments_resolve.rs`: every Rust
//! file under a folder, its code with the comments removed (so that a banned name in a
//! comment is not a finding and one in code always is), and its comments alone, line by
//! line. Included by those tests with `#[path]`: shared test code, not a crate; each
//! includer uses only part of it.
#![allow(dead_code)]

use std::path::{Path, PathBuf};

/// Every `.rs` file under `dir`, recursively.
pub(crate) fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
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
pub(crate) fn strip_comments(src: &str) -> String {
    split(src).0
}

/// The comments of a source file (line, block and doc comments), one entry per source
/// line a comment covers: the 1-based line number and the comment text on that line
/// (markers included). Literals are skipped exactly as [`strip_comments`] skips them.
pub(crate) fn comments(src: &str) -> Vec<(usize, String)> {
    split(src).1
}

/// The code without comments, and the comments by line.
fn split(src: &str) -> (String, Vec<(usize, String)>) {
    let s: Vec<char> = src.chars().collect();
    let mut out = String::with_capacity(src.len());
    let mut notes: Vec<(usize, String)> = Vec::new();
    // The 1-based line of `s[i]`, counting newlines up to `i` incrementally.
    let mut line = 1;
    let mut counted = 0;
    let mut line_of = |i: usize| {
        line += s[counted..i].iter().filter(|&&c| c == '\n').count();
        counted = i;
        line
    };
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
                let start = i;
                while i < s.len() && s[i] != '\n' {
                    i += 1;
                }
                notes.push((line_of(start), s[start..i].iter().collect()));
            }
            ('/', Some('*')) => {
                let start = i;
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
                let first = line_of(start);
                let text: String = s[start..i].iter().collect();
                notes.extend(
                    text.split('\n')
                        .enumerate()
                        .map(|(k, t)| (first + k, t.to_owned())),
                );
            }
            _ => {
                out.push(c);
                i += 1;
            }
        }
    }
    (out, notes)
}
