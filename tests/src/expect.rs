//! The checks of a `.expect` file, and a parsed HTTP response to run them against.

use serde_json::Value;

/// One line (or multi-line `body-json`) of a `.expect` file.
#[derive(Clone, Debug, PartialEq)]
pub enum Check {
    /// `status N`
    Status(u16),
    /// `header Name: value` (some value equals) or `header Name` (present).
    Header(String, Option<String>),
    /// `header-prefix Name: value`: some value starts with it.
    HeaderPrefix(String, String),
    /// `header-contains Name: value`: some value contains it.
    HeaderContains(String, String),
    /// `no-header Name`
    NoHeader(String),
    /// `body-empty`
    BodyEmpty,
    /// `body-exact <text>`: the body is exactly the rest of the line.
    BodyExact(String),
    /// `body-json <json>`: the body parses to an equal JSON value.
    BodyJson(Value),
    /// `json /ptr <json>`: the value at the pointer equals.
    Json(String, Value),
    /// `json-absent /ptr`
    JsonAbsent(String),
    /// `json-prefix /ptr "text"`: a string starting with it.
    JsonPrefix(String, String),
    /// `json-contains /ptr "text"`: a string containing it.
    JsonContains(String, String),
    /// `json-type /ptr string|number|integer|boolean|null|array|object`
    JsonType(String, String),
    /// `json-len /ptr N`: array, object or string length (in chars).
    JsonLen(String, usize),
    /// `json-pretty /text-ptr /value-ptr`: the string at the first pointer is the value
    /// at the second, pretty-printed with a two-space indent.
    JsonPretty(String, String),
}

/// Parses the checks of one step (blank and `#` lines ignored).
pub fn parse_checks(text: &str) -> Result<Vec<Check>, String> {
    let mut checks = Vec::new();
    let mut lines = text.lines().map(str::trim_end).peekable();
    while let Some(line) = lines.next() {
        let line = line.trim_start();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let (word, rest) = line.split_once(' ').unwrap_or((line, ""));
        let check = match word {
            "status" => Check::Status(
                rest.trim()
                    .parse()
                    .map_err(|_| format!("bad status: {rest}"))?,
            ),
            "header" => match rest.split_once(':') {
                Some((n, v)) => Check::Header(n.trim().into(), Some(v.trim().into())),
                None => Check::Header(rest.trim().into(), None),
            },
            "header-prefix" => {
                let (n, v) = rest
                    .split_once(':')
                    .ok_or("header-prefix needs Name: value")?;
                Check::HeaderPrefix(n.trim().into(), v.trim().into())
            }
            "header-contains" => {
                let (n, v) = rest
                    .split_once(':')
                    .ok_or("header-contains needs Name: value")?;
                Check::HeaderContains(n.trim().into(), v.trim().into())
            }
            "no-header" => Check::NoHeader(rest.trim().into()),
            "body-empty" => Check::BodyEmpty,
            "body-exact" => Check::BodyExact(rest.into()),
            "body-json" => {
                // The JSON may continue on the following lines, until it parses.
                let mut text = rest.to_owned();
                loop {
                    match serde_json::from_str(&text) {
                        Ok(v) => break Check::BodyJson(v),
                        Err(e) => match lines.next() {
                            Some(more) => {
                                text.push('\n');
                                text.push_str(more);
                            }
                            None => return Err(format!("body-json: {e}")),
                        },
                    }
                }
            }
            "json" | "json-prefix" | "json-contains" | "json-type" | "json-len" | "json-pretty"
            | "json-absent" => {
                let (ptr, arg) = rest.split_once(' ').unwrap_or((rest, ""));
                if !ptr.is_empty() && !ptr.starts_with('/') {
                    return Err(format!("{word}: pointer must start with / ({ptr})"));
                }
                let (ptr, arg) = (ptr.to_owned(), arg.trim());
                let string = || -> Result<String, String> {
                    serde_json::from_str(arg).map_err(|e| format!("{word}: {e} in {arg}"))
                };
                match word {
                    "json" => Check::Json(
                        ptr,
                        serde_json::from_str(arg).map_err(|e| format!("json: {e} in {arg}"))?,
                    ),
                    "json-absent" => Check::JsonAbsent(ptr),
                    "json-prefix" => Check::JsonPrefix(ptr, string()?),
                    "json-contains" => Check::JsonContains(ptr, string()?),
                    "json-type" => Check::JsonType(ptr, arg.into()),
                    "json-len" => {
                        Check::JsonLen(ptr, arg.parse().map_err(|_| format!("bad length {arg}"))?)
                    }
                    _ => Check::JsonPretty(ptr, arg.into()),
                }
            }
            other => return Err(format!("unknown check {other:?}")),
        };
        checks.push(check);
    }
    Ok(checks)
}

/// One HTTP/1.1 response, as read back from a transport.
#[derive(Clone, Debug)]
pub struct HttpResponse {
    /// Status code.
    pub status: u16,
    /// Header fields in order (names as sent).
    pub headers: Vec<(String, String)>,
    /// Body bytes (de-chunked).
    pub body: Vec<u8>,
}

impl HttpResponse {
    /// Parses exactly one response; bytes after it are an error.
    pub fn parse(bytes: &[u8]) -> Result<Self, String> {
        let (resp, used) = Self::parse_prefix(bytes)?;
        if used != bytes.len() {
            return Err(format!(
                "{} unexpected byte(s) after the response: {:?}",
                bytes.len() - used,
                String::from_utf8_lossy(&bytes[used..bytes.len().min(used + 200)])
            ));
        }
        Ok(resp)
    }

    /// Parses one response at the start of `bytes`; returns it and the bytes it used.
    pub fn parse_prefix(bytes: &[u8]) -> Result<(Self, usize), String> {
        if bytes.is_empty() {
            return Err("no response (connection closed without a byte)".into());
        }
        let head_end = bytes
            .windows(4)
            .position(|w| w == b"\r\n\r\n")
            .ok_or("response head not terminated")?;
        let head = std::str::from_utf8(&bytes[..head_end]).map_err(|e| e.to_string())?;
        let mut lines = head.split("\r\n");
        let status_line = lines.next().unwrap_or_default();
        let status = status_line
            .strip_prefix("HTTP/1.1 ")
            .and_then(|s| s.get(..3))
            .and_then(|s| s.parse().ok())
            .ok_or_else(|| format!("bad status line {status_line:?}"))?;
        let mut headers = Vec::new();
        for line in lines {
            let (n, v) = line
                .split_once(':')
                .ok_or_else(|| format!("bad header line {line:?}"))?;
            headers.push((n.to_owned(), v.trim().to_owned()));
        }
        let mut r = Self {
            status,
            headers,
            body: Vec::new(),
        };
        let rest = &bytes[head_end + 4..];
        let chunked = r
            .values("transfer-encoding")
            .any(|v| v.eq_ignore_ascii_case("chunked"));
        let length = r.values("content-length").next().map(str::to_owned);
        let used = if chunked {
            let (body, used) = dechunk(rest)?;
            r.body = body;
            used
        } else if let Some(len) = length {
            let n: usize = len
                .parse()
                .map_err(|_| format!("bad Content-Length {len}"))?;
            r.body = rest
                .get(..n)
                .ok_or("body shorter than Content-Length")?
                .to_vec();
            n
        } else {
            r.body = rest.to_vec();
            rest.len()
        };
        Ok((r, head_end + 4 + used))
    }

    /// Every value of header `name` (case-insensitive).
    pub fn values<'a>(&'a self, name: &'a str) -> impl Iterator<Item = &'a str> + 'a {
        self.headers
            .iter()
            .filter(move |(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// The body as JSON, if it is JSON.
    pub fn json(&self) -> Option<Value> {
        serde_json::from_slice(&self.body).ok()
    }

    /// Runs `check`; `Err` says what differs.
    pub fn check(&self, check: &Check, json: Option<&Value>) -> Result<(), String> {
        let body_json = || json.ok_or_else(|| "body is not JSON".to_owned());
        let at = |ptr: &str| -> Result<&Value, String> {
            body_json()?
                .pointer(ptr)
                .ok_or_else(|| format!("nothing at {ptr}"))
        };
        match check {
            Check::Status(s) if self.status == *s => Ok(()),
            Check::Status(s) => Err(format!("status {} instead of {s}", self.status)),
            Check::Header(n, _)
            | Check::HeaderPrefix(n, _)
            | Check::HeaderContains(n, _)
            | Check::NoHeader(n)
                if n.eq_ignore_ascii_case("date") =>
            {
                Ok(())
            }
            Check::Header(n, want) => {
                let got: Vec<&str> = self.values(n).collect();
                match want {
                    None if !got.is_empty() => Ok(()),
                    Some(w) if got.contains(&w.as_str()) => Ok(()),
                    _ => Err(format!("header {n}: got {got:?}, want {want:?}")),
                }
            }
            Check::HeaderPrefix(n, want) => {
                let got: Vec<&str> = self.values(n).collect();
                if got.iter().any(|g| g.starts_with(want.as_str())) {
                    Ok(())
                } else {
                    Err(format!("header {n}: got {got:?}, want prefix {want:?}"))
                }
            }
            Check::HeaderContains(n, want) => {
                let got: Vec<&str> = self.values(n).collect();
                if got.iter().any(|g| g.contains(want.as_str())) {
                    Ok(())
                } else {
                    Err(format!(
                        "header {n}: got {got:?}, want it to contain {want:?}"
                    ))
                }
            }
            Check::NoHeader(n) => match self.values(n).next() {
                None => Ok(()),
                Some(v) => Err(format!("header {n} present ({v:?}), must be absent")),
            },
            Check::BodyEmpty if self.body.is_empty() => Ok(()),
            Check::BodyEmpty => Err("body not empty".into()),
            Check::BodyExact(want) if self.body == want.as_bytes() => Ok(()),
            Check::BodyExact(want) => Err(format!("body differs from {want:?}")),
            Check::BodyJson(want) if body_json()? == want => Ok(()),
            Check::BodyJson(want) => Err(format!("body JSON differs from {want}")),
            Check::Json(ptr, want) => {
                let got = at(ptr)?;
                if json_eq(got, want) {
                    Ok(())
                } else {
                    Err(format!("{ptr} is {got}, want {want}"))
                }
            }
            Check::JsonAbsent(ptr) => match body_json()?.pointer(ptr) {
                None => Ok(()),
                Some(v) => Err(format!("{ptr} present ({v}), must be absent")),
            },
            Check::JsonPrefix(ptr, want) => match at(ptr)?.as_str() {
                Some(s) if s.starts_with(want.as_str()) => Ok(()),
                _ => Err(format!("{ptr} is {}, want prefix {want:?}", at(ptr)?)),
            },
            Check::JsonContains(ptr, want) => match at(ptr)?.as_str() {
                Some(s) if s.contains(want.as_str()) => Ok(()),
                _ => Err(format!(
                    "{ptr} is {}, want it to contain {want:?}",
                    at(ptr)?
                )),
            },
            Check::JsonType(ptr, want) => {
                let v = at(ptr)?;
                let ok = match want.as_str() {
                    "string" => v.is_string(),
                    "number" => v.is_number(),
                    "integer" => v.is_i64() || v.is_u64(),
                    "boolean" => v.is_boolean(),
                    "null" => v.is_null(),
                    "array" => v.is_array(),
                    "object" => v.is_object(),
                    other => return Err(format!("unknown type {other}")),
                };
                if ok {
                    Ok(())
                } else {
                    Err(format!("{ptr} is {v}, want a {want}"))
                }
            }
            Check::JsonLen(ptr, want) => {
                let v = at(ptr)?;
                let len = match v {
                    Value::Array(a) => a.len(),
                    Value::Object(o) => o.len(),
                    Value::String(s) => s.chars().count(),
                    _ => return Err(format!("{ptr} has no length ({v})")),
                };
                if len == *want {
                    Ok(())
                } else {
                    Err(format!("{ptr} has length {len}, want {want}"))
                }
            }
            Check::JsonPretty(text_ptr, value_ptr) => {
                let text = at(text_ptr)?
                    .as_str()
                    .ok_or_else(|| format!("{text_ptr} is not a string"))?;
                let want =
                    serde_json::to_string_pretty(at(value_ptr)?).map_err(|e| e.to_string())?;
                if text == want {
                    Ok(())
                } else {
                    Err(format!(
                        "{text_ptr} is not {value_ptr} pretty-printed:\n{text}\n---\n{want}"
                    ))
                }
            }
        }
    }
}

/// JSON equality where numbers compare by value (`42` equals `42.0`).
fn json_eq(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => x == y || x.as_f64() == y.as_f64(),
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(a, b)| json_eq(a, b))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .all(|(k, v)| y.get(k).is_some_and(|w| json_eq(v, w)))
        }
        _ => a == b,
    }
}

fn dechunk(mut rest: &[u8]) -> Result<(Vec<u8>, usize), String> {
    let total = rest.len();
    let mut body = Vec::new();
    loop {
        let eol = rest
            .windows(2)
            .position(|w| w == b"\r\n")
            .ok_or("chunk size line not terminated")?;
        let line = std::str::from_utf8(&rest[..eol]).map_err(|e| e.to_string())?;
        let size = usize::from_str_radix(line.split(';').next().unwrap_or_default().trim(), 16)
            .map_err(|_| format!("bad chunk size {line:?}"))?;
        rest = &rest[eol + 2..];
        if size == 0 {
            let end = rest
                .windows(2)
                .position(|w| w == b"\r\n")
                .ok_or("chunked trailer not terminated")?;
            rest = &rest[end + 2..];
            return Ok((body, total - rest.len()));
        }
        body.extend_from_slice(rest.get(..size).ok_or("chunk shorter than its size")?);
        rest = rest.get(size + 2..).ok_or("chunk not terminated")?;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn parses_every_check() {
        let checks = parse_checks(
            "# comment\nstatus 200\nheader Content-Type: application/json\nheader Allow\n\
             no-header Mcp-Session-Id\nbody-json {\"a\":\n  1}\njson /a 1\njson-absent /b\n\
             json-prefix /m \"Header\"\njson-type /a integer\njson-len /a 1\n\
             json-pretty /t /v\nbody-empty\nbody-exact x y\nheader-prefix W: Bearer\n",
        )
        .unwrap();
        assert_eq!(checks.len(), 14);
        assert_eq!(checks[4], Check::BodyJson(json!({"a": 1})));
        assert!(parse_checks("frobnicate 1").is_err());
        assert!(parse_checks("json a 1").is_err());
    }

    #[test]
    fn response_and_checks() {
        let body = r#"{"t":"{\n  \"a\": 1\n}","v":{"a":1}}"#;
        let raw = format!(
            "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nDate: x\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        );
        let r = HttpResponse::parse(raw.as_bytes()).unwrap();
        let j = r.json();
        let ok = |c: Check| r.check(&c, j.as_ref());
        assert!(ok(Check::Status(200)).is_ok());
        assert!(ok(Check::Status(201)).is_err());
        assert!(
            ok(Check::Header(
                "content-type".into(),
                Some("application/json".into())
            ))
            .is_ok()
        );
        assert!(ok(Check::NoHeader("Date".into())).is_ok());
        assert!(ok(Check::NoHeader("Content-Type".into())).is_err());
        assert!(ok(Check::JsonPretty("/t".into(), "/v".into())).is_ok());
        assert!(ok(Check::Json("/v/a".into(), json!(1.0))).is_ok());
        assert!(ok(Check::JsonAbsent("/v/a".into())).is_err());
        assert!(
            HttpResponse::parse(b"HTTP/1.1 202 Accepted\r\nContent-Length: 0\r\n\r\nX").is_err()
        );
    }

    #[test]
    fn chunked_responses() {
        let raw = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n";
        assert_eq!(HttpResponse::parse(raw).unwrap().body, b"{}");
    }
}
