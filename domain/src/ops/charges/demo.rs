//! Demo data for contact points and charges (the `demo` command): every debtor gets an e-mail and
//! a mobile (WhatsApp/phone, some SMS, companies a postal address), some opted out; the
//! organization gets `charges` charges over every status.
//!
//! Each charge lives its own history through the same handlers the tools run, at the
//! times it would have happened: created before its due date, swept to `overdue` the
//! day after its effective due date, paid, canceled, renegotiated or written off later,
//! never after `now`. So every row has its events, with consistent timestamps, and the
//! debtors' aggregates are right. Deterministic: all choices come from the seeded `Rng`.

use chrono::NaiveDate;
use dunning_core::{Output, Principal, UnixTime};
use serde_json::{Value, json};

use crate::Domain;
use crate::brazil::calendar;
use crate::demo::{Rng, Seeded, run_as};
use crate::error::DomainError;
use crate::op::Op;
use crate::ops::contact_points;
use crate::ops::debtors::Debtor;
use crate::store::{self, Kind};

const DAY_MS: i64 = 86_400_000;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Plan {
    Pending,
    Overdue,
    Paid,
    PartiallyPaid,
    Canceled,
    Renegotiated,
    WrittenOff,
    Draft,
}

/// One cycle of 20 charges: 4 pending, 7 overdue, 4 paid and one of each other status.
const CYCLE: [Plan; 20] = [
    Plan::Pending,
    Plan::Overdue,
    Plan::Paid,
    Plan::Overdue,
    Plan::Pending,
    Plan::Overdue,
    Plan::Paid,
    Plan::PartiallyPaid,
    Plan::Overdue,
    Plan::Pending,
    Plan::Canceled,
    Plan::Overdue,
    Plan::Paid,
    Plan::Renegotiated,
    Plan::Overdue,
    Plan::Pending,
    Plan::WrittenOff,
    Plan::Overdue,
    Plan::Paid,
    Plan::Draft,
];

const DESCRIPTIONS: &[&str] = &[
    "Mensalidade de serviços",
    "Fatura de manutenção",
    "Parcela do contrato de locação",
    "Consultoria técnica",
    "Licença de software",
    "Serviço de instalação",
    "Anuidade da associação",
    "Material de construção",
];

struct Seeder<'a> {
    domain: &'a Domain,
    who: &'a Principal,
    now: UnixTime,
    today: NaiveDate,
}

impl Seeder<'_> {
    /// `now` moved by whole days (negative: the past).
    fn at(&self, days: i64) -> UnixTime {
        let ms = i64::try_from(self.now.as_millis()).unwrap_or(i64::MAX) + days * DAY_MS;
        UnixTime::from_millis(u64::try_from(ms).unwrap_or_default())
    }

    fn date(&self, days: i64) -> NaiveDate {
        self.today + chrono::Duration::days(days)
    }

    fn run(
        &self,
        rng: &mut Rng,
        days: i64,
        run: crate::tool::Run,
        args: Value,
    ) -> Result<Value, DomainError> {
        match run_as(
            self.domain,
            self.who,
            self.at(days),
            rng.entropy(),
            run,
            args,
        )? {
            Output::Json { body, .. } => Ok(body.into_value()),
            _ => Ok(Value::Null),
        }
    }

    /// Days from today to the first day a charge due `due_days` from today is overdue.
    fn overdue_from(&self, due_days: i64) -> i64 {
        let eff = calendar::effective_due(self.date(due_days));
        (eff - self.today).num_days() + 1
    }
}

fn sweep_run(op: &mut Op<'_>) -> Result<Output, DomainError> {
    let n = super::sweep_overdue(op)?;
    Ok(Output::ok(json!({ "moved": n })))
}

fn renegotiate_run(op: &mut Op<'_>) -> Result<Output, DomainError> {
    let crate::args::ById { id } = op.args()?;
    let c = super::mark_renegotiated(op, &id, None)?;
    Ok(Output::ok(super::view(&c, op.today())))
}

fn slug(name: &str) -> String {
    let folded: String = name
        .to_lowercase()
        .chars()
        .map(|c| match c {
            'á' | 'à' | 'â' | 'ã' => 'a',
            'é' | 'ê' => 'e',
            'í' => 'i',
            'ó' | 'ô' | 'õ' => 'o',
            'ú' | 'ü' => 'u',
            'ç' => 'c',
            c if c.is_ascii_alphanumeric() => c,
            _ => ' ',
        })
        .collect();
    folded.split_whitespace().collect::<Vec<_>>().join(".")
}

fn area_code(city: &str) -> &'static str {
    match city {
        "Rio de Janeiro" => "21",
        "Belo Horizonte" => "31",
        "Curitiba" => "41",
        "Recife" => "81",
        _ => "11",
    }
}

/// The demo hook of contact points and charges (see the module docs).
pub fn seed_demo(
    domain: &Domain,
    who: &Principal,
    now: UnixTime,
    rng: &mut Rng,
    seeded: &Seeded,
    charges: usize,
) -> Result<(), DomainError> {
    if seeded.debtors.is_empty() {
        return Ok(());
    }
    let org = who.organization.clone();
    let debtors: Vec<Debtor> = store::read(domain.store(), |tx| {
        seeded
            .debtors
            .iter()
            .map(|id| store::must::<Debtor>(tx, Kind::Debtor, &org, id))
            .collect()
    })?;
    let s = Seeder {
        domain,
        who,
        now,
        today: calendar::today(now),
    };
    seed_contact_points(&s, rng, &debtors)?;
    seed_charges(&s, rng, &debtors, charges)
}

fn seed_contact_points(
    s: &Seeder<'_>,
    rng: &mut Rng,
    debtors: &[Debtor],
) -> Result<(), DomainError> {
    let create = contact_points::create_run();
    let update = contact_points::update_run();
    for (i, d) in debtors.iter().enumerate() {
        let email_consent = if i % 3 == 0 { "unknown" } else { "opted_in" };
        let email = s.run(
            rng,
            0,
            create,
            json!({
                "id": d.id, "channel": "email",
                "value": format!("{}.{}@example.com.br", slug(&d.name), i + 1),
                "label": if d.person_type == "juridical" { "financeiro" } else { "pessoal" },
                "consent": email_consent,
            }),
        )?;
        let mobile = format!(
            "+55 {} 9{:04}-{:04}",
            area_code(&d.address.city),
            rng.below(10_000),
            rng.below(10_000)
        );
        let whatsapp = s.run(
            rng,
            0,
            create,
            json!({"id": d.id, "channel": "whatsapp", "value": mobile, "consent": "opted_in"}),
        )?;
        s.run(
            rng,
            0,
            create,
            json!({"id": d.id, "channel": "phone", "value": mobile, "label": "celular"}),
        )?;
        if i % 2 == 0 {
            s.run(
                rng,
                0,
                create,
                json!({"id": d.id, "channel": "sms", "value": mobile, "consent": "opted_in"}),
            )?;
        }
        if d.person_type == "juridical" {
            let a = &d.address;
            s.run(
                rng,
                0,
                create,
                json!({
                    "id": d.id, "channel": "postal",
                    "value": format!("{}, {} - {}, {}/{}, CEP {}", a.street, a.number, a.neighborhood, a.city, a.state, a.zipcode),
                    "label": "sede",
                }),
            )?;
        }
        // Some debtors opted out of a channel (LGPD): honoured from then on.
        let opt_outs = [
            (
                6,
                5,
                &whatsapp,
                "Pediu para não receber mensagens pelo WhatsApp",
            ),
            (9, 8, &email, "Descadastrou-se pelo link do e-mail"),
        ];
        for (every, at, cp, reason) in opt_outs {
            if i % every == at {
                let args = json!({"id": d.id, "cp_id": cp["id"], "consent": "opted_out",
                                  "opt_out_reason": reason});
                s.run(rng, 0, update, args)?;
            }
        }
    }
    Ok(())
}

fn seed_charges(
    s: &Seeder<'_>,
    rng: &mut Rng,
    debtors: &[Debtor],
    count: usize,
) -> Result<(), DomainError> {
    let create = super::handlers::create_charge;
    for i in 0..count {
        let plan = CYCLE[i % CYCLE.len()];
        let d = &debtors[rng.below(debtors.len() as u64) as usize];
        let company = d.person_type == "juridical";
        let amount_cents = if company {
            (rng.below(4_000) + 100) as i64 * 500
        } else {
            (rng.below(9_500) + 500) as i64 * 10
        };
        let fine = if company {
            *rng.pick(&[2.0, 5.0, 10.0])
        } else {
            *rng.pick(&[0.0, 1.0, 2.0])
        };
        let interest: f64 = *rng.pick(&[0.0, 1.0, 2.0]);
        // A consumer's interest is capped at 1 % a month (the draw is kept, so the rest of
        // the demo data does not move).
        let interest = if company {
            interest
        } else {
            interest.min(crate::brazil::growth::CONSUMER_MAX_MONTHLY_INTEREST)
        };
        let method = *rng.pick(&["boleto", "pix", "bolepix"]);
        let (due, created) = match plan {
            Plan::Pending | Plan::Draft => {
                let due = 1 + rng.below(45) as i64;
                (due, -(rng.below(20) as i64))
            }
            Plan::Paid if i % 3 == 0 => {
                // Paid on time, recently.
                let due = -(rng.below(40) as i64);
                (due, due - 5 - rng.below(20) as i64)
            }
            Plan::Canceled => {
                let due = 5 - rng.below(40) as i64;
                (due, due.min(0) - 5 - rng.below(10) as i64)
            }
            Plan::WrittenOff => {
                let due = -150 - rng.below(150) as i64;
                (due, due - 30)
            }
            _ => {
                let due = -7 - rng.below(150) as i64;
                (due, due - 5 - rng.below(25) as i64)
            }
        };
        let mut args = json!({
            "debtor_id": d.id,
            "amount": amount_cents as f64 / 100.0,
            "due_date": s.date(due).format("%Y-%m-%d").to_string(),
            "payment_method": method,
            "description": format!("{} {}", rng.pick(DESCRIPTIONS), s.date(due).format("%m/%Y")),
            "fine_percentage": fine,
            "interest_percentage": interest,
            "external_id": format!("FAT-{:05}", i + 1),
            "tags": if i % 4 == 0 { json!(["recorrente"]) } else { json!([]) },
        });
        if plan == Plan::Draft {
            args["draft"] = json!(true);
        }
        if plan == Plan::Pending && i % 3 == 0 {
            args["discount"] = json!({"type": "percentage", "value": 5, "until": s.date(due).format("%Y-%m-%d").to_string()});
        }
        let charge = s.run(rng, created, create, args)?;
        let id = charge["id"].clone();
        let overdue_from = s.overdue_from(due);
        let late_paid = plan == Plan::Paid && i % 3 != 0;
        let needs_overdue = late_paid
            || matches!(
                plan,
                Plan::Overdue | Plan::PartiallyPaid | Plan::Renegotiated | Plan::WrittenOff
            );
        if needs_overdue {
            s.run(rng, overdue_from.min(0), sweep_run, json!({}))?;
        }
        match plan {
            Plan::Paid => {
                let when = if late_paid {
                    (overdue_from + rng.below(20) as i64).min(-1)
                } else {
                    (due - rng.below(4) as i64).max(created).min(0)
                };
                let via = *rng.pick(&["boleto", "pix", "manual"]);
                s.run(
                    rng,
                    when,
                    super::handlers::mark_paid,
                    json!({"id": id, "paid_via": via}),
                )?;
            }
            Plan::PartiallyPaid => {
                let when = (overdue_from + rng.below(10) as i64).min(-1);
                let part = amount_cents * (30 + rng.below(30) as i64) / 100;
                s.run(
                    rng,
                    when,
                    super::handlers::mark_paid,
                    json!({"id": id, "paid_amount": part as f64 / 100.0, "paid_via": "pix",
                           "note": "Pagamento parcial combinado por telefone"}),
                )?;
            }
            Plan::Canceled => {
                let when = (created + 1 + rng.below(3) as i64).min(0);
                let reason = *rng.pick(&[
                    "Cobrança emitida em duplicidade",
                    "Serviço não prestado",
                    "Valor lançado incorretamente",
                ]);
                s.run(
                    rng,
                    when,
                    super::handlers::cancel_charge,
                    json!({"id": id, "reason": reason}),
                )?;
            }
            Plan::Renegotiated => {
                let when = (overdue_from + 10 + rng.below(10) as i64).min(-1);
                s.run(rng, when, renegotiate_run, json!({"id": id}))?;
            }
            Plan::WrittenOff => {
                let when = (overdue_from + 120).min(-1);
                s.run(
                    rng,
                    when,
                    super::handlers::decide,
                    json!({"id": id, "decision": "write_off",
                           "reason": "Dívida antiga sem perspectiva de recuperação"}),
                )?;
            }
            Plan::Overdue if i % 7 == 3 => {
                s.run(
                    rng,
                    -1,
                    super::handlers::pause_charge,
                    json!({"id": id, "reason": "Devedor contestou o valor; em análise"}),
                )?;
            }
            _ => {}
        }
    }
    s.run(rng, 0, sweep_run, json!({}))?;
    Ok(())
}
