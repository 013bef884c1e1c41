//! Reading conformance cases: `<case>.http` (requests) and `<case>.expect` (checks).
//!
//! The format is documented in `tests/conformance/README.md`; this module is its parser.
//! A case is a list of steps; each step is one request (a template, filled in at run
//! time from the previous step's response) and the checks of its response.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use dunning_core::Load;
use serde_json::Value;

use crate::expect::Check;

/// One conformance case: a pair of files.
#[derive(Clone, Debug)]
pub struct Case {
    /// `<section>/<case>`, e.g. `11-methods/discover_ok`.
    pub name: String,
    /// The `.http` file.
    pub path: PathBuf,
    /// The requests and their checks, in order.
    pub steps: Vec<Step>,
}

/// One request of a case and what its response must satisfy.
#[derive(Clone, Debug)]
pub struct Step {
    /// Milliseconds to move the clock forward before sending (`advance=MS`).
    pub advance_ms: u64,
    /// Adapter load to report with this request (`load=overloaded|draining`).
    pub load: Load,
    /// `#raw`: every byte comes from escapes; file line breaks are dropped.
    pub raw: bool,
    /// The request text, before substitutions.
    pub template: String,
    /// The checks.
    pub checks: Vec<Check>,
}

/// Marker line between steps, in both files (`>>>`, optionally `>>> advance=MS`).
pub const STEP_MARKER: &str = ">>>";

/// Loads every case under `root` (one level of section folders), sorted by name.
pub fn load_dir(root: &Path) -> Result<Vec<Case>, String> {
    let mut cases = Vec::new();
    let mut sections: Vec<PathBuf> = read_dir(root)?.into_iter().filter(|p| p.is_dir()).collect();
    sections.sort();
    for section in sections {
        let mut files: Vec<PathBuf> = read_dir(&section)?
            .into_iter()
            .filter(|p| p.extension().is_some_and(|e| e == "http"))
            .collect();
        files.sort();
        for file in files {
            cases.push(load_case(root, &file)?);
        }
        for orphan in read_dir(&section)?
            .into_iter()
            .filter(|p| p.extension().is_some_and(|e| e == "expect"))
        {
            if !orphan.with_extension("http").exists() {
                return Err(format!("{}: no matching .http", orphan.display()));
            }
        }
    }
    Ok(cases)
}

/// The file listing cases the server is known to fail, beside the section folders.
pub const KNOWN_FAILURES: &str = "known-failures.txt";

/// Reads `known-failures.txt` under `root`: `<section>/<case> <reason>` per line, `#`
/// comments and blank lines ignored. A missing file is an empty list.
pub fn known_failures(root: &Path) -> Result<BTreeMap<String, String>, String> {
    let path = root.join(KNOWN_FAILURES);
    let text = match std::fs::read_to_string(&path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(BTreeMap::new()),
        Err(e) => return Err(format!("{}: {e}", path.display())),
    };
    let mut out = BTreeMap::new();
    for line in text.lines().map(str::trim) {
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let (name, reason) = line.split_once(char::is_whitespace).unwrap_or((line, ""));
        if out
            .insert(name.to_owned(), reason.trim().to_owned())
            .is_some()
        {
            return Err(format!("{KNOWN_FAILURES}: {name} listed twice"));
        }
    }
    Ok(out)
}

fn read_dir(dir: &Path) -> Result<Vec<PathBuf>, String> {
    std::fs::read_dir(dir)
        .map_err(|e| format!("{}: {e}", dir.display()))?
        .map(|e| e.map(|e| e.path()).map_err(|e| e.to_string()))
        .collect()
}

/// Loads the case whose request file is `http` (name relative to `root`).
pub fn load_case(root: &Path, http: &Path) -> Result<Case, String> {
    let name = http
        .with_extension("")
        .strip_prefix(root)
        .map_err(|e| e.to_string())?
        .to_string_lossy()
        .replace('\\', "/");
    let read = |p: &Path| std::fs::read_to_string(p).map_err(|e| format!("{}: {e}", p.display()));
    let requests = read(http)?;
    let expect = read(&http.with_extension("expect"))?;
    let steps = parse_case(&requests, &expect).map_err(|e| format!("{name}: {e}"))?;
    Ok(Case {
        name,
        path: http.to_owned(),
        steps,
    })
}

/// Splits both files at the step markers and pairs the pieces.
pub fn parse_case(requests: &str, expect: &str) -> Result<Vec<Step>, String> {
    let reqs = split_steps(requests);
    let exps = split_steps(expect);
    if reqs.len() != exps.len() {
        return Err(format!(
            "{} request step(s) but {} expectation step(s)",
            reqs.len(),
            exps.len()
        ));
    }
    reqs.into_iter()
        .zip(exps)
        .enumerate()
        .map(|(i, ((marker_opts, text), (_, checks)))| {
            let (raw, opts, template) = strip_directives(&text)?;
            let (mut advance_ms, mut load) = (0, Load::Normal);
            for opt in marker_opts
                .split_whitespace()
                .chain(opts.iter().map(String::as_str))
            {
                match opt.split_once('=') {
                    Some(("advance", ms)) => {
                        advance_ms = ms.parse().map_err(|_| format!("bad advance: {ms}"))?;
                    }
                    Some(("load", "normal")) => load = Load::Normal,
                    Some(("load", "overloaded")) => load = Load::Overloaded,
                    Some(("load", "draining")) => load = Load::Draining,
                    _ => return Err(format!("step {}: unknown option {opt}", i + 1)),
                }
            }
            Ok(Step {
                advance_ms,
                load,
                raw,
                template,
                checks: crate::expect::parse_checks(&checks)
                    .map_err(|e| format!("step {}: {e}", i + 1))?,
            })
        })
        .collect()
}

/// Pieces between marker lines, each with the marker's options (empty for the first).
fn split_steps(text: &str) -> Vec<(String, String)> {
    let mut out = vec![(String::new(), String::new())];
    for line in text.split_inclusive('\n') {
        if let Some(opts) = line.strip_prefix(STEP_MARKER) {
            out.push((opts.trim().to_owned(), String::new()));
        } else if let Some(last) = out.last_mut() {
            last.1.push_str(line);
        }
    }
    out
}

/// Removes the leading `#` lines of a request: comments, `#raw`, `#!option=value`.
fn strip_directives(text: &str) -> Result<(bool, Vec<String>, String), String> {
    let mut raw = false;
    let mut opts = Vec::new();
    let mut rest = text;
    loop {
        let (line, after) = rest.split_once('\n').unwrap_or((rest, ""));
        let line = line.trim_end_matches('\r');
        if line == "#raw" {
            raw = true;
        } else if let Some(opt) = line.strip_prefix("#!") {
            opts.extend(opt.split_whitespace().map(str::to_owned));
        } else if !line.starts_with('#') && !line.trim().is_empty() {
            return Ok((raw, opts, rest.to_owned()));
        }
        if after.is_empty() {
            return Ok((raw, opts, String::new()));
        }
        rest = after;
    }
}

/// Fills in a step's template: `{{...}}` substitutions, escapes, CRLF, `Content-Length: auto`.
///
/// `earlier` holds the JSON body of each earlier step's response (`None` when not JSON):
/// `{{prev:..}}` reads the last one, `{{stepN:..}}` the N-th (from 1).
pub fn build_request(step: &Step, earlier: &[Option<Value>]) -> Result<Vec<u8>, String> {
    if step.raw {
        let joined: String = step.template.lines().collect();
        let bytes = substitute(&joined, earlier)?;
        return unescape(&bytes);
    }
    let (head, body) = match step.template.split_once("\n\n") {
        Some((h, b)) => (h, b),
        None => match step.template.split_once("\r\n\r\n") {
            Some((h, b)) => (h, b),
            None => (step.template.trim_end_matches(['\r', '\n']), ""),
        },
    };
    let body = body.strip_suffix('\n').unwrap_or(body);
    let body = body.strip_suffix('\r').unwrap_or(body);
    let body = pad_to(substitute(body, earlier)?)?;
    let mut out = Vec::new();
    for line in head.lines() {
        let line = line.trim_end_matches('\r');
        let mut bytes = unescape(&substitute(line, earlier)?)?;
        if bytes.len() > 15
            && bytes[..15].eq_ignore_ascii_case(b"content-length:")
            && bytes[15..].trim_ascii() == b"auto"
        {
            bytes = format!("Content-Length: {}", body.len()).into_bytes();
        }
        out.extend_from_slice(&bytes);
        out.extend_from_slice(b"\r\n");
    }
    out.extend_from_slice(b"\r\n");
    out.extend_from_slice(&body);
    Ok(out)
}

/// Replaces every `{{...}}` except `{{pad-to:N}}` (resolved once the body is known).
fn substitute(text: &str, earlier: &[Option<Value>]) -> Result<Vec<u8>, String> {
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(start) = rest.find("{{") {
        out.extend_from_slice(&rest.as_bytes()[..start]);
        let end = rest[start..]
            .find("}}")
            .ok_or_else(|| format!("unclosed {{{{ in {rest:?}"))?;
        let inner = &rest[start + 2..start + end];
        rest = &rest[start + end + 2..];
        let (op, arg) = inner.split_once(':').unwrap_or((inner, ""));
        match op {
            "pad-to" => out.extend_from_slice(format!("{{{{{inner}}}}}").as_bytes()),
            "pad" => {
                let n: usize = arg.parse().map_err(|_| format!("bad pad: {arg}"))?;
                out.resize(out.len() + n, b' ');
            }
            "fill" => {
                let n: usize = arg.parse().map_err(|_| format!("bad fill: {arg}"))?;
                out.resize(out.len() + n, b'x');
            }
            "hex" => {
                let clean: String = arg.chars().filter(|c| !c.is_whitespace()).collect();
                for pair in clean.as_bytes().chunks(2) {
                    let s = std::str::from_utf8(pair).map_err(|e| e.to_string())?;
                    out.push(u8::from_str_radix(s, 16).map_err(|_| format!("bad hex: {s}"))?);
                }
            }
            "prev" => {
                let body = earlier.last().ok_or("{{prev:..}} in the first step")?;
                out.extend_from_slice(json_value(arg, body.as_ref())?.as_bytes());
            }
            _ => match op
                .strip_prefix("step")
                .and_then(|n| n.parse::<usize>().ok())
            {
                Some(n) if n >= 1 && n <= earlier.len() => {
                    out.extend_from_slice(json_value(arg, earlier[n - 1].as_ref())?.as_bytes());
                }
                _ => return Err(format!("unknown substitution {{{{{inner}}}}}")),
            },
        }
    }
    out.extend_from_slice(rest.as_bytes());
    Ok(out)
}

/// `{{prev:/pointer|filter|...}}`: a string is inserted JSON-escaped without quotes,
/// anything else as its JSON text. Filters: `tamper`, `b64` (the `=?base64?..?=` form),
/// `raw` (no JSON escaping).
fn json_value(arg: &str, body: Option<&Value>) -> Result<String, String> {
    let mut parts = arg.split('|');
    let pointer = parts.next().unwrap_or_default();
    let body = body.ok_or("that step's response body was not JSON")?;
    let v = body
        .pointer(pointer)
        .ok_or_else(|| format!("that step's response has nothing at {pointer}"))?;
    let mut s = match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    let mut escape = true;
    for filter in parts {
        match filter {
            "tamper" => s = tamper(&s),
            "b64" => {
                s = format!("=?base64?{}?=", STANDARD.encode(s.as_bytes()));
                escape = false;
            }
            "raw" => escape = false,
            other => return Err(format!("unknown filter {other}")),
        }
    }
    if escape && v.is_string() {
        let quoted = Value::String(s).to_string();
        Ok(quoted[1..quoted.len() - 1].to_owned())
    } else {
        Ok(s)
    }
}

/// Flips one character of the last `.`-separated part (the MAC of a sealed state),
/// away from its edges so the change cannot hide in padding bits.
pub fn tamper(s: &str) -> String {
    let mut chars: Vec<char> = s.chars().collect();
    let start = s.rfind('.').map_or(0, |i| s[..i].chars().count() + 1);
    let len = chars.len() - start;
    let at = start + len / 2;
    if let Some(c) = chars.get_mut(at) {
        *c = match *c {
            'A' => 'B',
            'a' => 'b',
            '0' => '1',
            c if c.is_ascii_alphanumeric() => 'A',
            _ => 'Q',
        };
    }
    chars.into_iter().collect()
}

/// Resolves `{{pad-to:N}}`: spaces in its place so the whole body is N bytes long.
fn pad_to(body: Vec<u8>) -> Result<Vec<u8>, String> {
    const OPEN: &[u8] = b"{{pad-to:";
    let Some(start) = body.windows(OPEN.len()).position(|w| w == OPEN) else {
        return Ok(body);
    };
    let end = body[start..]
        .windows(2)
        .position(|w| w == b"}}")
        .map(|e| start + e)
        .ok_or("unclosed pad-to")?;
    let n: usize = std::str::from_utf8(&body[start + OPEN.len()..end])
        .ok()
        .and_then(|s| s.parse().ok())
        .ok_or("bad pad-to")?;
    let rest = body.len() - (end + 2 - start);
    let fill = n
        .checked_sub(rest)
        .ok_or_else(|| format!("body already {rest} bytes, over pad-to:{n}"))?;
    let mut out = Vec::with_capacity(n);
    out.extend_from_slice(&body[..start]);
    out.resize(start + fill, b' ');
    out.extend_from_slice(&body[end + 2..]);
    Ok(out)
}

/// Head-line and `#raw` escapes: `\r \n \t \\ \xNN`; any other backslash is an error.
pub fn unescape(bytes: &[u8]) -> Result<Vec<u8>, String> {
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] != b'\\' {
            out.push(bytes[i]);
            i += 1;
            continue;
        }
        match bytes.get(i + 1) {
            Some(b'r') => out.push(b'\r'),
            Some(b'n') => out.push(b'\n'),
            Some(b't') => out.push(b'\t'),
            Some(b'\\') => out.push(b'\\'),
            Some(b'x') => {
                let hex = bytes
                    .get(i + 2..i + 4)
                    .and_then(|h| std::str::from_utf8(h).ok())
                    .and_then(|h| u8::from_str_radix(h, 16).ok())
                    .ok_or("bad \\x escape")?;
                out.push(hex);
                i += 2;
            }
            other => {
                return Err(format!(
                    "unknown escape \\{}",
                    other.map_or(String::new(), |c| char::from(*c).to_string())
                ));
            }
        }
        i += 2;
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn step(template: &str) -> Step {
        let (raw, _, template) = strip_directives(template).unwrap();
        Step {
            advance_ms: 0,
            load: Load::Normal,
            raw,
            template,
            checks: Vec::new(),
        }
    }

    #[test]
    fn head_lines_get_crlf_and_auto_length() {
        let s = step("# a comment\nPOST / HTTP/1.1\nHost: x\nContent-Length: auto\n\n{\"a\":1}\n");
        let req = build_request(&s, &[]).unwrap();
        assert_eq!(
            req,
            b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 7\r\n\r\n{\"a\":1}"
        );
    }

    #[test]
    fn raw_mode_drops_newlines() {
        let s = step("#raw\nGET / HTTP/1.1\\r\\n\n\\r\\n\n");
        assert_eq!(build_request(&s, &[]).unwrap(), b"GET / HTTP/1.1\r\n\r\n");
    }

    #[test]
    fn escapes_in_head() {
        let s = step("POST / HTTP/1.1\nX: a\\x00\\\\b\\tc\n\n");
        assert_eq!(
            build_request(&s, &[]).unwrap(),
            b"POST / HTTP/1.1\r\nX: a\x00\\b\tc\r\n\r\n"
        );
        assert!(unescape(b"\\q").is_err());
    }

    #[test]
    fn pad_to_fills_exactly() {
        let s = step("POST / HTTP/1.1\nContent-Length: auto\n\n{\"a\":1{{pad-to:20}}}\n");
        let req = build_request(&s, &[]).unwrap();
        let body = &req[req.windows(4).position(|w| w == b"\r\n\r\n").unwrap() + 4..];
        assert_eq!(body.len(), 20);
        assert!(body.starts_with(b"{\"a\":1 ") && body.ends_with(b" }"));
        assert!(String::from_utf8_lossy(&req).contains("Content-Length: 20\r\n"));
    }

    #[test]
    fn prev_substitutions() {
        let prev = [Some(
            json!({"result": {"requestState": "v1.k1.abc.MACVALUE", "n": 3}}),
        )];
        let s = step(
            "POST / HTTP/1.1\nX: {{prev:/result/n}}\n\n\"{{prev:/result/requestState|tamper}}\"",
        );
        let req = String::from_utf8(build_request(&s, &prev).unwrap()).unwrap();
        assert!(req.contains("X: 3\r\n"));
        assert!(req.ends_with("\"v1.k1.abc.MACVBLUE\""), "{req}");
        let s = step("POST / HTTP/1.1\nX: {{step1:/result/requestState|b64}}\n\n");
        let req = String::from_utf8(build_request(&s, &prev).unwrap()).unwrap();
        assert!(
            req.contains("X: =?base64?djEuazEuYWJjLk1BQ1ZBTFVF?=\r\n"),
            "{req}"
        );
    }

    #[test]
    fn tamper_changes_one_char_of_the_last_part() {
        let t = tamper("aaa.bbb.ccccc");
        assert_eq!(t, "aaa.bbb.ccAcc");
        assert_eq!(tamper("xyz"), "xAz");
    }

    #[test]
    fn steps_pair_up() {
        let steps = parse_case(
            "POST / HTTP/1.1\n\n>>> advance=5\n#!load=draining\nPOST / HTTP/1.1\n\n",
            "status 200\n>>>\nstatus 400\n",
        )
        .unwrap();
        assert_eq!(steps.len(), 2);
        assert_eq!(steps[1].advance_ms, 5);
        assert_eq!(steps[1].load, Load::Draining);
        assert!(parse_case("POST / HTTP/1.1\n", "status 1\n>>>\nstatus 2\n").is_err());
    }
}
