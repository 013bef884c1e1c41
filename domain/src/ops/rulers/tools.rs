//! The ruler and step tools: schemas and declarations.

use dunning_core::Scope;
use serde_json::Value;

use super::args::STEP_FIELDS;
use super::handlers::{
    LISTING, NewRuler, PreviewArgs, RulerPatch, StepRef, activate_ruler, archive_ruler,
    create_ruler, create_step, delete_step, describe_archive, describe_delete_step, get_ruler,
    list_rulers, pause_ruler, preview_ruler, update_ruler, update_step,
};
use super::{ACTIONS, CHANNELS, DUNNABLE, STATUSES, VARIABLES, WEEKDAYS};
use crate::args::{ById, IdReason};
use crate::catalog::name;
use crate::schema as s;
use crate::tool::{ToolBuilder, ToolSpec, tool};

pub(super) fn filters_schema() -> Value {
    s::object(
        "Which charges this ruler applies to when none is assigned explicitly (charge or debtor ruler_id): all set filters must match",
        &[
            (
                "tags",
                s::array(
                    "The charge or its debtor carries at least one of these tags",
                    s::text("tag", 1, 50),
                ),
            ),
            ("min_amount", s::money("Charge amount at least")),
            ("max_amount", s::money("Charge amount at most")),
            (
                "person_type",
                s::one_of("Debtor type", &["natural", "juridical"]),
            ),
        ],
        &[],
    )
}

pub(super) fn window_schema() -> Value {
    s::object(
        "When messages may go out, in the organization's time zone (default Mon–Fri 08:00–20:00, Sat 08:00–14:00, never Sundays or holidays)",
        &[
            ("start", s::string("Opening time HH:MM (default 08:00)")),
            (
                "end",
                s::string("Closing time HH:MM, exclusive (default 20:00)"),
            ),
            (
                "weekdays",
                s::array(
                    "Sending days (default mon…sat; sun is never allowed)",
                    s::one_of("day", WEEKDAYS),
                ),
            ),
            (
                "saturday_end",
                s::string("Closing time on Saturdays HH:MM (default 14:00)"),
            ),
            (
                "skip_holidays",
                s::boolean("Skip national and bank holidays (default true)"),
            ),
        ],
        &[],
    )
}

pub(super) fn template_desc() -> String {
    format!(
        "Message template. Variables: {}. Every message also carries the creditor's name and CNPJ (CDC art. 42-A), added by the server",
        VARIABLES
            .iter()
            .map(|v| format!("{{{{{v}}}}}"))
            .collect::<Vec<_>>()
            .join(" ")
    )
}

pub(super) fn step_props() -> Vec<(&'static str, Value)> {
    vec![
        ("name", s::text("Optional label", 1, 100)),
        (
            "position",
            s::integer("1-based order in the ruler (default: last)", 1, 1000),
        ),
        (
            "offset_days",
            s::integer(
                "Days relative to the due date, −30 to 365 (negative = before the due date); positive offsets count from the effective due date",
                -30,
                365,
            ),
        ),
        (
            "channel",
            s::one_of(
                "Channel; negativate/protest/escalate steps use task",
                CHANNELS,
            ),
        ),
        (
            "action",
            s::one_of(
                "notify talks to the debtor; negativate, protest and escalate create a task for a person, never executed automatically",
                ACTIONS,
            ),
        ),
        (
            "template",
            s::object(
                &template_desc(),
                &[
                    ("subject", s::text("Subject (required for e-mail)", 1, 200)),
                    ("body", s::text("Body", 1, 5000)),
                ],
                &[],
            ),
        ),
        (
            "send_at",
            s::string(
                "Local time of day HH:MM (default 09:00), moved into the send window when outside",
            ),
        ),
        (
            "business_days_only",
            s::boolean("Count offset_days in bank business days (default: calendar days)"),
        ),
        (
            "conditions",
            s::object(
                "When the step applies",
                &[
                    ("min_amount", s::money("Charge amount at least")),
                    (
                        "charge_status",
                        s::array(
                            "Charge status among these",
                            s::one_of("status", &crate::status::names(DUNNABLE)),
                        ),
                    ),
                ],
                &[],
            ),
        ),
        (
            "active",
            s::boolean("Inactive steps never fire (default true)"),
        ),
    ]
}

pub(super) fn step_object_schema() -> Value {
    s::object("A step", &step_props(), &["offset_days", "channel"])
}

/// The step fields as arguments of the step tools, read by [`apply_step`] (the same
/// reader as a ruler's `steps`).
pub(super) fn with_step_args(mut b: ToolBuilder, create: bool) -> ToolBuilder {
    let required = if create {
        vec!["offset_days", "channel"]
    } else {
        Vec::new()
    };
    b = b.reads(crate::args::Shape {
        fields: STEP_FIELDS.to_vec(),
        required,
    });
    for (k, v) in step_props() {
        b = if create && (k == "offset_days" || k == "channel") {
            b.req(k, v)
        } else {
            b.arg(k, v)
        };
    }
    b
}

pub(super) fn ruler_output() -> Value {
    s::entity_output(&["id", "name", "status", "is_default", "send_window", "steps"])
}

pub(super) fn step_output() -> Value {
    s::entity_output(&[
        "id",
        "ruler_id",
        "position",
        "offset_days",
        "channel",
        "action",
    ])
}

/// The tools of this module.
pub fn tools() -> Vec<ToolSpec> {
    vec![
        tool(name::RULERS_LIST, "List rulers", "GET", "/v1/rulers")
            .describe("Lists the organization's dunning rulers (réguas) with their status, default flag, send window and number of steps.")
            .read()
            .access(Scope::Read, Some("rulers.view"))
            .arg("status", s::csv_of("Ruler status", STATUSES))
            .list(&["name", "created_at"])
            .filters(LISTING.filters)
            .output(s::list_output(s::entity_output(&["id", "name", "status", "is_default", "steps_count"])))
            .run(list_rulers),
        tool(name::RULERS_GET, "Get a ruler", "GET", "/v1/rulers/{id}")
            .describe("One ruler with its filters, send window and steps in order.")
            .read()
            .access(Scope::Read, Some("rulers.view"))
            .req("id", s::id("Ruler id"))
            .args::<ById>()
            .output(ruler_output())
            .run(get_ruler),
        tool(name::RULERS_CREATE, "Create a ruler", "POST", "/v1/rulers")
            .describe("Creates a ruler in draft with its steps. Activate it with dunning_rulers_activate. Template variables are checked; negativate/protest/escalate steps only create tasks for a person.")
            .access(Scope::Write, Some("rulers.manage"))
            .req("name", s::text("Name", 1, 120))
            .arg("description", s::text("Description", 1, 1000))
            .arg("is_default", s::boolean("Make it the organization's default ruler (the previous default stops being default)"))
            .arg("filters", filters_schema())
            .arg("send_window", window_schema())
            .arg("steps", s::array_max("Steps, in order", step_object_schema(), 50))
            .args::<NewRuler>()
            .output(ruler_output())
            .run(create_ruler),
        tool(name::RULERS_UPDATE, "Update a ruler", "PATCH", "/v1/rulers/{id}")
            .describe("Changes the given fields of a ruler (name, description, is_default, filters, send_window); steps change with the dunning_steps_* tools. Archived rulers cannot change.")
            .idempotent()
            .access(Scope::Write, Some("rulers.manage"))
            .req("id", s::id("Ruler id"))
            .arg("name", s::text("Name", 1, 120))
            .arg("description", s::text("Description", 1, 1000))
            .arg("is_default", s::boolean("Make it (true) or stop it being (false) the default ruler"))
            .arg("filters", filters_schema())
            .arg("send_window", window_schema())
            .args::<RulerPatch>()
            .output(ruler_output())
            .run(update_ruler),
        tool(name::RULERS_ACTIVATE, "Activate a ruler", "POST", "/v1/rulers/{id}/activate")
            .describe("Starts (draft) or resumes (paused) a ruler: its steps fire for the charges that follow it. Needs at least one active step.")
            .idempotent()
            .access(Scope::Write, Some("rulers.manage"))
            .req("id", s::id("Ruler id"))
            .args::<ById>()
            .output(ruler_output())
            .run(activate_ruler),
        tool(name::RULERS_PAUSE, "Pause a ruler", "POST", "/v1/rulers/{id}/pause")
            .describe("Pauses an active ruler: none of its steps fire until it is activated again.")
            .idempotent()
            .access(Scope::Write, Some("rulers.manage"))
            .req("id", s::id("Ruler id"))
            .arg("reason", s::text("Why it is paused", 1, 500))
            .args::<IdReason>()
            .output(ruler_output())
            .run(pause_ruler),
        tool(name::RULERS_ARCHIVE, "Archive a ruler", "POST", "/v1/rulers/{id}/archive")
            .describe("Archives a ruler for good: it never fires again and cannot be edited; charges assigned to it fall back to their debtor's ruler or the default ruler. The default ruler cannot be archived.")
            .destructive()
            .idempotent()
            .access(Scope::Write, Some("rulers.manage"))
            .req("id", s::id("Ruler id"))
            .args::<ById>()
            .output(ruler_output())
            .confirm(describe_archive)
            .run(archive_ruler),
        tool(name::RULERS_PREVIEW, "Preview a ruler", "GET", "/v1/rulers/{id}/preview")
            .describe("The schedule a ruler would follow for a charge (charge_id) or a hypothetical one (due_date and amount): each step's date and local time after offsets, business days, send window and holidays, whether it applies, and the rendered message.")
            .read()
            .access(Scope::Read, Some("rulers.view"))
            .req("id", s::id("Ruler id"))
            .arg("charge_id", s::id("A charge of the organization"))
            .arg("due_date", s::date("Due date of a hypothetical charge"))
            .arg("amount", s::money("Amount of a hypothetical charge"))
            .args::<PreviewArgs>()
            .output(s::entity_output(&["ruler_id", "due_date", "schedule"]))
            .run(preview_ruler),
        with_step_args(
            tool(name::STEPS_CREATE, "Add a step", "POST", "/v1/rulers/{id}/steps")
                .describe("Adds a step to a ruler (at `position`, default last). Template variables are checked.")
                .access(Scope::Write, Some("rulers.manage"))
                .req("id", s::id("Ruler id")),
            true,
        )
        .args::<ById>()
        .output(step_output())
        .run(create_step),
        with_step_args(
            tool(name::STEPS_UPDATE, "Update a step", "PATCH", "/v1/rulers/{id}/steps/{step_id}")
                .describe("Changes the given fields of a step; `position` moves it.")
                .idempotent()
                .access(Scope::Write, Some("rulers.manage"))
                .req("id", s::id("Ruler id"))
                .req("step_id", s::id("Step id")),
            false,
        )
        .args::<StepRef>()
        .output(step_output())
        .run(update_step),
        tool(name::STEPS_DELETE, "Delete a step", "DELETE", "/v1/rulers/{id}/steps/{step_id}")
            .describe("Removes a step from a ruler; deliveries it already made are kept.")
            .destructive()
            .idempotent()
            .access(Scope::Write, Some("rulers.manage"))
            .req("id", s::id("Ruler id"))
            .req("step_id", s::id("Step id"))
            .args::<StepRef>()
            .confirm(describe_delete_step)
            .run(delete_step),
    ]
}
