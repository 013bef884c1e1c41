//! A kept answer sent in gzip (RFC 1952) to clients that accept it, compressed once.
//!
//! Why: a `tools/list` answer is about 100 KB, and on loopback most of its cost was the
//! kernel copying those bytes (`docs/decisions.md`, "A kept tools/list in gzip"). The
//! official SDK clients ask for gzip (`fetch` and `httpx` send `Accept-Encoding: gzip,
//! deflate`), and the answer compresses about sevenfold. Compressing per request would
//! cost more than the copy it saves, so the part after the request's `id` is deflated
//! once and kept ([`Gzipped`]); per request, in order: the gzip header, the `id`'s part
//! as one stored (uncompressed, byte-aligned) deflate block that is not the last, the
//! kept deflate blocks (a raw deflate stream starts on a byte boundary and does not
//! refer back past its own start, so it follows a stored block as it is; its last block
//! ends the stream), then the CRC-32 of the whole text, combined from the part's and the
//! kept one's, and its length. The text decoded is byte for byte the identity answer.

use std::io::Write as _;

use crc32fast::Hasher;
use flate2::Compression;
use flate2::write::DeflateEncoder;

use crate::request::Request;

/// The gzip header: magic, deflate, no flags, no modification time, no extra flags,
/// unknown OS. A fixed header keeps the bytes a function of the text alone.
const HEADER: [u8; 10] = [0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0xff];

/// The text after a request's `id`, deflated once.
pub(crate) struct Gzipped {
    /// A raw deflate stream of the text, its last block marked final (`None`: the
    /// encoder failed, which writing to a `Vec` does not; the answer then goes as it is).
    deflated: Option<Vec<u8>>,
    /// The CRC-32 of the text.
    crc: Hasher,
    /// The text's length.
    len: u64,
}

impl Gzipped {
    /// Deflates `text` at the best ratio: it is done once per kept answer.
    pub(crate) fn of(text: &[u8]) -> Self {
        let mut enc = DeflateEncoder::new(Vec::with_capacity(text.len() / 4), Compression::best());
        let deflated = enc.write_all(text).and_then(|()| enc.finish()).ok();
        let mut crc = Hasher::new();
        crc.update(text);
        Self {
            deflated,
            crc,
            len: text.len() as u64,
        }
    }

    /// The gzip member of `head` followed by the kept text; `None` when `head` does not
    /// fit one stored block, whose `LEN` is 16 bits (an `id` of 64 KiB or more: the
    /// answer goes as it is).
    pub(crate) fn after(&self, head: &[u8]) -> Option<Vec<u8>> {
        let deflated = self.deflated.as_deref()?;
        let len = u16::try_from(head.len()).ok()?;
        let mut out = Vec::with_capacity(HEADER.len() + 5 + head.len() + deflated.len() + 8);
        out.extend_from_slice(&HEADER);
        // BFINAL 0, BTYPE 00 (stored), then padding to the byte boundary: one zero byte.
        out.push(0);
        out.extend_from_slice(&len.to_le_bytes());
        out.extend_from_slice(&(!len).to_le_bytes());
        out.extend_from_slice(head);
        out.extend_from_slice(deflated);
        let mut crc = Hasher::new();
        crc.update(head);
        crc.combine(&self.crc);
        let total = head.len() as u64 + self.len;
        out.extend_from_slice(&crc.finalize().to_le_bytes());
        // ISIZE: the length modulo 2^32.
        out.extend_from_slice(&(total as u32).to_le_bytes());
        Some(out)
    }
}

/// Whether the request accepts the `gzip` content coding (RFC 9110, 12.5.3): named
/// (or `x-gzip`), or covered by `*`, with a weight above zero; a coding named with
/// `q=0` is refused even when `*` is accepted.
pub(crate) fn accepted(req: &Request<'_>) -> bool {
    let mut named = None;
    let mut any = None;
    for value in req.header_values("accept-encoding") {
        let Ok(value) = std::str::from_utf8(value) else {
            continue;
        };
        for item in value.split(',') {
            let mut parts = item.split(';');
            let coding = parts.next().unwrap_or_default().trim();
            let weighted = parts.all(|p| weight(p) != Some(false));
            if coding.eq_ignore_ascii_case("gzip") || coding.eq_ignore_ascii_case("x-gzip") {
                named = Some(named.unwrap_or(false) || weighted);
            } else if coding == "*" {
                any = Some(any.unwrap_or(false) || weighted);
            }
        }
    }
    named.or(any).unwrap_or(false)
}

/// For a `q=` parameter, whether its weight is above zero (`None`: not a weight, or
/// not one that reads as a number; an unreadable weight does not refuse).
fn weight(param: &str) -> Option<bool> {
    let (name, value) = param.split_once('=')?;
    if !name.trim().eq_ignore_ascii_case("q") {
        return None;
    }
    let q: f32 = value.trim().parse().ok()?;
    Some(q > 0.0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::request::Header;

    fn accepts(values: &[&str]) -> bool {
        let headers: Vec<Header<'_>> = values
            .iter()
            .map(|v| Header {
                name: "Accept-Encoding",
                value: v.as_bytes(),
            })
            .collect();
        accepted(&Request {
            method: "POST",
            target: "/",
            headers: &headers,
            body: b"",
        })
    }

    /// Named, wildcard, weights, case and repeated fields, as RFC 9110 reads them.
    #[test]
    fn gzip_is_accepted_as_the_header_says() {
        let yes = [
            &["gzip"][..],
            &["gzip, deflate"],
            &["deflate, GZIP;q=0.5"],
            &["x-gzip"],
            &["*"],
            &["br;q=1.0, *;q=0.1"],
            &["identity", "gzip"],
            &["gzip;q=nonsense"],
        ];
        for v in yes {
            assert!(accepts(v), "{v:?}");
        }
        let no = [
            &[][..],
            &["identity"],
            &["deflate, br"],
            &["gzip;q=0"],
            &["gzip; q=0.000"],
            &["*;q=0"],
            &["*, gzip;q=0"],
            &["gzipped"],
        ];
        for v in no {
            assert!(!accepts(v), "{v:?}");
        }
    }

    /// The member is a valid gzip of the head and the text, whatever the text's size
    /// (several deflate blocks) and with an empty head.
    #[test]
    fn a_member_decodes_to_head_then_text() {
        use std::io::Read as _;
        let big: Vec<u8> = (0..300_000u32)
            .flat_map(|i| (i % 251).to_le_bytes())
            .collect();
        for text in [&b""[..], b"{\"x\":1}}", &big] {
            let z = Gzipped::of(text);
            for head in [&b""[..], b"{\"jsonrpc\":\"2.0\",\"id\":7"] {
                let member = z.after(head).expect("a short head");
                let mut out = Vec::new();
                flate2::read::GzDecoder::new(&member[..])
                    .read_to_end(&mut out)
                    .expect("a gzip member");
                assert_eq!(out, [head, text].concat());
            }
        }
        assert!(Gzipped::of(b"x").after(&[b'a'; 65_536]).is_none());
    }
}
