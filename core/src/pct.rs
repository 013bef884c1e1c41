//! Percent-decoding (RFC 3986 §2.1), the one decoder of resource URIs, REST paths and
//! query strings.
//!
//! Strict on purpose: `%` must be followed by exactly two hex digits (`u8::from_str_radix`
//! would also take a sign, so `%+5` would become U+0005), and the result must be UTF-8.
//! Anything else is refused, never passed through, so that two layers can never disagree
//! on what a URI names.

/// Decodes `s`; `+` means a space only in a query string (`plus_is_space`), never in a
/// path or a URI template variable.
pub(crate) fn decode(s: &str, plus_is_space: bool) -> Option<String> {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'%' => {
                let hi = hex(*b.get(i + 1)?)?;
                let lo = hex(*b.get(i + 2)?)?;
                out.push(hi << 4 | lo);
                i += 3;
            }
            b'+' if plus_is_space => {
                out.push(b' ');
                i += 1;
            }
            c => {
                out.push(c);
                i += 1;
            }
        }
    }
    String::from_utf8(out).ok()
}

fn hex(c: u8) -> Option<u8> {
    match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'a'..=b'f' => Some(c - b'a' + 10),
        b'A'..=b'F' => Some(c - b'A' + 10),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::decode;

    #[test]
    fn escapes_are_exactly_two_hex_digits() {
        assert_eq!(decode("a%2Fb%c3%a9", false).as_deref(), Some("a/bé"));
        for bad in ["%+5", "%-1", "% 5", "%5", "%", "%g0", "%ff"] {
            assert_eq!(decode(bad, false), None, "{bad}");
        }
    }

    #[test]
    fn plus_is_a_space_only_in_queries() {
        assert_eq!(decode("a+b", true).as_deref(), Some("a b"));
        assert_eq!(decode("a+b", false).as_deref(), Some("a+b"));
        assert_eq!(decode("a%2Bb", true).as_deref(), Some("a+b"));
    }
}
