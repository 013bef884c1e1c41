//! Comments resolve inside the repository: a rule is stated where it is enforced, or in
//! `domain/src/rules.md` or `docs/decisions.md`, and no comment sends the reader to a
//! document or a work item the repository does not hold.
//!
//! Every comment of every Rust file in the workspace (and in `fuzz/`, `benches/peers/`)
//! is read, line by line, and each of these is a finding, named `file:line`:
//!
//! * a section sign that does not continue the citation of an external standard — an
//!   RFC (`RFC 9112 §3.2`, `RFC 8252 §7.3, §8.3`), an article of a law (`CDC art. 43
//!   §2`) or `JSON-RPC 2.0`; a bare or `spec`-prefixed section points into a spec that
//!   lives outside the repository;
//! * the word "issue" followed by a number: a work item's number says nothing to a
//!   reader of the code; state what it asked for instead;
//! * a `#` followed by a digit: the tool numbers of an outside catalogue; name the tool;
//! * the word "item" followed by a number: an item of a work item, as unknown;
//! * the word "rule" followed by a number: the numbered rules of an outside document;
//!   name the section of `domain/src/rules.md` or state the rule;
//! * a `.md` file that exists neither from the repository root nor from the folder of
//!   the file (or one of its parents).

use std::path::{Path, PathBuf};

#[path = "../shared/source_scan.rs"]
mod source_scan;
use source_scan::comments;

/// The workspace root (this crate is `tests/`).
fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("tests/ sits in the workspace root")
        .to_path_buf()
}

/// Every `.rs` file of the repository, without build output (`target`), hidden
/// folders and the fuzz corpus. ([`source_scan::rust_files`] does not prune; here a
/// `target` folder inside the tree would cost seconds.)
fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
    let entries = std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    for entry in entries {
        let path = entry.expect("a readable directory entry").path();
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
        if path.is_dir() {
            if !name.starts_with('.') && name != "target" && name != "corpus" {
                sources(&path, out);
            }
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// Every other text file whose comments a reader follows: scripts, CI, fixtures,
/// configuration and the Markdown outside `docs/` (where `docs/issues.md` explains the
/// work items' numbers). Build output, hidden folders but `.ci`, the fuzz corpus,
/// lockfiles and binary files are left out.
fn other_files(dir: &Path, root: &Path, out: &mut Vec<PathBuf>) {
    let entries = std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    for entry in entries {
        let path = entry.expect("a readable directory entry").path();
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
        if path.is_dir() {
            let skipped = (name.starts_with('.') && name != ".ci")
                || ["target", "corpus", "node_modules"].contains(&name)
                || path == root.join("docs");
            if !skipped {
                other_files(&path, root, out);
            }
        } else if !name.ends_with(".rs") && !name.ends_with(".lock") && !name.ends_with(".png") {
            out.push(path);
        }
    }
}

/// A comment line's text without its markers (`//!`, `///`, `//`, `/*`, `*/`, a
/// leading `*`).
fn body(text: &str) -> &str {
    let t = text.trim();
    let t = t
        .strip_prefix("//!")
        .or_else(|| t.strip_prefix("///"))
        .or_else(|| t.strip_prefix("//"))
        .or_else(|| t.strip_prefix("/*!"))
        .or_else(|| t.strip_prefix("/**"))
        .or_else(|| t.strip_prefix("/*"))
        .or_else(|| t.strip_prefix('*'))
        .unwrap_or(t);
    t.strip_suffix("*/").unwrap_or(t).trim()
}

/// Whether the text before a section sign ends with the citation of an external
/// standard, possibly followed by other sections of it (RFC 6749 §5.2 and §4.1.2.1).
fn cites_a_standard(before: &str) -> bool {
    let mut b = before.trim_end();
    loop {
        b = b.strip_suffix(',').unwrap_or(b).trim_end();
        for joint in [" and", " or", " e", "-", "–"] {
            if let Some(rest) = b.strip_suffix(joint) {
                b = rest.trim_end();
                break;
            }
        }
        // An earlier section of the same citation (RFC 8252 §7.3, §8.3).
        let section = b.trim_end_matches(|c: char| {
            c.is_ascii_alphanumeric() || c == '.' || c == 'º' || c == '(' || c == ')'
        });
        if let Some(rest) = section.strip_suffix('§')
            && section.len() < b.len()
        {
            b = rest;
            continue;
        }
        break;
    }
    b = b.strip_suffix(',').unwrap_or(b).trim_end();
    if b.ends_with("JSON-RPC 2.0") || b.ends_with("Apache 2.0") {
        return true;
    }
    // `RFC 9110`, `art. 43`, `arts. 42`, `art. 42-A`.
    let number = b.trim_end_matches(|c: char| c.is_ascii_alphanumeric() || c == '-');
    if number.len() == b.len() || !b[number.len()..].starts_with(|c: char| c.is_ascii_digit()) {
        return false;
    }
    let head = number.trim_end();
    head.len() < number.len()
        && (head.ends_with("RFC") || head.ends_with("art.") || head.ends_with("arts."))
}

/// `.md` file names in `text`: runs of path characters ending in `.md`.
fn markdown_refs(text: &str) -> Vec<&str> {
    let path_char = |c: char| c.is_ascii_alphanumeric() || "_-./".contains(c);
    let mut out = Vec::new();
    let mut from = 0;
    while let Some(k) = text[from..].find(".md") {
        let end = from + k + 3;
        let after_ok = !text[end..].starts_with(|c: char| c.is_ascii_alphanumeric() || c == '_');
        let start = text[..from + k]
            .rfind(|c: char| !path_char(c))
            .map_or(0, |s| s + 1);
        if after_ok && start < from + k {
            out.push(&text[start..end]);
        }
        from = end;
    }
    out
}

/// Whether the word "issue" or "issues", any case, is followed by a number in `text`.
fn names_an_issue(text: &str) -> bool {
    word_then_number(text, "issue")
}

/// Whether the word "rule" or "rules", any case, is followed by a number in `text`.
fn numbers_a_rule(text: &str) -> bool {
    word_then_number(text, "rule")
}

/// Whether `word` (or its plural in `s`), any case and starting a word, is followed by
/// a number, possibly after `#`.
fn word_then_number(text: &str, word: &str) -> bool {
    let lower = text.to_lowercase();
    lower.match_indices(word).any(|(k, _)| {
        let word_start = k == 0 || !lower[..k].ends_with(|c: char| c.is_alphanumeric());
        let rest = &lower[k + word.len()..];
        let rest = rest.strip_prefix('s').unwrap_or(rest).trim_start();
        let rest = rest.strip_prefix('#').unwrap_or(rest);
        word_start && rest.starts_with(|c: char| c.is_ascii_digit())
    })
}

/// Whether `text` holds a `#` followed by a digit (and not inside a word or an HTML
/// entity such as `&#39;`).
fn numbers_a_tool(text: &str) -> bool {
    text.match_indices('#').any(|(k, _)| {
        text[k + 1..].starts_with(|c: char| c.is_ascii_digit())
            && !text[..k].ends_with(|c: char| c.is_alphanumeric() || c == '&')
    })
}

/// Whether `md`, named in `file`, is a file of the repository at `root`: from the root,
/// or from the file's folder or one of its parents inside the repository.
fn found(root: &Path, file: &Path, md: &str) -> bool {
    root.join(md).is_file()
        || file
            .parent()
            .into_iter()
            .flat_map(Path::ancestors)
            .take_while(|d| d.starts_with(root))
            .any(|d| d.join(md).is_file())
}

/// The findings of one file's comments: `(line, why)`. `exists` says whether a `.md`
/// path, as written, names a file.
fn check(src: &str, exists: &dyn Fn(&str) -> bool) -> Vec<(usize, String)> {
    check_lines(comments(src), true, exists)
}

/// The findings of `lines` (`(line, text)`); `tools` says whether `#` and a digit is a
/// finding (in a script it may be shell syntax).
fn check_lines(
    lines: Vec<(usize, String)>,
    tools: bool,
    exists: &dyn Fn(&str) -> bool,
) -> Vec<(usize, String)> {
    let mut findings = Vec::new();
    let mut prev: Option<(usize, String)> = None;
    for (line, text) in lines {
        let body = body(&text).to_owned();
        // The previous comment line, when adjacent, so a citation or a number wrapped
        // onto the next line is read whole.
        let carried = match &prev {
            Some((l, b)) if *l + 1 == line => format!("{b} "),
            _ => String::new(),
        };
        let joined = format!("{carried}{body}");
        let here = carried.len();
        for (k, _) in joined.match_indices('§').filter(|&(k, _)| k >= here) {
            if !cites_a_standard(&joined[..k]) {
                findings.push((
                    line,
                    "a section (§) of a document that is not in the repository".to_owned(),
                ));
                break;
            }
        }
        if names_an_issue(&joined) && !names_an_issue(&carried) {
            findings.push((line, "a work item (issue) number".to_owned()));
        }
        if word_then_number(&joined, "item") && !word_then_number(&carried, "item") {
            findings.push((line, "an item number of a work item".to_owned()));
        }
        if numbers_a_rule(&joined) && !numbers_a_rule(&carried) {
            findings.push((line, "a rule number; name the rules.md section".to_owned()));
        }
        if tools && numbers_a_tool(&body) {
            findings.push((line, "a tool number (#N); name the tool".to_owned()));
        }
        for md in markdown_refs(&body) {
            if !exists(md) {
                findings.push((line, format!("`{md}` is not in the repository")));
            }
        }
        prev = Some((line, body));
    }
    findings
}

#[test]
fn every_comment_resolves_inside_the_repository() {
    let root = root();
    let mut files = Vec::new();
    sources(&root, &mut files);
    files.sort();
    assert!(
        files.len() > 200,
        "only {} Rust files found under {}",
        files.len(),
        root.display()
    );
    let mut report = Vec::new();
    for file in &files {
        let src = std::fs::read_to_string(file).unwrap_or_else(|e| panic!("{file:?}: {e}"));
        let exists = |md: &str| found(&root, file, md);
        let shown = file.strip_prefix(&root).unwrap_or(file).display();
        for (line, why) in check(&src, &exists) {
            report.push(format!("{shown}:{line}: {why}"));
        }
    }
    assert!(
        report.is_empty(),
        "{} comments point outside the repository; state the rule, or point to \
         domain/src/rules.md, docs/decisions.md or another file that is here:\n{}",
        report.len(),
        report.join("\n")
    );
}

#[test]
fn scripts_fixtures_and_readmes_resolve_inside_the_repository_too() {
    let root = root();
    let mut files = Vec::new();
    other_files(&root, &root, &mut files);
    files.sort();
    assert!(
        files.len() > 100,
        "only {} other files found under {}",
        files.len(),
        root.display()
    );
    let mut report = Vec::new();
    for file in &files {
        // Text only: a file that is not UTF-8 holds no comment of ours.
        let Ok(src) = std::fs::read_to_string(file) else {
            continue;
        };
        let exists = |md: &str| found(&root, file, md);
        let lines = src
            .lines()
            .enumerate()
            .map(|(k, l)| (k + 1, l.to_owned()))
            .collect();
        let shown = file.strip_prefix(&root).unwrap_or(file).display();
        for (line, why) in check_lines(lines, false, &exists) {
            report.push(format!("{shown}:{line}: {why}"));
        }
    }
    assert!(
        report.is_empty(),
        "{} lines point outside the repository:\n{}",
        report.len(),
        report.join("\n")
    );
}

/// The checker itself: what it must find, and what it must let through.
#[test]
fn the_checker_finds_what_it_should_and_nothing_else() {
    let none = |_: &str| false;
    let docs = |md: &str| md == "docs/decisions.md";
    let lines = |src: &str| -> Vec<usize> {
        check(src, &docs)
            .into_iter()
            .map(|(line, _)| line)
            .collect()
    };
    // Findings.
    assert_eq!(lines("// the answer (§13)\n"), [1]);
    assert_eq!(lines("/// product spec §17\n"), [1]);
    assert_eq!(lines("fn f() {} // domain.md §1.2 rule 4\n"), [1, 1, 1]);
    assert_eq!(lines("//! see domain.md\n"), [1]);
    assert_eq!(lines("// hardening (issue 10, item 6)\n"), [1, 1]);
    assert_eq!(lines("// as Issue 15 asked\n"), [1]);
    assert_eq!(lines("// counted (issues 12 and 13)\n"), [1]);
    assert_eq!(lines("// asked in issue\n// 12 to count them\n"), [2]);
    assert_eq!(lines("/* the tools (#41–#51) */\n"), [1]);
    assert_eq!(lines("// checks rule 2: the charge is overdue\n"), [1]);
    assert_eq!(lines("// (rules 4 and 6)\n"), [1]);
    assert_eq!(lines("/// Item 8: a declined state never executes\n"), [1]);
    assert_eq!(lines("let x = 1;\n/*\n * spec §3\n */\n"), [3]);
    assert_eq!(lines("// RFC 9110 §5.6 and spec §3\n"), [1]);
    // Let through.
    let clean = [
        "// RFC 9112 §3.2: a server MUST answer 400\n",
        "//! (RFC 6749 §5.2 and §4.1.2.1, RFC 7591 §3.2.2, RFC 8707 §2).\n",
        "/// `localhost`; RFC 8252 §7.3, §8.3); no fragment\n",
        "/// a line may not end inside one: RFC 9110\n/// §5.6.4).\n",
        "// at most 2 % (CDC art. 52 §1) and 1 % a month\n",
        "// art. 43, §2º do CDC\n",
        "// (JSON-RPC 2.0 §5: null)\n",
        "// see docs/decisions.md, \"Processing order\"\n",
        "// the issue is that 2 clients race\n",
        "// the rule: 2 requests at most; a ruler 3 days on\n",
        "let s = \"§13 issue 10 #3 domain.md\"; // a string is not a comment\n",
        "// `&#39;` is an HTML entity; `a#1` a fragment\n",
    ];
    for src in clean {
        assert_eq!(check(src, &docs), [], "{src}");
    }
    assert_eq!(check("// see docs/decisions.md\n", &none).len(), 1);
}
