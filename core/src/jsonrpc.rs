//! JSON-RPC 2.0 framing: one message per body, no batches.

use serde_json::{Map, Value, json};

use crate::error::ProtocolError;

/// One parsed JSON-RPC request or notification.
#[derive(Clone, Debug, PartialEq)]
pub struct Message {
    /// `id` (a string or a number; `0` and negatives are fine); `None` for a notification.
    pub id: Option<Value>,
    /// `method`.
    pub method: String,
    /// `params`, when present (always an object).
    pub params: Option<Map<String, Value>>,
}

impl Message {
    /// Whether this is a notification (no `id`).
    pub fn is_notification(&self) -> bool {
        self.id.is_none()
    }

    /// `params._meta`, when it is an object.
    pub fn meta(&self) -> Option<&Map<String, Value>> {
        self.params.as_ref()?.get("_meta")?.as_object()
    }
}

/// A refused body: the error, and the request id when it could be read.
pub type Refusal = Box<(ProtocolError, Option<Value>)>;

/// Parses a body into one message.
pub fn parse(body: &[u8]) -> Result<Message, Refusal> {
    // serde_json refuses nesting deeper than 128 levels: deep JSON is a parse error,
    // never a stack overflow.
    let value: Value =
        serde_json::from_slice(body).map_err(|_| Box::new((ProtocolError::Parse, None)))?;
    let mut obj = match value {
        Value::Object(o) => o,
        Value::Array(_) => return Err(Box::new((ProtocolError::Batch, None))),
        _ => {
            return Err(Box::new((
                ProtocolError::InvalidRequest("the body must be a JSON-RPC object"),
                None,
            )));
        }
    };
    let id = match obj.remove("id") {
        None => None,
        Some(v @ (Value::String(_) | Value::Number(_))) => Some(v),
        Some(_) => {
            return Err(Box::new((
                ProtocolError::InvalidRequest("id must be a string or a number"),
                None,
            )));
        }
    };
    let invalid = |why| Err(Box::new((ProtocolError::InvalidRequest(why), id.clone())));
    if obj.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
        return invalid("jsonrpc must be \"2.0\"");
    }
    let method = match obj.remove("method") {
        Some(Value::String(m)) => m,
        Some(_) => return invalid("method must be a string"),
        None => return invalid("not a request or notification"),
    };
    let params = match obj.remove("params") {
        None => None,
        Some(Value::Object(p)) => Some(p),
        Some(_) => return invalid("params must be an object"),
    };
    Ok(Message { id, method, params })
}

/// The `id` of a body, for refusals that happen before the body is parsed as a message
/// (401, 403, 415, 429, 503 carry "the id of the request when it could be read").
///
/// Scans the body once without building it (other members are skipped, not allocated).
pub fn peek_id(body: &[u8]) -> Option<Value> {
    #[derive(serde::Deserialize)]
    struct IdOnly {
        id: Option<Value>,
    }
    match serde_json::from_slice::<IdOnly>(body).ok()?.id {
        Some(v @ (Value::String(_) | Value::Number(_))) => Some(v),
        _ => None,
    }
}

/// Serializes a success response.
pub fn success(id: &Value, result: &Value) -> Vec<u8> {
    let mut out = head(id);
    write_result(&mut out, result);
    out
}

/// A success response's bytes up to its `id` included: answers kept whole after that
/// point (`tools/list`, `server/discover`) are appended to it.
pub(crate) fn head(id: &Value) -> Vec<u8> {
    let mut out = Vec::with_capacity(256);
    out.extend_from_slice(b"{\"jsonrpc\":\"2.0\",\"id\":");
    write_json(&mut out, id);
    out
}

/// Appends what follows a success response's `id`: `,"result":<result>}`.
pub(crate) fn write_result(out: &mut Vec<u8>, result: &Value) {
    out.extend_from_slice(b",\"result\":");
    write_json(out, result);
    out.push(b'}');
}

/// Serializes an error response (`id` null when it could not be read).
pub fn error(id: Option<&Value>, code: i32, message: &str, data: Option<Value>) -> Vec<u8> {
    let mut e = json!({ "code": code, "message": message });
    if let Some(d) = data {
        e["data"] = d;
    }
    let body = json!({ "jsonrpc": "2.0", "id": id.cloned().unwrap_or(Value::Null), "error": e });
    serde_json::to_vec(&body).unwrap_or_default()
}

/// Appends the compact serialization of `v`.
pub(crate) fn write_json<T: serde::Serialize + ?Sized>(out: &mut Vec<u8>, v: &T) {
    // Serializing a `Value` or our own structs into a Vec cannot fail.
    let _ = serde_json::to_writer(&mut *out, v);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_may_be_strings_zero_or_negative() {
        for id in [r#""abc""#, "0", "-5", "1.5"] {
            let body = format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"ping"}}"#);
            let m = parse(body.as_bytes()).unwrap();
            assert_eq!(m.id.unwrap().to_string(), id);
        }
    }

    #[test]
    fn peeking_the_id() {
        assert_eq!(
            peek_id(br#"{"jsonrpc":"2.0","id":"a","method":"x","params":{"big":[1,2,3]}}"#),
            Some(json!("a"))
        );
        assert_eq!(peek_id(br#"{"id":null}"#), None);
        assert_eq!(peek_id(br#"[{"id":1}]"#), None);
        assert_eq!(peek_id(b"not json"), None);
    }

    #[test]
    fn refusals() {
        assert_eq!(parse(b"{").unwrap_err().0, ProtocolError::Parse);
        assert_eq!(parse(b"[]").unwrap_err().0, ProtocolError::Batch);
        assert!(matches!(
            parse(b"1").unwrap_err().0,
            ProtocolError::InvalidRequest(_)
        ));
        let (e, id) = *parse(br#"{"jsonrpc":"1.0","id":7,"method":"x"}"#).unwrap_err();
        assert!(matches!(e, ProtocolError::InvalidRequest(_)));
        assert_eq!(id, Some(json!(7)));
        assert!(parse(br#"{"jsonrpc":"2.0","id":null,"method":"x"}"#).is_err());
        assert!(parse(br#"{"jsonrpc":"2.0","id":1,"method":"x","params":[1]}"#).is_err());
        assert!(parse(br#"{"jsonrpc":"2.0","id":1,"result":{}}"#).is_err());
        let deep = "[".repeat(100_000);
        assert_eq!(parse(deep.as_bytes()).unwrap_err().0, ProtocolError::Parse);
    }
}
