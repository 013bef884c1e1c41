//! Deterministic demo data (the `demo` command): organizations `demo` and `acme`, their members,
//! and each group's entities, created through the same handlers the tools run (so every
//! row has its events). Same input, same data: ids derive from a fixed seed.

use dunning_core::{Audience, Output, Principal, Scope, UnixTime};
use serde_json::{Map, Value, json};
use sha2::{Digest, Sha256};

use crate::brazil::{calendar, document};
use crate::error::DomainError;
use crate::op::Op;
use crate::org::{Member, Organization, Settings};
use crate::store::{self, Kind, WriteScope, save};
use crate::{Domain, tool::Run};

/// A small deterministic generator (SplitMix64).
#[derive(Clone, Debug)]
pub struct Rng(u64);

impl Rng {
    /// Seeded generator.
    pub fn new(seed: u64) -> Self {
        Self(seed)
    }
    /// Next 64 bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    /// Uniform in `0..n` (n > 0).
    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n.max(1)
    }
    /// One element of a slice.
    pub fn pick<'a, T>(&mut self, xs: &'a [T]) -> &'a T {
        &xs[self.below(xs.len() as u64) as usize]
    }
    /// 32 bytes of entropy for an operation.
    pub fn entropy(&mut self) -> [u8; 32] {
        let mut out = [0u8; 32];
        for chunk in out.chunks_mut(8) {
            chunk.copy_from_slice(&self.next_u64().to_be_bytes());
        }
        out
    }
}

/// A stable UUID for a name (organizations, members).
pub fn stable_id(name: &str) -> String {
    let d = Sha256::digest(name.as_bytes());
    let mut b = [0u8; 16];
    b.copy_from_slice(&d[..16]);
    b[6] = (b[6] & 0x0f) | 0x40;
    b[8] = (b[8] & 0x3f) | 0x80;
    let h: String = b.iter().map(|x| format!("{x:02x}")).collect();
    format!(
        "{}-{}-{}-{}-{}",
        &h[..8],
        &h[8..12],
        &h[12..16],
        &h[16..20],
        &h[20..]
    )
}

/// The demo organizations' slugs: what [`seed`] creates and [`reseed`] wipes first.
/// Every other organization in a store is left alone.
pub const ORGS: [&str; 2] = ["demo", "acme"];

/// A person of the demo data, for a token minted without asking who.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Identity {
    /// The organization's slug.
    pub org: &'static str,
    /// The person's e-mail.
    pub person: &'static str,
    /// The person's role (the token's scopes follow from it).
    pub role: &'static str,
}

impl Identity {
    /// The organization's id.
    pub fn org_id(&self) -> String {
        org_id(self.org)
    }
}

/// Who the development token `serve` prints speaks for: the owner of `demo`.
pub const fn dev_identity() -> Identity {
    Identity {
        org: ORGS[0],
        person: "ana@demo.example",
        role: "owner",
    }
}

/// The id of the demo organization `slug`.
pub fn org_id(slug: &str) -> String {
    stable_id(&format!("org:{slug}"))
}

/// Members of the demo organizations: (org slug, e-mail, name, role).
pub const MEMBERS: &[(&str, &str, &str, &str)] = &[
    ("demo", "ana@demo.example", "Ana Souza", "owner"),
    ("demo", "dora@demo.example", "Dora Lima", "admin"),
    ("demo", "caio@demo.example", "Caio Pereira", "operator"),
    ("demo", "bruno@demo.example", "Bruno Alves", "viewer"),
    ("acme", "carla@acme.example", "Carla Mendes", "owner"),
];

/// Creates an organization with its members (idempotent).
pub fn seed_org(
    domain: &Domain,
    slug: &str,
    name: &str,
    cnpj: &str,
    now: UnixTime,
) -> Result<String, DomainError> {
    let id = org_id(slug);
    let at = calendar::timestamp(now);
    store::write(domain.store(), WriteScope::Org(&id), |tx| {
        let org = Organization {
            id: id.clone(),
            slug: slug.to_owned(),
            name: name.to_owned(),
            cnpj: cnpj.to_owned(),
            timezone: "America/Sao_Paulo".into(),
            settings: Settings::default(),
            created_at: at.clone(),
            updated_at: at.clone(),
        };
        save(tx, Kind::Organization, &id, &org)?;
        for (o, email, mname, role) in MEMBERS.iter().filter(|m| m.0 == slug) {
            let m = Member {
                id: stable_id(&format!("member:{o}:{email}")),
                name: (*mname).to_owned(),
                email: (*email).to_owned(),
                role: (*role).to_owned(),
                permissions: Vec::new(),
                created_at: at.clone(),
                updated_at: at.clone(),
            };
            save(tx, Kind::Member, &id, &m)?;
        }
        Ok(())
    })?;
    Ok(id)
}

/// The principal of an organization's owner (demo seeding, workers, tests).
pub fn owner(domain: &Domain, org_id: &str, now: UnixTime) -> Result<Principal, DomainError> {
    let owner = store::read(domain.store(), |tx| {
        let members: Vec<Member> = store::find(tx, Kind::Member, org_id, &store::Query::all())?;
        Ok(members.into_iter().find(|m| m.role == "owner"))
    })?
    .ok_or_else(|| DomainError::not_found("owner of organization", org_id))?;
    Ok(Principal {
        subject: owner.email.clone(),
        organization: org_id.to_owned(),
        scope: Some(Scope::Admin),
        scopes: crate::catalog::SCOPES.all().map(str::to_owned).to_vec(),
        permissions: owner.effective_permissions().into(),
        expires_at: now.plus_millis(3_600_000),
        audience: Audience::Api,
    })
}

/// Runs a handler as `principal` in a write transaction (no idempotency, no schema),
/// with default settings and the domain's outbound budget.
pub fn run_as(
    domain: &Domain,
    principal: &Principal,
    now: UnixTime,
    entropy: [u8; 32],
    run: Run,
    args: Value,
) -> Result<Output, DomainError> {
    let ctx = (principal, now, entropy);
    run_with(domain, ctx, run, args, domain.outbound(), |_| {
        Ok(Settings::default())
    })
}

/// [`run_as`] with the settings `settings` reads in the transaction and the budget
/// `outbound` (a seed written at past times brings its own: a shared budget would
/// refuse it).
pub(crate) fn run_with(
    domain: &Domain,
    (principal, now, entropy): (&Principal, UnixTime, [u8; 32]),
    run: Run,
    args: Value,
    outbound: &crate::outbound::Outbound,
    settings: impl FnOnce(&mut dyn store::Tx) -> Result<Settings, DomainError>,
) -> Result<Output, DomainError> {
    let args: Map<String, Value> = match args {
        Value::Object(m) => m,
        _ => Map::new(),
    };
    store::write(
        domain.store(),
        WriteScope::Org(&principal.organization),
        |tx| {
            let settings = settings(tx)?;
            let mut op = Op::new(
                tx,
                &principal.organization,
                principal,
                now,
                &args,
                "demo",
                entropy,
                settings,
                outbound,
                domain.registry(),
            );
            run(&mut op)
        },
    )
}

/// Seeds the demo data in a store that holds no organization, and says whether it did:
/// a store with any organization (demo or not) is someone's, and is never seeded.
pub fn seed_if_empty(domain: &Domain, now: UnixTime) -> Result<bool, DomainError> {
    if !store::read(domain.store(), |tx| Ok(tx.organizations()?))?.is_empty() {
        return Ok(false);
    }
    seed(domain, now)?;
    Ok(true)
}

/// Deletes every document of the demo organizations ([`ORGS`]), then seeds them again;
/// the store's other organizations are not touched.
pub fn reseed(domain: &Domain, now: UnixTime) -> Result<(), DomainError> {
    let orgs = ORGS.map(org_id);
    store::write(domain.store(), WriteScope::All, |tx| {
        for org in &orgs {
            for kind in Kind::ALL.iter().rev() {
                for doc in tx.find(*kind, org, &store::Query::all())? {
                    if let Some(id) = doc.get("id").and_then(|v| v.as_str()) {
                        tx.delete(*kind, org, id)?;
                    }
                }
            }
        }
        Ok(())
    })?;
    seed(domain, now)
}

/// Everything the demo seeding produced for one organization, for later groups to use.
#[derive(Clone, Debug, Default)]
pub struct Seeded {
    /// Debtor ids.
    pub debtors: Vec<String>,
}

/// Seeds both demo organizations. Deterministic for a given `now`.
pub fn seed(domain: &Domain, now: UnixTime) -> Result<(), DomainError> {
    let [demo, acme] = ORGS;
    let demo = seed_org(domain, demo, "Demo Cobranças Ltda", "11222333000181", now)?;
    let acme = seed_org(domain, acme, "Acme Serviços S.A.", "12345678000195", now)?;
    seed_entities(domain, &demo, 40, 200, now, 1)?;
    seed_entities(domain, &acme, 8, 30, now, 2)?;
    domain.store().loaded();
    Ok(())
}

const FIRST: &[&str] = &[
    "Maria", "João", "Ana", "Pedro", "Luiza", "Carlos", "Beatriz", "Rafael", "Fernanda", "Lucas",
];
const LAST: &[&str] = &[
    "Silva",
    "Santos",
    "Oliveira",
    "Souza",
    "Rodrigues",
    "Ferreira",
    "Almeida",
    "Costa",
    "Gomes",
    "Ribeiro",
];
const CITIES: &[(&str, &str)] = &[
    ("São Paulo", "SP"),
    ("Rio de Janeiro", "RJ"),
    ("Belo Horizonte", "MG"),
    ("Curitiba", "PR"),
    ("Recife", "PE"),
];

fn seed_entities(
    domain: &Domain,
    org: &str,
    debtors: usize,
    charges: usize,
    now: UnixTime,
    seed: u64,
) -> Result<(), DomainError> {
    let who = owner(domain, org, now)?;
    let mut rng = Rng::new(seed);
    let mut seeded = Seeded::default();
    for i in 0..debtors {
        let company = i % 5 == 4;
        let (doc, name) = if company {
            let mut base = [0u8; 12];
            for b in base.iter_mut().take(8) {
                *b = rng.below(10) as u8;
            }
            base[11] = 1;
            (
                document::cnpj_from_base(&base),
                format!("{} {} Comércio Ltda", rng.pick(LAST), rng.pick(LAST)),
            )
        } else {
            let mut base = [0u8; 9];
            for b in &mut base {
                *b = rng.below(10) as u8;
            }
            base[0] = (i % 9 + 1) as u8;
            (
                document::cpf_from_base(&base),
                format!("{} {}", rng.pick(FIRST), rng.pick(LAST)),
            )
        };
        let (city, state) = *rng.pick(CITIES);
        let args = json!({
            "cnpj_cpf": doc,
            "name": name,
            "external_code": format!("CLI-{:04}", i + 1),
            "address": {
                "street": "Rua das Flores", "number": format!("{}", 10 + i), "complement": "",
                "neighborhood": "Centro", "city": city, "state": state,
                "zipcode": format!("{:08}", 1_000_000 + rng.below(8_999_999)),
            },
            "tags": if i % 3 == 0 { json!(["vip"]) } else { json!([]) },
        });
        let out = run_as(
            domain,
            &who,
            now,
            rng.entropy(),
            crate::ops::debtors::create_run(),
            args,
        );
        match out {
            Ok(Output::Json { body, .. }) => {
                if let Some(id) = body.into_value().get("id").and_then(Value::as_str) {
                    seeded.debtors.push(id.to_owned());
                }
            }
            Ok(_) => {}
            // A re-seed of an existing data dir finds the document taken: keep going.
            Err(DomainError::Conflict(_)) => {}
            Err(e) => return Err(e),
        }
    }
    for hook in crate::ops::DEMO_HOOKS {
        hook(domain, &who, now, &mut rng, &seeded, charges)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_dev_identity_is_a_member_of_a_demo_organization_with_its_role() {
        let dev = dev_identity();
        assert!(ORGS.contains(&dev.org));
        assert!(
            MEMBERS
                .iter()
                .any(|m| (m.0, m.1, m.3) == (dev.org, dev.person, dev.role))
        );
        assert_eq!(dev.org_id(), stable_id("org:demo"));
    }

    #[test]
    fn a_store_with_any_organization_is_never_seeded() {
        let domain = Domain::new(crate::testing::store());
        let now = UnixTime::from_millis(1_767_225_600_000);
        seed_org(&domain, "other", "Outra Ltda", "11444777000161", now).unwrap();
        assert!(!seed_if_empty(&domain, now).unwrap());
        let orgs = store::read(domain.store(), |tx| Ok(tx.organizations()?)).unwrap();
        assert_eq!(orgs.len(), 1, "only the organization that was there");
    }
}
