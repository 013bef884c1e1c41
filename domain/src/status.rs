//! Every entity's status as a Rust enum, with its wire strings and its legal
//! transitions written once, here.
//!
//! [`status_enum!`] declares an enum from its variants and their wire strings, and gives
//! it everything the rest of the domain needs: `as_str`, [`FromStr`](std::str::FromStr)
//! (an unknown string is a `VALIDATION_ERROR` on `status` naming the known ones),
//! `Display`, serde as the bare string (the JSON is byte-identical to the `String` it
//! replaces), `ALL` and `NAMES` (schemas, filters), and a [`serde_json::Value`] for the
//! store's conditions (statuses are text columns, bound as their string).
//!
//! The transitions of each machine are one table, [`Status::can_become`]; code that
//! changes a status goes through [`change`], so an illegal transition is refused here,
//! as a CONFLICT naming both states, whatever the caller checked before.

#[cfg(test)]
mod tests;

use crate::error::DomainError;

/// What every status enum answers.
pub trait Status: Copy + Eq + std::fmt::Debug + 'static {
    /// The entity, as transition errors name it (`charge`, `webhook delivery`).
    const ENTITY: &'static str;
    /// Every variant, in declaration order.
    const ALL: &'static [Self];
    /// Its wire string.
    fn as_str(self) -> &'static str;
    /// Whether a `self` entity may become `to` (the machine's table).
    fn can_become(self, to: Self) -> bool;
}

/// Moves `slot` (the status of the entity `id`) to `to`, or refuses with the CONFLICT
/// `invalid_transition: <entity> <id> is <from> and cannot become <to>`.
pub fn change<S: Status>(slot: &mut S, id: &str, to: S) -> Result<(), DomainError> {
    check(*slot, id, to)?;
    *slot = to;
    Ok(())
}

/// [`change`]'s refusal without the change: for a tool that checks the transition
/// before any other argument, or before describing what it will do.
pub fn check<S: Status>(from: S, id: &str, to: S) -> Result<(), DomainError> {
    if from.can_become(to) {
        Ok(())
    } else {
        Err(DomainError::transition(
            S::ENTITY,
            id,
            from.as_str(),
            to.as_str(),
        ))
    }
}

/// The wire strings of `set`, as the store's `IN` conditions take them.
pub fn values<S: Status>(set: &[S]) -> Vec<serde_json::Value> {
    set.iter()
        .map(|s| serde_json::Value::from(s.as_str()))
        .collect()
}

/// The wire strings of `set` (schemas list them).
pub fn names<S: Status>(set: &[S]) -> Vec<&'static str> {
    set.iter().map(|s| s.as_str()).collect()
}

/// The wire strings of `set`, joined with commas (messages naming a set of statuses).
pub fn joined<S: Status>(set: &[S]) -> String {
    names(set).join(", ")
}

/// The refusal of an unknown status string (the message the list filters give).
pub fn unknown(bad: &str, names: &[&str]) -> DomainError {
    DomainError::field(
        "status",
        format!("{bad} is not one of {}", names.join(", ")),
    )
}

/// Declares a status enum (the first variant is its `Default`, what a new document
/// starts in) with its wire strings, and, unless `transitions` is left out (the
/// enum then implements [`Status`] itself), its table: each state and the states it may
/// become.
macro_rules! status_enum {
    (
        $(#[$meta:meta])*
        pub enum $name:ident ($entity:literal) {
            $first:ident = $first_wire:literal
            $(, $variant:ident = $wire:literal)* $(,)?
        }
        $(transitions {
            $($from:ident => [$($to:ident),* $(,)?]),* $(,)?
        })?
    ) => {
        $(#[$meta])*
        #[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum $name {
            #[doc = concat!("`", $first_wire, "`")]
            #[default]
            $first,
            $(
                #[doc = concat!("`", $wire, "`")]
                $variant,
            )*
        }

        impl $name {
            /// Every variant, in declaration order.
            pub const ALL: &'static [Self] = &[Self::$first $(, Self::$variant)*];
            /// Every wire string, in the order of [`Self::ALL`].
            pub const NAMES: &'static [&'static str] = &[$first_wire $(, $wire)*];

            /// Its wire string.
            pub const fn as_str(self) -> &'static str {
                match self {
                    Self::$first => $first_wire,
                    $(Self::$variant => $wire,)*
                }
            }

            /// The variant of a wire string, if it names one.
            pub fn from_wire(s: &str) -> Option<Self> {
                Self::ALL.iter().copied().find(|v| v.as_str() == s)
            }
        }

        $(
            impl $crate::status::Status for $name {
                const ENTITY: &'static str = $entity;
                const ALL: &'static [Self] = Self::ALL;

                fn as_str(self) -> &'static str {
                    Self::as_str(self)
                }

                fn can_become(self, to: Self) -> bool {
                    #[allow(unreachable_patterns)]
                    let next: &[Self] = match self {
                        $(Self::$from => &[$(Self::$to),*],)*
                        _ => &[],
                    };
                    next.contains(&to)
                }
            }
        )?

        impl $name {
            /// Whether `self` may become `to` (see [`Self::ALL`]'s machine).
            pub fn can_become(self, to: Self) -> bool {
                $crate::status::Status::can_become(self, to)
            }
        }

        impl std::str::FromStr for $name {
            type Err = $crate::error::DomainError;

            fn from_str(s: &str) -> Result<Self, Self::Err> {
                Self::from_wire(s).ok_or_else(|| $crate::status::unknown(s, Self::NAMES))
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl serde::Serialize for $name {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_str(self.as_str())
            }
        }

        impl<'de> serde::Deserialize<'de> for $name {
            fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                let s = <std::borrow::Cow<'de, str>>::deserialize(d)?;
                Self::from_wire(&s).ok_or_else(|| serde::de::Error::unknown_variant(&s, Self::NAMES))
            }
        }

        impl From<$name> for serde_json::Value {
            fn from(s: $name) -> Self {
                Self::String(s.as_str().to_owned())
            }
        }
    };
}

status_enum! {
    /// A charge's status.
    pub enum ChargeStatus("charge") {
        Draft = "draft",
        Pending = "pending",
        Overdue = "overdue",
        PartiallyPaid = "partially_paid",
        Paid = "paid",
        Canceled = "canceled",
        Renegotiated = "renegotiated",
        WrittenOff = "written_off",
        Refunded = "refunded",
        Chargeback = "chargeback",
    }
    transitions {
        // Issued or registered.
        Draft => [Pending],
        // The clock, a payment, a cancellation.
        Pending => [Overdue, PartiallyPaid, Paid, Canceled],
        // Re-dated to the future it is pending again; an agreement folds it in; a
        // decision writes it off.
        Overdue => [Pending, PartiallyPaid, Paid, Canceled, Renegotiated, WrittenOff],
        // Another partial payment keeps it partially paid.
        PartiallyPaid => [PartiallyPaid, Paid, Canceled, Renegotiated],
        // The provider only.
        Paid => [Refunded, Chargeback],
        // Its agreement canceled before any installment was paid: back to dunning.
        Renegotiated => [Overdue, PartiallyPaid],
    }
}

impl ChargeStatus {
    /// Statuses in which something is still owed and dunning may run.
    pub const OPEN: &'static [Self] = &[Self::Pending, Self::Overdue, Self::PartiallyPaid];

    /// Whether something is still owed (see [`Self::OPEN`]).
    pub fn is_open(self) -> bool {
        Self::OPEN.contains(&self)
    }

    /// Pending or overdue: not paid at all, so its terms may still change.
    pub fn is_editable(self) -> bool {
        matches!(self, Self::Pending | Self::Overdue)
    }

    /// Overdue or partially paid: late and still owed (what agreements, protests and
    /// legal decisions take).
    pub fn is_late(self) -> bool {
        matches!(self, Self::Overdue | Self::PartiallyPaid)
    }

    /// Whether `to` follows from `self` through any number of transitions (an
    /// installment mirrors its charge, which may have moved more than once).
    pub fn reaches(self, to: Self) -> bool {
        let mut seen = vec![self];
        let mut i = 0;
        while let Some(&at) = seen.get(i) {
            if at.can_become(to) {
                return true;
            }
            for &next in Self::ALL {
                if at.can_become(next) && !seen.contains(&next) {
                    seen.push(next);
                }
            }
            i += 1;
        }
        false
    }
}

status_enum! {
    /// A debtor's status.
    pub enum DebtorStatus("debtor") {
        Active = "active",
        Archived = "archived",
    }
    transitions {
        Active => [Archived],
    }
}

status_enum! {
    /// A ruler's status.
    pub enum RulerStatus("ruler") {
        Draft = "draft",
        Active = "active",
        Paused = "paused",
        Archived = "archived",
    }
    transitions {
        Draft => [Active, Archived],
        Active => [Paused, Archived],
        Paused => [Active, Archived],
    }
}

status_enum! {
    /// A message delivery's status.
    pub enum DeliveryStatus("delivery") {
        Scheduled = "scheduled",
        Queued = "queued",
        Sent = "sent",
        Delivered = "delivered",
        Read = "read",
        Clicked = "clicked",
        Canceled = "canceled",
        Failed = "failed",
        Bounced = "bounced",
    }
    transitions {
        Scheduled => [Queued, Canceled],
        Queued => [Sent, Canceled, Failed, Bounced],
        Sent => [Delivered, Failed, Bounced],
        Delivered => [Read],
        Read => [Clicked],
    }
}

impl DeliveryStatus {
    /// Not sent yet: the engine may still cancel or reschedule it.
    pub fn is_waiting(self) -> bool {
        matches!(self, Self::Scheduled | Self::Queued)
    }

    /// Sent, whatever the provider said since (a notice that reached the debtor).
    pub fn was_sent(self) -> bool {
        matches!(
            self,
            Self::Sent | Self::Delivered | Self::Read | Self::Clicked
        )
    }
}

status_enum! {
    /// An agreement's status.
    pub enum AgreementStatus("agreement") {
        Draft = "draft",
        Proposed = "proposed",
        Accepted = "accepted",
        Active = "active",
        Completed = "completed",
        Expired = "expired",
        Canceled = "canceled",
        Broken = "broken",
    }
    transitions {
        Draft => [Proposed],
        Proposed => [Accepted, Expired, Canceled],
        // Every installment paid at once completes it without passing through active.
        Accepted => [Active, Completed, Broken, Canceled],
        Active => [Completed, Broken],
    }
}

impl AgreementStatus {
    /// Agreements that hold their charges.
    pub const OPEN: &'static [Self] = &[Self::Proposed, Self::Accepted, Self::Active];

    /// Accepted or active: its installments are collected instead of its charges.
    pub fn is_in_force(self) -> bool {
        matches!(self, Self::Accepted | Self::Active)
    }
}

status_enum! {
    /// An installment's status: `scheduled` until its agreement is accepted, then its
    /// charge's.
    pub enum InstallmentStatus("installment") {
        Scheduled = "scheduled",
        Draft = "draft",
        Pending = "pending",
        Overdue = "overdue",
        PartiallyPaid = "partially_paid",
        Paid = "paid",
        Canceled = "canceled",
        Renegotiated = "renegotiated",
        WrittenOff = "written_off",
        Refunded = "refunded",
        Chargeback = "chargeback",
    }
}

impl InstallmentStatus {
    /// Its charge's status, once it has a charge.
    pub fn charge(self) -> Option<ChargeStatus> {
        ChargeStatus::from_wire(self.as_str())
    }
}

impl From<ChargeStatus> for InstallmentStatus {
    fn from(c: ChargeStatus) -> Self {
        // Every charge status is an installment status (`status/tests.rs`).
        Self::from_wire(c.as_str()).unwrap_or_default()
    }
}

impl Status for InstallmentStatus {
    const ENTITY: &'static str = "installment";
    const ALL: &'static [Self] = Self::ALL;

    fn as_str(self) -> &'static str {
        Self::as_str(self)
    }

    /// A scheduled installment gets its charge (any status) on acceptance; then it
    /// follows its charge, seen when read, so possibly several steps at once.
    fn can_become(self, to: Self) -> bool {
        match (self.charge(), to.charge()) {
            (None, Some(_)) => true,
            (Some(from), Some(to)) => from.reaches(to),
            (_, None) => false,
        }
    }
}

status_enum! {
    /// A protest's status.
    pub enum ProtestStatus("protest") {
        Requested = "requested",
        SentToNotary = "sent_to_notary",
        Intimated = "intimated",
        Protested = "protested",
        PaidAtNotary = "paid_at_notary",
        Withdrawn = "withdrawn",
        Canceled = "canceled",
        Rejected = "rejected",
        Failed = "failed",
    }
    transitions {
        Requested => [SentToNotary, Withdrawn, Rejected, Failed],
        SentToNotary => [Intimated, Withdrawn],
        Intimated => [Protested, PaidAtNotary, Withdrawn],
        // Cancellation after protest needs the creditor's consent letter.
        Protested => [Canceled],
    }
}

impl ProtestStatus {
    /// A protest in course or in force.
    pub const ACTIVE: &'static [Self] = &[
        Self::Requested,
        Self::SentToNotary,
        Self::Intimated,
        Self::Protested,
    ];
    /// Statuses a protest can be withdrawn from (desistência).
    pub const WITHDRAWABLE: &'static [Self] =
        &[Self::Requested, Self::SentToNotary, Self::Intimated];

    /// Whether it can still be withdrawn (see [`Self::WITHDRAWABLE`]).
    pub fn is_withdrawable(self) -> bool {
        Self::WITHDRAWABLE.contains(&self)
    }
}

status_enum! {
    /// A contact point's status.
    pub enum ContactPointStatus("contact point") {
        Active = "active",
        Invalid = "invalid",
    }
    transitions {
        // A hard bounce, or too many soft ones.
        Active => [Invalid],
    }
}

status_enum! {
    /// A CSV export's status.
    pub enum ExportStatus("export") {
        Queued = "queued",
        Processing = "processing",
        Processed = "processed",
        Failed = "failed",
        Expired = "expired",
    }
    transitions {
        Queued => [Processing],
        Processing => [Processed, Failed],
        Processed => [Expired],
    }
}

impl ExportStatus {
    /// Processed or failed: its run is over.
    pub fn is_finished(self) -> bool {
        matches!(self, Self::Processed | Self::Failed)
    }
}

status_enum! {
    /// A credit-bureau record's status (negativação). The active ones come first and
    /// the early ones first of those, so [`Self::ACTIVE`] and [`Self::EARLY`] are the
    /// beginnings of [`Self::ALL`].
    pub enum BureauStatus("credit bureau record") {
        PendingNotice = "pending_notice",
        NoticeSent = "notice_sent",
        AwaitingWindow = "awaiting_window",
        Requested = "requested",
        Included = "included",
        RemovalRequested = "removal_requested",
        Removed = "removed",
        Rejected = "rejected",
        Failed = "failed",
        Canceled = "canceled",
    }
    transitions {
        PendingNotice => [NoticeSent, Canceled],
        NoticeSent => [AwaitingWindow, Canceled],
        AwaitingWindow => [Requested, Canceled],
        // The bureau's answer.
        Requested => [Included, Rejected, Failed],
        Included => [RemovalRequested],
        RemovalRequested => [Removed],
    }
}

impl BureauStatus {
    /// On the bureau's files or about to be: from `pending_notice` to `removal_requested`.
    pub const ACTIVE: &'static [Self] = Self::ALL.split_at(6).0;
    /// Before any request to the bureau: may still be canceled.
    pub const EARLY: &'static [Self] = Self::ALL.split_at(3).0;

    /// Whether it is active (see [`Self::ACTIVE`]).
    pub fn is_active(self) -> bool {
        Self::ACTIVE.contains(&self)
    }

    /// Whether it is early (see [`Self::EARLY`]).
    pub fn is_early(self) -> bool {
        Self::EARLY.contains(&self)
    }
}

status_enum! {
    /// A webhook delivery's status.
    pub enum WebhookDeliveryStatus("webhook delivery") {
        Pending = "pending",
        Delivered = "delivered",
        Failed = "failed",
    }
    transitions {
        // Failed once its retries are exhausted.
        Pending => [Delivered, Failed],
        // Resent.
        Failed => [Pending],
    }
}
