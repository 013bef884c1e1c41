//! The signed, single-purpose unsubscribe link of every e-mail (`List-Unsubscribe`,
//! RFC 8058 one-click), and the small page it answers.
//!
//! The link is `{public_url}/channels/unsubscribe?t=v1.{kid}.{payload}.{mac}`:
//! `payload` is base64url of `{org}:{contact point id}`, `mac` base64url of
//! HMAC-SHA256 over `unsubscribe\0{kid}\0{payload}` with a key derived from the
//! `[confirmation]` key `kid` (the keys every replica shares). The label makes the key
//! good for nothing else; the link has no expiry (a debtor may click an old e-mail), and
//! rotating `[confirmation]` keys retires the links of the keys dropped.
//!
//! `GET` answers a page with a one-button form (mail scanners that fetch links must not
//! opt anyone out); `POST` (the form, or a mail client's RFC 8058
//! `List-Unsubscribe=One-Click`) opts the contact point out at once and answers a page
//! saying so. A bad or unknown link answers `400` and changes nothing.

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD as B64;
use hmac::{Hmac, Mac};
use sha2::Sha256;
use subtle::ConstantTimeEq;
use zeroize::Zeroizing;

/// The path of the link.
pub(crate) const PATH: &str = "/channels/unsubscribe";

/// Signs and checks unsubscribe links.
#[derive(Clone)]
pub(crate) struct Links {
    public_url: String,
    /// `(kid, derived key)`, the first signs.
    keys: Vec<(String, Zeroizing<Vec<u8>>)>,
}

impl std::fmt::Debug for Links {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Links")
            .field("public_url", &self.public_url)
            .finish_non_exhaustive()
    }
}

impl Links {
    /// Links under `public_url`, keyed by the `[confirmation]` keys (first signs).
    pub(crate) fn new(public_url: &str, keys: &dunning_core::Keys) -> Self {
        let keys = keys
            .request_state
            .iter()
            .map(|k| {
                let mut mac = <Hmac<Sha256> as Mac>::new_from_slice(&k.secret)
                    .unwrap_or_else(|_| unreachable!("HMAC takes any key length"));
                mac.update(b"kobana-dunning unsubscribe link key");
                (
                    k.id.clone(),
                    Zeroizing::new(mac.finalize().into_bytes().to_vec()),
                )
            })
            .collect();
        Self {
            public_url: public_url.trim_end_matches('/').to_owned(),
            keys,
        }
    }

    fn mac(key: &[u8], kid: &str, payload: &str) -> Vec<u8> {
        let mut mac = <Hmac<Sha256> as Mac>::new_from_slice(key)
            .unwrap_or_else(|_| unreachable!("HMAC takes any key length"));
        mac.update(b"unsubscribe\0");
        mac.update(kid.as_bytes());
        mac.update(b"\0");
        mac.update(payload.as_bytes());
        mac.finalize().into_bytes().to_vec()
    }

    /// The token of contact point `cp` of `org`.
    pub(crate) fn token(&self, org: &str, cp: &str) -> String {
        let Some((kid, key)) = self.keys.first() else {
            return String::new();
        };
        let payload = B64.encode(format!("{org}:{cp}"));
        let mac = B64.encode(Self::mac(key, kid, &payload));
        format!("v1.{kid}.{payload}.{mac}")
    }

    /// The whole link.
    pub(crate) fn url(&self, org: &str, cp: &str) -> String {
        format!("{}{PATH}?t={}", self.public_url, self.token(org, cp))
    }

    /// The `(org, contact point)` a token names, when its signature holds.
    pub(crate) fn verify(&self, token: &str) -> Option<(String, String)> {
        let mut parts = token.split('.');
        let (Some("v1"), Some(kid), Some(payload), Some(mac), None) = (
            parts.next(),
            parts.next(),
            parts.next(),
            parts.next(),
            parts.next(),
        ) else {
            return None;
        };
        let (_, key) = self.keys.iter().find(|(k, _)| k == kid)?;
        let given = B64.decode(mac).ok()?;
        let want = Self::mac(key, kid, payload);
        if !bool::from(given.ct_eq(&want)) {
            return None;
        }
        let text = String::from_utf8(B64.decode(payload).ok()?).ok()?;
        let (org, cp) = text.split_once(':')?;
        Some((org.to_owned(), cp.to_owned()))
    }
}

/// The token of a request target's `t` parameter, or of a form body's.
pub(crate) fn token_of(query: Option<&str>) -> Option<String> {
    query?
        .split('&')
        .find_map(|kv| kv.strip_prefix("t="))
        .map(super::form::decode)
}

/// A small HTML page.
pub(crate) fn page(title: &str, body_html: &str) -> Vec<u8> {
    format!(
        "<!doctype html><html lang=\"pt-BR\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width\"><title>{title}</title></head>\
         <body style=\"font-family:sans-serif;max-width:32em;margin:3em auto\"><h1>{title}</h1>{body_html}</body></html>"
    )
    .into_bytes()
}

/// The page a `GET` of a valid link answers: one button.
pub(crate) fn confirm_page(token: &str) -> Vec<u8> {
    page(
        "Cancelar o recebimento de e-mails",
        &format!(
            "<p>Confirme para não receber mais mensagens de cobrança neste endereço de e-mail.</p>\
             <form method=\"post\" action=\"{PATH}?t={}\"><button type=\"submit\" name=\"List-Unsubscribe\" value=\"One-Click\">Cancelar o recebimento</button></form>",
            super::form::encode(token)
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use dunning_core::{Keys, StateKey};

    fn keys(ids: &[(&str, u8)]) -> Keys {
        Keys {
            request_state: ids
                .iter()
                .map(|(id, b)| StateKey {
                    id: (*id).into(),
                    secret: Zeroizing::new(vec![*b; 32]),
                })
                .collect(),
        }
    }

    #[test]
    fn a_link_names_its_contact_point_and_nothing_else_verifies() {
        let links = Links::new("https://mcp.example.com/", &keys(&[("k1", 1)]));
        let t = links.token("org-1", "cp-9");
        assert_eq!(links.verify(&t), Some(("org-1".into(), "cp-9".into())));
        assert!(
            links
                .url("org-1", "cp-9")
                .starts_with("https://mcp.example.com/channels/unsubscribe?t=v1.k1.")
        );
        // Another contact point's payload under this signature, a changed signature, a
        // key this server does not hold, garbage: refused.
        let forged = t.replace(&B64.encode("org-1:cp-9"), &B64.encode("org-1:cp-8"));
        assert_eq!(links.verify(&forged), None);
        let mut flipped = t.clone();
        flipped.pop();
        flipped.push(if t.ends_with('A') { 'B' } else { 'A' });
        assert_eq!(links.verify(&flipped), None);
        let other = Links::new("https://mcp.example.com", &keys(&[("k1", 2)]));
        assert_eq!(other.verify(&t), None);
        for junk in ["", "v1", "v1.k1.x.y", "v2.k1.a.b", "v1.k1.a.b.c"] {
            assert_eq!(links.verify(junk), None, "{junk}");
        }
        // Rotation: a server that signs with k2 still honours k1's links.
        let rotated = Links::new("https://mcp.example.com", &keys(&[("k2", 3), ("k1", 1)]));
        assert_eq!(rotated.verify(&t), Some(("org-1".into(), "cp-9".into())));
        assert!(rotated.token("o", "c").starts_with("v1.k2."));
    }
}
