//! Property: any valid request sequence gives the same requests and output bytes whether
//! delivered whole, one byte at a time, or split at random points.

use proptest::prelude::*;

use super::*;

#[derive(Clone, Debug)]
enum Framing {
    None,
    Length,
    /// Chunk sizes (the body is cut into these, the remainder in a last chunk).
    Chunked(Vec<usize>),
}

#[derive(Clone, Debug)]
struct Spec {
    method: &'static str,
    target: String,
    http10: bool,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
    framing: Framing,
    expect: bool,
    trailers: Vec<(String, String)>,
}

impl Spec {
    fn encode(&self, out: &mut Vec<u8>) {
        let version = if self.http10 { "1.0" } else { "1.1" };
        out.extend_from_slice(
            format!("{} {} HTTP/{version}\r\n", self.method, self.target).as_bytes(),
        );
        if self.http10 {
            out.extend_from_slice(b"Connection: keep-alive\r\n");
        } else {
            out.extend_from_slice(b"Host: p\r\n");
        }
        for (n, v) in &self.headers {
            out.extend_from_slice(format!("{n}: {v}\r\n").as_bytes());
        }
        if self.expect {
            out.extend_from_slice(b"Expect: 100-continue\r\n");
        }
        match &self.framing {
            Framing::None => out.extend_from_slice(b"\r\n"),
            Framing::Length => {
                out.extend_from_slice(
                    format!("Content-Length: {}\r\n\r\n", self.body.len()).as_bytes(),
                );
                out.extend_from_slice(&self.body);
            }
            Framing::Chunked(sizes) => {
                out.extend_from_slice(b"Transfer-Encoding: chunked\r\n\r\n");
                let mut rest = &self.body[..];
                for &size in sizes.iter().chain([usize::MAX].iter()) {
                    let (chunk, tail) = rest.split_at(size.min(rest.len()));
                    if !chunk.is_empty() {
                        out.extend_from_slice(format!("{:X};e=1\r\n", chunk.len()).as_bytes());
                        out.extend_from_slice(chunk);
                        out.extend_from_slice(b"\r\n");
                    }
                    rest = tail;
                }
                out.extend_from_slice(b"0\r\n");
                for (n, v) in &self.trailers {
                    out.extend_from_slice(format!("{n}: {v}\r\n").as_bytes());
                }
                out.extend_from_slice(b"\r\n");
            }
        }
    }
}

fn field() -> impl Strategy<Value = (String, String)> {
    ("X-[A-Za-z0-9-]{0,12}", "[!-~]([ -~]{0,20}[!-~])?")
}

fn spec() -> impl Strategy<Value = Spec> {
    let method = prop::sample::select(vec!["GET", "POST", "PUT", "DELETE", "HEAD", "OPTIONS"]);
    let framing = prop_oneof![
        Just(Framing::None),
        Just(Framing::Length),
        prop::collection::vec(1usize..40, 0..5).prop_map(Framing::Chunked),
    ];
    (
        method,
        "/[a-z0-9/._~-]{0,16}(\\?[a-z0-9=&]{0,10})?",
        any::<bool>(),
        prop::collection::vec(field(), 0..6),
        prop::collection::vec(any::<u8>(), 0..120),
        framing,
        any::<bool>(),
        prop::collection::vec(field(), 0..3),
    )
        .prop_map(
            |(method, target, http10, headers, body, framing, expect, trailers)| {
                let framing = match framing {
                    Framing::Chunked(_) if http10 => Framing::Length,
                    Framing::None if !body.is_empty() => Framing::Length,
                    f => f,
                };
                Spec {
                    method,
                    target,
                    http10,
                    headers,
                    body,
                    framing,
                    expect,
                    trailers,
                }
            },
        )
}

/// Bytes that matter to HTTP framing, for mutations.
const INTERESTING: &[u8] = b"\r\n\0 \t:;,0123456789aAfFgG-+xX\x7f\x80\xff";

fn transcript(pieces: &[&[u8]]) -> Vec<Event> {
    drive(
        &mut conn_with(Limits::default()),
        pieces.iter().copied(),
        true,
        &mut echo,
    )
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 128, ..ProptestConfig::default() })]

    #[test]
    fn delivery_does_not_change_anything(
        specs in prop::collection::vec(spec(), 1..5),
        cuts in prop::collection::vec(any::<prop::sample::Index>(), 0..8),
    ) {
        let mut input = Vec::new();
        for s in &specs {
            s.encode(&mut input);
        }
        let whole = transcript(&[&input]);

        // The requests are exactly the specs.
        let reqs = requests(&whole);
        prop_assert_eq!(reqs.len(), specs.len());
        for (r, s) in reqs.iter().zip(&specs) {
            prop_assert_eq!(r.method(), s.method);
            prop_assert_eq!(r.target(), s.target.as_str());
            prop_assert_eq!(r.version(), u8::from(!s.http10));
            prop_assert!(r.keep_alive());
            prop_assert_eq!(r.body(), s.body.as_slice());
            let custom: Vec<(String, String)> = r
                .headers()
                .filter(|h| h.name.starts_with("X-"))
                .map(|h| (h.name.to_owned(), String::from_utf8(h.value.to_vec()).unwrap()))
                .collect();
            prop_assert_eq!(&custom, &s.headers);
        }
        let continues = whole.iter().filter(|e| matches!(e, Event::Transmit(_))).count();
        let want = specs
            .iter()
            .filter(|s| s.expect && !s.http10 && !matches!(s.framing, Framing::None)
                && (!s.body.is_empty() || matches!(s.framing, Framing::Chunked(_))))
            .count();
        prop_assert_eq!(continues, want);
        prop_assert_eq!(whole.last(), Some(&Event::Close));

        // Byte at a time.
        let bytes: Vec<&[u8]> = input.chunks(1).collect();
        prop_assert_eq!(&transcript(&bytes), &whole);

        // Random split points.
        let mut points: Vec<usize> = cuts.iter().map(|i| i.index(input.len() + 1)).collect();
        points.sort_unstable();
        let mut pieces = Vec::new();
        let mut at = 0;
        for p in points {
            pieces.push(&input[at..p]);
            at = p;
        }
        pieces.push(&input[at..]);
        prop_assert_eq!(&transcript(&pieces), &whole);
    }

    #[test]
    fn mutated_requests_never_panic_and_split_agrees(
        specs in prop::collection::vec(spec(), 1..4),
        edits in prop::collection::vec(
            (any::<prop::sample::Index>(), 0u8..3, prop::sample::select(INTERESTING.to_vec())),
            1..6,
        ),
        cuts in any::<[u16; 3]>(),
    ) {
        let mut input = Vec::new();
        for s in &specs {
            s.encode(&mut input);
        }
        for (at, op, byte) in edits {
            let i = at.index(input.len() + 1);
            match op {
                0 => input.insert(i, byte),
                1 if i < input.len() => { input.remove(i); }
                _ if i < input.len() => input[i] = byte,
                _ => input.push(byte),
            }
        }
        crate::fuzzing::decode(&input);
        let mut data = vec![3];
        for c in cuts {
            data.extend_from_slice(&c.to_be_bytes());
        }
        data.extend_from_slice(&input);
        crate::fuzzing::split(&data);
    }

    #[test]
    fn arbitrary_bytes_never_panic(data in prop::collection::vec(any::<u8>(), 0..300)) {
        crate::fuzzing::decode(&data);
        crate::fuzzing::split(&data);
    }
}

/// Every input of the committed corpora of the codec's targets (`fuzz/corpus/codec_*`,
/// minimized after each campaign), through the fuzz bodies: what a campaign reached stays
/// reached at every `cargo test`.
/// A fuzz target: its corpus folder and its body.
type Target = (&'static str, fn(&[u8]));

#[test]
fn the_committed_corpora_replay_cleanly() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/corpus");
    let targets: [Target; 2] = [
        ("codec_decode", crate::fuzzing::decode),
        ("codec_split", crate::fuzzing::split),
    ];
    for (target, run) in targets {
        let dir = root.join(target);
        let mut n = 0;
        for entry in std::fs::read_dir(&dir).expect("the corpus is committed") {
            let data = std::fs::read(entry.expect("entry").path()).expect("input");
            run(&data);
            n += 1;
        }
        assert!(n > 0, "{}: an empty corpus", dir.display());
    }
}
