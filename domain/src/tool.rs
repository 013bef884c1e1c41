//! How a tool is declared: its definition (name, schema, annotations, access, REST
//! route) together with the one handler both surfaces run.
//!
//! [`ToolBuilder::build`] applies the catalogue-wide rules so no tool can forget them:
//! `openWorldHint: false`; `idempotency_key` on every non-read tool; the `id` of every
//! destructive tool annotated `x-mcp-header: "Target-Id"`; reads strict
//! (`additionalProperties: false`); list tools get `page`, `per_page`, `sort_by`,
//! `sort_order`.

use dunning_core::{Access, Annotations, Route, Scope, ToolDef};
use serde::de::DeserializeOwned;
use serde_json::{Map, Value, json};

use crate::args::{self, ListArgs, Shape};
use crate::error::DomainError;
use crate::op::Op;
use crate::schema;

/// A tool handler: the same function for MCP and `/v1`.
pub type Run = fn(&mut Op<'_>) -> Result<dunning_core::Output, DomainError>;
/// Names exactly what a destructive call will do (runs before the dry run).
pub type Describe = fn(&mut Op<'_>) -> Result<String, DomainError>;

/// See [`ToolSpec::after`].
pub type After = fn(
    &crate::Domain,
    &dunning_core::ToolCall<'_>,
    dunning_core::Output,
) -> Result<dunning_core::Output, DomainError>;

/// One tool: definition plus handler.
#[derive(Clone)]
pub struct ToolSpec {
    /// The definition served in `tools/list`.
    pub def: ToolDef,
    /// The handler.
    pub run: Run,
    /// The confirmation message of a destructive tool.
    pub describe: Option<Describe>,
    /// Work after the handler's transaction committed (network calls that must not hold
    /// the store's writer); its output replaces the handler's, also for replays.
    pub after: Option<After>,
    /// What the handler reads: the shapes of its argument structs and its list's
    /// filters ([`ToolBuilder::args`]), held equal to the schema by a test.
    pub reads: Vec<Shape>,
}

impl ToolSpec {
    /// Adds [`ToolSpec::after`].
    pub fn then(mut self, after: After) -> Self {
        self.after = Some(after);
        self
    }
}

impl std::fmt::Debug for ToolSpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolSpec")
            .field("name", &self.def.name)
            .finish_non_exhaustive()
    }
}

/// Builder for a [`ToolSpec`].
#[derive(Debug)]
pub struct ToolBuilder {
    name: &'static str,
    title: &'static str,
    description: String,
    route: Route,
    annotations: Annotations,
    access: Access,
    props: Vec<(String, Value)>,
    required: Vec<&'static str>,
    output: Option<Value>,
    describe: Option<Describe>,
    reads: Vec<Shape>,
}

/// Starts a tool: name, title, REST method and path.
pub fn tool(
    name: &'static str,
    title: &'static str,
    method: &'static str,
    path: &str,
) -> ToolBuilder {
    ToolBuilder {
        name,
        title,
        description: String::new(),
        route: Route {
            method,
            path: path.to_owned(),
        },
        annotations: Annotations::default(),
        access: Access::read(),
        props: Vec::new(),
        required: Vec::new(),
        output: None,
        describe: None,
        reads: Vec::new(),
    }
}

impl ToolBuilder {
    /// What the tool does, for the model.
    pub fn describe(mut self, text: &str) -> Self {
        self.description = text.to_owned();
        self
    }

    /// `readOnlyHint` + `idempotentHint` (R I).
    pub fn read(mut self) -> Self {
        self.annotations.read_only = true;
        self.annotations.idempotent = true;
        self
    }

    /// `destructiveHint`.
    pub fn destructive(mut self) -> Self {
        self.annotations.destructive = true;
        self
    }

    /// `idempotentHint`.
    pub fn idempotent(mut self) -> Self {
        self.annotations.idempotent = true;
        self
    }

    /// Scope and dashboard permission (`None`: scope only).
    pub fn access(mut self, scope: Scope, permission: Option<&str>) -> Self {
        self.access = Access {
            scope,
            permission: permission.map(str::to_owned),
        };
        self
    }

    /// An argument.
    pub fn arg(mut self, name: &str, schema: Value) -> Self {
        self.props.push((name.to_owned(), schema));
        self
    }

    /// A required argument.
    pub fn req(mut self, name: &'static str, schema: Value) -> Self {
        self.required.push(name);
        self.arg(name, schema)
    }

    /// The argument struct `T` the handler reads (with [`crate::op::Op::args`]): one
    /// source of the arguments besides the schema, which a test holds equal to it.
    pub fn args<T: DeserializeOwned>(mut self) -> Self {
        self.reads.push(args::shape::<T>());
        self
    }

    /// The filters a [`crate::list::Listing`] reads, as optional arguments.
    pub fn filters(self, filters: &[crate::list::Filter]) -> Self {
        self.reads(Shape {
            fields: filters.iter().flat_map(|f| f.args()).collect(),
            required: Vec::new(),
        })
    }

    /// Arguments read by a reader of their own (a ruler step's fields, parsed the same
    /// inside a ruler's `steps`).
    pub fn reads(mut self, shape: Shape) -> Self {
        self.reads.push(shape);
        self
    }

    /// The list arguments: `page`, `per_page`, `sort_by` (among `sort_fields`), `sort_order`
    /// (read as [`ListArgs`]).
    pub fn list(mut self, sort_fields: &[&str]) -> Self {
        self.reads.push(args::shape::<ListArgs>());
        self.arg("page", schema::integer("Page number, from 1", 1, 1_000_000))
            .arg(
                "per_page",
                schema::integer("Items per page, 1 to 100 (default 25)", 1, 100),
            )
            .arg("sort_by", schema::one_of("Field to sort by", sort_fields))
            .arg(
                "sort_order",
                schema::one_of(
                    "Sort direction (default depends on the field)",
                    &["asc", "desc"],
                ),
            )
    }

    /// The `outputSchema`.
    pub fn output(mut self, schema: Value) -> Self {
        self.output = Some(schema);
        self
    }

    /// The confirmation message of a destructive tool.
    pub fn confirm(mut self, f: Describe) -> Self {
        self.describe = Some(f);
        self
    }

    /// Finishes the tool with its handler.
    pub fn run(mut self, run: Run) -> ToolSpec {
        let read_only = self.annotations.read_only;
        if !read_only {
            self.props.push((
                "idempotency_key".into(),
                schema::text(
                    "Optional key that makes this write safe to retry: the same key replays the first result for 24 hours; reusing it with other arguments is an IDEMPOTENCY_CONFLICT",
                    1,
                    255,
                ),
            ));
        }
        let mut props = Map::new();
        for (k, mut v) in self.props {
            if self.annotations.destructive && k == "id" {
                v["x-mcp-header"] = json!("Target-Id");
            }
            props.insert(k, v);
        }
        let mut input = json!({ "type": "object", "properties": props });
        if !self.required.is_empty() {
            input["required"] = json!(self.required);
        }
        if read_only {
            input["additionalProperties"] = json!(false);
        }
        ToolSpec {
            def: ToolDef {
                name: self.name.to_owned(),
                title: self.title.to_owned(),
                description: self.description,
                input_schema: input,
                output_schema: self.output,
                annotations: self.annotations,
                access: self.access,
                route: Some(self.route),
            },
            run,
            describe: self.describe,
            after: None,
            reads: self.reads,
        }
    }
}
