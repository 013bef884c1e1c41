//! Definitions of what the server offers: tools, resources, templates and prompts.
//!
//! The domain hands a [`Catalog`] to `Server::new` once; the registry validates it
//! (schemas compiled, `x-mcp-header` annotations checked) and serves it filtered per caller.

use serde_json::{Map, Value, json};

use crate::principal::{Access, ScopeNames};

/// Behaviour hints of a tool. `openWorldHint` is always false here.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Annotations {
    /// The tool only reads.
    pub read_only: bool,
    /// The tool deletes, cancels, talks to a third party, ...: confirmation is required.
    pub destructive: bool,
    /// Repeating the call has the same effect.
    pub idempotent: bool,
    /// The tool reaches outside the product (never true in this product).
    pub open_world: bool,
}

impl Annotations {
    /// The wire object, including the display `title`.
    pub fn to_json(self, title: &str) -> Value {
        json!({
            "title": title,
            "readOnlyHint": self.read_only,
            "destructiveHint": self.destructive,
            "idempotentHint": self.idempotent,
            "openWorldHint": self.open_world,
        })
    }
}

/// The `/v1` REST twin of a tool: same handler, other surface.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Route {
    /// HTTP method (`GET`, `POST`, `PATCH`, `DELETE`).
    pub method: &'static str,
    /// Path template, e.g. `/v1/charges/{id}/cancel`; `{var}` segments become arguments.
    pub path: String,
}

/// One tool.
#[derive(Clone, Debug)]
pub struct ToolDef {
    /// Unique name, e.g. `dunning_charges_cancel`.
    pub name: String,
    /// Display title.
    pub title: String,
    /// What the tool does, for the model.
    pub description: String,
    /// JSON Schema 2020-12 of the arguments (root `type: object`).
    pub input_schema: Value,
    /// JSON Schema of `structuredContent`, when the result has a fixed shape.
    pub output_schema: Option<Value>,
    /// Behaviour hints.
    pub annotations: Annotations,
    /// Scope and permission needed to list and call it.
    pub access: Access,
    /// The REST twin, if any.
    pub route: Option<Route>,
}

impl ToolDef {
    /// Whether unknown arguments are refused (reads are strict, writes loose).
    pub fn strict(&self) -> bool {
        self.annotations.read_only
    }
}

/// A resource with a fixed URI.
#[derive(Clone, Debug)]
pub struct ResourceDef {
    /// The URI, e.g. `kobana://dunning/me`.
    pub uri: String,
    /// Short name.
    pub name: String,
    /// Display title.
    pub title: String,
    /// What it holds.
    pub description: String,
    /// MIME type of its contents.
    pub mime_type: String,
    /// Scope and permission needed.
    pub access: Access,
}

/// A resource template (RFC 6570 level 1: `{var}` expands to one path segment).
#[derive(Clone, Debug)]
pub struct TemplateDef {
    /// The template, e.g. `kobana://dunning/charges/{id}`.
    pub uri_template: String,
    /// Short name.
    pub name: String,
    /// Display title.
    pub title: String,
    /// What it holds.
    pub description: String,
    /// MIME type of its contents.
    pub mime_type: String,
    /// Scope and permission needed.
    pub access: Access,
}

/// One argument of a prompt.
#[derive(Clone, Debug)]
pub struct PromptArgument {
    /// Argument name.
    pub name: String,
    /// What it means.
    pub description: String,
    /// Whether `prompts/get` must carry it.
    pub required: bool,
}

/// A prompt (ready-made script).
#[derive(Clone, Debug)]
pub struct PromptDef {
    /// Unique name.
    pub name: String,
    /// Display title.
    pub title: String,
    /// What it does.
    pub description: String,
    /// Its arguments.
    pub arguments: Vec<PromptArgument>,
    /// Scope and permission needed.
    pub access: Access,
}

/// Everything the server offers, as the domain defines it.
#[derive(Clone, Debug, Default)]
pub struct Catalog {
    /// Tools, in the order `tools/list` returns them.
    pub tools: Vec<ToolDef>,
    /// Fixed-URI resources.
    pub resources: Vec<ResourceDef>,
    /// Resource templates.
    pub templates: Vec<TemplateDef>,
    /// Prompts.
    pub prompts: Vec<PromptDef>,
    /// The wire names of the scope levels (tokens, `WWW-Authenticate`, metadata).
    pub scopes: ScopeNames,
}

/// Helper for building schemas: an object schema from `(name, schema)` pairs.
pub fn object_schema(props: &[(&str, Value)], required: &[&str], strict: bool) -> Value {
    let mut p = Map::new();
    for (k, v) in props {
        p.insert((*k).to_owned(), v.clone());
    }
    let mut s = json!({ "type": "object", "properties": p });
    if !required.is_empty() {
        s["required"] = json!(required);
    }
    if strict {
        s["additionalProperties"] = json!(false);
    }
    s
}
