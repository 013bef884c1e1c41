//! `application/x-www-form-urlencoded` (the SMS provider's requests and callbacks, the
//! unsubscribe form): `+` is a space, `%XX` a byte, pairs split on `&` then the first `=`.

/// Decodes one component (invalid escapes are kept as written; invalid UTF-8 is replaced).
pub(crate) fn decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'+' => out.push(b' '),
            b'%' if i + 2 < b.len() => {
                match std::str::from_utf8(&b[i + 1..i + 3])
                    .ok()
                    .and_then(|h| u8::from_str_radix(h, 16).ok())
                {
                    Some(v) => {
                        out.push(v);
                        i += 2;
                    }
                    None => out.push(b'%'),
                }
            }
            c => out.push(c),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Encodes one component: unreserved characters stay, a space is `+`, the rest `%XX`.
pub(crate) fn encode(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for &b in s.as_bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                out.push(char::from(b));
            }
            b' ' => out.push('+'),
            _ => out.push_str(&format!("%{b:02X}")),
        }
    }
    out
}

/// A form body's pairs, in order.
pub(crate) fn parse(body: &str) -> Vec<(String, String)> {
    body.split('&')
        .filter(|kv| !kv.is_empty())
        .map(|kv| {
            let (k, v) = kv.split_once('=').unwrap_or((kv, ""));
            (decode(k), decode(v))
        })
        .collect()
}

/// A form body of `pairs`.
pub(crate) fn body(pairs: &[(&str, &str)]) -> String {
    pairs
        .iter()
        .map(|(k, v)| format!("{}={}", encode(k), encode(v)))
        .collect::<Vec<_>>()
        .join("&")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_and_decodes_what_browsers_send() {
        let text = "Olá, Ñandú + 50% off & more=1";
        assert_eq!(decode(&encode(text)), text);
        assert_eq!(
            parse("a=1+2&b=%C3%B1&c&d=%ZZ%4"),
            vec![
                ("a".into(), "1 2".into()),
                ("b".into(), "ñ".into()),
                ("c".into(), String::new()),
                ("d".into(), "%ZZ%4".into()),
            ]
        );
        assert_eq!(
            body(&[("To", "+55 11"), ("Body", "a&b")]),
            "To=%2B55+11&Body=a%26b"
        );
    }
}
