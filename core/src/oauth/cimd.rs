//! Client ID Metadata Documents (draft-ietf-oauth-client-id-metadata-document, the
//! MCP 2025-11-25 way to name a client without registering it): the client id is an
//! `https` URL, and the JSON document there describes the client. The adapter fetches
//! it ([`super::Backend::client_metadata`]: address rules, size and time limits,
//! cache); this module decides which URLs may be fetched and what a document must say.

use serde_json::{Value, json};

use super::{OAuthError, redirect};

/// Longest client id URL.
pub const MAX_URL: usize = 2048;

/// Whether `url` may be a client id: `https`, a host, a path other than `/`, no
/// fragment, no user info, no `.`/`..` segments, printable ASCII.
pub fn url_ok(url: &str) -> bool {
    let Some(rest) = url.strip_prefix("https://") else {
        return false;
    };
    if url.len() > MAX_URL || url.contains('#') || !url.bytes().all(|b| b.is_ascii_graphic()) {
        return false;
    }
    let (authority, path) = match rest.find('/') {
        Some(i) => rest.split_at(i),
        None => return false,
    };
    if authority.is_empty() || authority.contains('@') || path == "/" {
        return false;
    }
    let path = path.split('?').next().unwrap_or_default();
    !path.split('/').any(|seg| seg == "." || seg == "..")
}

/// The client a fetched document describes, in the shape of a registered one; refuses a
/// document that does not name itself, has no usable redirect URI, or asks for a
/// client secret.
pub fn client(url: &str, doc: &Value) -> Result<Value, OAuthError> {
    let bad = OAuthError::InvalidClient;
    let obj = doc.as_object().ok_or(OAuthError::InvalidClient(
        "the client's metadata document is not a JSON object",
    ))?;
    if obj.get("client_id").and_then(Value::as_str) != Some(url) {
        return Err(bad(
            "the client's metadata document does not name its own URL as client_id",
        ));
    }
    if obj.contains_key("client_secret") || obj.contains_key("client_secret_expires_at") {
        return Err(bad("a client metadata document may not carry a secret"));
    }
    match obj
        .get("token_endpoint_auth_method")
        .and_then(Value::as_str)
    {
        None | Some("none") => {}
        Some(_) => {
            return Err(bad(
                "this server takes public clients only (token_endpoint_auth_method none)",
            ));
        }
    }
    let uris: Vec<String> = obj
        .get("redirect_uris")
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .filter(|u| redirect::registrable(u))
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default();
    if uris.is_empty() {
        return Err(bad(
            "the client's metadata document lists no usable redirect URI",
        ));
    }
    let mut out = json!({
        "client_id": url,
        "redirect_uris": uris,
        "token_endpoint_auth_method": "none",
    });
    if let Some(name) = obj.get("client_name").and_then(Value::as_str) {
        out["client_name"] = Value::String(name.chars().take(200).collect());
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn which_urls_may_be_client_ids() {
        assert!(url_ok("https://app.example.com/oauth/client.json"));
        assert!(url_ok("https://app.example.com:8443/c?v=1"));
        for bad in [
            "http://app.example.com/client.json",
            "https://app.example.com",
            "https://app.example.com/",
            "https://app.example.com/c#x",
            "https://user@app.example.com/c",
            "https://app.example.com/a/../c",
            "https://app.example.com/a/./c",
            "https:///c",
            "https://app.example.com/c d",
        ] {
            assert!(!url_ok(bad), "{bad}");
        }
    }

    #[test]
    fn what_a_document_must_say() {
        let url = "https://app.example.com/client.json";
        let good = json!({ "client_id": url, "client_name": "App", "redirect_uris": ["http://127.0.0.1:3000/cb"] });
        let c = client(url, &good).unwrap();
        assert_eq!(c["client_name"], "App");
        assert_eq!(c["redirect_uris"], json!(["http://127.0.0.1:3000/cb"]));
        for (doc, why) in [
            (
                json!({ "client_id": "https://other.example/c", "redirect_uris": ["https://a.example/cb"] }),
                "another id",
            ),
            (
                json!({ "client_id": url, "redirect_uris": ["http://a.example/cb"] }),
                "no usable redirect",
            ),
            (
                json!({ "client_id": url, "redirect_uris": ["https://a.example/cb"], "client_secret": "s" }),
                "secret",
            ),
            (
                json!({ "client_id": url, "redirect_uris": ["https://a.example/cb"], "token_endpoint_auth_method": "private_key_jwt" }),
                "confidential",
            ),
            (json!([url]), "not an object"),
        ] {
            assert!(client(url, &doc).is_err(), "{why}");
        }
    }
}
