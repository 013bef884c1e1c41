//! The catalog, validated and compiled once: schemas, `x-mcp-header` bindings, URI
//! templates, and the pre-serialized JSON of every tool for `tools/list`.

use std::collections::{BTreeMap, HashMap};

use serde_json::value::RawValue;
use serde_json::{Value, json};

use crate::catalog::{Catalog, PromptDef, ResourceDef, TemplateDef, ToolDef};
use crate::dispatch::{FieldIssue, ToolError, ToolErrorCode};
use crate::era::Version;
use crate::principal::{Principal, ScopeNames};
use crate::xheader::{self, Binding};

/// Why a catalog was refused at startup.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    /// Two tools, prompts or resources share a name.
    #[error("duplicate {kind} name: {name}")]
    Duplicate {
        /// `tool`, `prompt`, `resource`, `template`.
        kind: &'static str,
        /// The name.
        name: String,
    },
    /// A tool's `inputSchema` or `outputSchema` is not a valid JSON Schema 2020-12.
    #[error("tool {tool}: invalid schema: {reason}")]
    InvalidSchema {
        /// The tool.
        tool: String,
        /// What the validator said.
        reason: String,
    },
    /// A tool carries an invalid `x-mcp-header` annotation.
    #[error("tool {tool}: invalid x-mcp-header annotation: {reason}")]
    InvalidAnnotation {
        /// The tool.
        tool: String,
        /// What is wrong and where.
        reason: String,
    },
    /// A resource template is not RFC 6570 level 1.
    #[error("template {template}: {reason}")]
    InvalidTemplate {
        /// The template.
        template: String,
        /// What is wrong.
        reason: String,
    },
}

/// A compiled tool.
pub(crate) struct Tool {
    pub(crate) def: ToolDef,
    validator: jsonschema::Validator,
    pub(crate) bindings: Vec<Binding>,
    /// Properties declared at the root (strict reads refuse anything else).
    declared: Vec<String>,
    /// `tools/list` item for 2026-07-28 and 2025-06-18.
    json_current: Box<RawValue>,
    /// `tools/list` item for 2025-03-26 (no `title`, no `outputSchema`).
    json_2025_03: Box<RawValue>,
}

impl Tool {
    /// The pre-serialized `tools/list` item for `version`.
    pub(crate) fn list_json(&self, version: Version) -> &RawValue {
        match version {
            Version::V2025_03_26 => &self.json_2025_03,
            _ => &self.json_current,
        }
    }

    /// The scope the caller lacks for this tool, by its wire name. Checked before the
    /// arguments are read, on both surfaces: it is a protocol error (`403` with an
    /// `insufficient_scope` challenge), not a tool error.
    pub(crate) fn missing_scope(
        &self,
        principal: &Principal,
        names: &ScopeNames,
    ) -> Option<&'static str> {
        (!principal.has_scope(self.def.access.scope)).then(|| names.name(self.def.access.scope))
    }

    /// The checks of a call that are tool errors, in order, on both surfaces (MCP
    /// `tools/call` and its `/v1` twin): the person's dashboard permission, then the
    /// arguments against `inputSchema`.
    pub(crate) fn admit(&self, principal: &Principal, args: &Value) -> Result<(), ToolError> {
        if let Some(needed) = self.def.access.permission.as_deref()
            && !principal.has_permission(Some(needed))
        {
            return Err(ToolError::new(
                ToolErrorCode::Forbidden,
                format!(
                    "Your dashboard permissions do not allow {} (needs {needed})",
                    self.def.name
                ),
            ));
        }
        self.validate(args)
    }

    /// Validates arguments against `inputSchema` (and strictness for reads).
    pub(crate) fn validate(&self, args: &Value) -> Result<(), ToolError> {
        let mut issues: Vec<FieldIssue> = Vec::new();
        let mut push = |field: String, issue: String| {
            if !issues.iter().any(|i| i.field == field) {
                issues.push(FieldIssue { field, issue });
            }
        };
        if self.def.strict()
            && let Some(obj) = args.as_object()
        {
            for k in obj.keys().filter(|k| !self.declared.contains(k)) {
                push(k.clone(), "unknown argument".into());
            }
        }
        for err in self.validator.iter_errors(args) {
            let base = dotted(err.instance_path().as_str());
            match err.kind() {
                jsonschema::error::ValidationErrorKind::AdditionalProperties { unexpected } => {
                    for name in unexpected {
                        push(join(&base, name), "unknown argument".into());
                    }
                }
                jsonschema::error::ValidationErrorKind::Required { property } => {
                    let name = property.as_str().unwrap_or_default();
                    push(join(&base, name), "is required".into());
                }
                _ => push(
                    if base.is_empty() {
                        "arguments".into()
                    } else {
                        base
                    },
                    err.to_string(),
                ),
            }
        }
        if issues.is_empty() {
            return Ok(());
        }
        let names: Vec<&str> = issues.iter().map(|i| i.field.as_str()).collect();
        Err(ToolError::validation(
            format!("Invalid arguments: {}", names.join(", ")),
            issues,
        ))
    }
}

fn dotted(pointer: &str) -> String {
    pointer.trim_start_matches('/').replace('/', ".")
}

fn join(base: &str, name: &str) -> String {
    if base.is_empty() {
        name.to_owned()
    } else {
        format!("{base}.{name}")
    }
}

/// One piece of a level-1 URI template.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Part {
    Literal(String),
    Var(String),
}

/// A compiled resource template.
pub(crate) struct Template {
    pub(crate) def: TemplateDef,
    parts: Vec<Part>,
}

impl Template {
    fn compile(def: TemplateDef) -> Result<Self, ConfigError> {
        let bad = |reason: &str| ConfigError::InvalidTemplate {
            template: def.uri_template.clone(),
            reason: reason.into(),
        };
        let mut parts = Vec::new();
        let mut rest = def.uri_template.as_str();
        while let Some(open) = rest.find('{') {
            if open > 0 {
                parts.push(Part::Literal(rest[..open].to_owned()));
            }
            let close = rest[open..].find('}').ok_or_else(|| bad("unclosed {"))? + open;
            let name = &rest[open + 1..close];
            if name.is_empty() || !name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_') {
                return Err(bad("only level-1 {var} expressions are supported"));
            }
            if matches!(parts.last(), Some(Part::Var(_))) {
                return Err(bad("two adjacent variables"));
            }
            parts.push(Part::Var(name.to_owned()));
            rest = &rest[close + 1..];
        }
        if rest.contains('}') {
            return Err(bad("unopened }"));
        }
        if !rest.is_empty() {
            parts.push(Part::Literal(rest.to_owned()));
        }
        Ok(Self { def, parts })
    }

    /// Matches a URI, returning its variables (percent-decoded, one segment each).
    pub(crate) fn matches(&self, uri: &str) -> Option<BTreeMap<String, String>> {
        let mut vars = BTreeMap::new();
        let mut rest = uri;
        for (i, part) in self.parts.iter().enumerate() {
            match part {
                Part::Literal(l) => rest = rest.strip_prefix(l.as_str())?,
                Part::Var(name) => {
                    let end = match self.parts.get(i + 1) {
                        Some(Part::Literal(next)) => rest.find(next.as_str())?,
                        _ => rest.len(),
                    };
                    let raw = &rest[..end];
                    if raw.is_empty() || raw.contains(['/', '?', '#']) {
                        return None;
                    }
                    vars.insert(name.clone(), crate::pct::decode(raw, false)?);
                    rest = &rest[end..];
                }
            }
        }
        rest.is_empty().then_some(vars)
    }

    /// The variable names, in order.
    pub(crate) fn variables(&self) -> impl Iterator<Item = &str> {
        self.parts.iter().filter_map(|p| match p {
            Part::Var(v) => Some(v.as_str()),
            Part::Literal(_) => None,
        })
    }
}

/// A URI resolved to a fixed resource or a template with its variables.
pub(crate) type Resolved<'a> = (
    Option<&'a ResourceDef>,
    Option<&'a Template>,
    BTreeMap<String, String>,
);

/// Everything the server offers, compiled.
pub(crate) struct Registry {
    pub(crate) tools: Vec<Tool>,
    by_name: HashMap<String, usize>,
    pub(crate) resources: Vec<ResourceDef>,
    pub(crate) templates: Vec<Template>,
    pub(crate) prompts: Vec<PromptDef>,
    pub(crate) scopes: ScopeNames,
}

impl Registry {
    pub(crate) fn new(catalog: Catalog) -> Result<Self, ConfigError> {
        let mut tools = Vec::with_capacity(catalog.tools.len());
        let mut by_name = HashMap::new();
        for def in catalog.tools {
            if by_name.insert(def.name.clone(), tools.len()).is_some() {
                return Err(ConfigError::Duplicate {
                    kind: "tool",
                    name: def.name,
                });
            }
            tools.push(compile_tool(def)?);
        }
        let mut seen = std::collections::HashSet::new();
        for r in &catalog.resources {
            if !seen.insert(r.uri.clone()) {
                return Err(ConfigError::Duplicate {
                    kind: "resource",
                    name: r.uri.clone(),
                });
            }
        }
        for p in &catalog.prompts {
            if !seen.insert(format!("prompt:{}", p.name)) {
                return Err(ConfigError::Duplicate {
                    kind: "prompt",
                    name: p.name.clone(),
                });
            }
        }
        let templates = catalog
            .templates
            .into_iter()
            .map(Template::compile)
            .collect::<Result<_, _>>()?;
        Ok(Self {
            tools,
            by_name,
            resources: catalog.resources,
            templates,
            prompts: catalog.prompts,
            scopes: catalog.scopes,
        })
    }

    pub(crate) fn tool(&self, name: &str) -> Option<&Tool> {
        self.by_name.get(name).map(|&i| &self.tools[i])
    }

    pub(crate) fn prompt(&self, name: &str) -> Option<&PromptDef> {
        self.prompts.iter().find(|p| p.name == name)
    }

    /// A fixed resource or a template match for `uri`.
    pub(crate) fn resolve(&self, uri: &str) -> Option<Resolved<'_>> {
        if let Some(r) = self.resources.iter().find(|r| r.uri == uri) {
            return Some((Some(r), None, BTreeMap::new()));
        }
        self.templates
            .iter()
            .find_map(|t| t.matches(uri).map(|vars| (None, Some(t), vars)))
    }

    pub(crate) fn template(&self, uri_template: &str) -> Option<&Template> {
        self.templates
            .iter()
            .find(|t| t.def.uri_template == uri_template)
    }
}

fn compile_tool(def: ToolDef) -> Result<Tool, ConfigError> {
    let invalid = |reason: String| ConfigError::InvalidSchema {
        tool: def.name.clone(),
        reason,
    };
    if def.input_schema.get("type").and_then(Value::as_str) != Some("object") {
        return Err(invalid(
            "inputSchema must have type \"object\" at the root".into(),
        ));
    }
    let validator =
        jsonschema::draft202012::new(&def.input_schema).map_err(|e| invalid(e.to_string()))?;
    if let Some(out) = &def.output_schema {
        jsonschema::draft202012::new(out).map_err(|e| invalid(format!("outputSchema: {e}")))?;
    }
    let bindings =
        xheader::bindings(&def.input_schema).map_err(|reason| ConfigError::InvalidAnnotation {
            tool: def.name.clone(),
            reason,
        })?;
    let declared = def
        .input_schema
        .get("properties")
        .and_then(Value::as_object)
        .map(|p| p.keys().cloned().collect())
        .unwrap_or_default();
    let mut current = json!({
        "name": def.name,
        "title": def.title,
        "description": def.description,
        "inputSchema": def.input_schema,
    });
    if let Some(out) = &def.output_schema {
        current["outputSchema"] = out.clone();
    }
    current["annotations"] = def.annotations.to_json(&def.title);
    let mut legacy = json!({
        "name": def.name,
        "description": def.description,
        "inputSchema": def.input_schema,
    });
    legacy["annotations"] = def.annotations.to_json(&def.title);
    let raw = |v: &Value| {
        serde_json::value::to_raw_value(v).map_err(|e| invalid(format!("serialization: {e}")))
    };
    Ok(Tool {
        json_current: raw(&current)?,
        json_2025_03: raw(&legacy)?,
        validator,
        bindings,
        declared,
        def,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::Annotations;
    use crate::principal::Access;

    fn template(t: &str) -> Template {
        Template::compile(TemplateDef {
            uri_template: t.into(),
            name: "n".into(),
            title: "t".into(),
            description: "d".into(),
            mime_type: "application/json".into(),
            access: Access::read(),
        })
        .unwrap()
    }

    #[test]
    fn level_one_matching() {
        let t = template("kobana://dunning/charges/{id}/settlement-letter");
        let v = t
            .matches("kobana://dunning/charges/abc-1/settlement-letter")
            .unwrap();
        assert_eq!(v["id"], "abc-1");
        assert!(t.matches("kobana://dunning/charges/abc-1").is_none());
        assert!(
            t.matches("kobana://dunning/charges//settlement-letter")
                .is_none()
        );
        let t = template("x://d/{id}/cp/{cp_id}");
        let v = t.matches("x://d/a%20b/cp/2").unwrap();
        assert_eq!((v["id"].as_str(), v["cp_id"].as_str()), ("a b", "2"));
        assert!(t.matches("x://d/a/b/cp/2").is_none());
        assert_eq!(t.variables().collect::<Vec<_>>(), ["id", "cp_id"]);
    }

    #[test]
    fn bad_definitions_fail_at_startup_naming_the_tool() {
        let tool = |schema: Value| ToolDef {
            name: "bad_tool".into(),
            title: "t".into(),
            description: "d".into(),
            input_schema: schema,
            output_schema: None,
            annotations: Annotations::default(),
            access: Access::read(),
            route: None,
        };
        let cat = |schema| Catalog {
            tools: vec![tool(schema)],
            ..Catalog::default()
        };
        let e = Registry::new(cat(
            json!({"type":"object","properties":{"a":{"type":"number","x-mcp-header":"A"}}}),
        ))
        .err()
        .unwrap();
        assert!(matches!(e, ConfigError::InvalidAnnotation { ref tool, .. } if tool == "bad_tool"));
        assert!(e.to_string().contains("bad_tool"));
        let e = Registry::new(cat(json!({"type":"array"}))).err().unwrap();
        assert!(matches!(e, ConfigError::InvalidSchema { .. }));
        let e = Registry::new(cat(json!({"type":"object","properties":{"a":{"type":7}}})))
            .err()
            .unwrap();
        assert!(matches!(e, ConfigError::InvalidSchema { .. }));
        assert!(template_err("x://{a}{b}"));
        assert!(template_err("x://{+a}"));
        assert!(template_err("x://{a"));
    }

    fn template_err(t: &str) -> bool {
        Template::compile(TemplateDef {
            uri_template: t.into(),
            name: "n".into(),
            title: "t".into(),
            description: "d".into(),
            mime_type: "m".into(),
            access: Access::read(),
        })
        .is_err()
    }
}
