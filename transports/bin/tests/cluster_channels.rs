//! Through `scripts/cluster/run 3`, the shipped shape (three replicas on one PostgreSQL
//! schema behind nginx), each replica running the ruler engine every second against one
//! real SMTP server (a slow one, so their sends overlap): every delivery is sent once.
//! Each replica claims a delivery with a lease before sending it, so the others leave it
//! alone. Runs when `DUNNING_TEST_PG` names a database (CI's PostgreSQL step): the script
//! runs on that database's server, in a fresh schema of its database `dunning_cluster`,
//! dropped when it stops; says so and passes otherwise.
//!
//! In order: the script is started with this test's binary (`KD_BIN`), its config tables
//! (`KD_CONFIG`), clock (`KD_CLOCK`) and free ports (`KD_PORT`); its command writes
//! `KD_URL`, `KD_TOKEN` and `KD_DIR` to a file and waits for a stop file; every tool call
//! goes through nginx; then the stop file is made and the script must exit 0 with its
//! schema gone. A [`Cluster`] dropped early (a failed assertion) stops the script too.

mod common;
#[path = "support/smtp.rs"]
mod smtp;

use std::collections::HashMap;
use std::fs::File;
use std::net::TcpListener;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use common::pg::pg_url;
use common::{BIN, clock_args, cpf, date_in, mcp_call, scratch, tool_ok};
use rustix::process::{Pid, Signal, kill_process_group};
use serde_json::{Value, json};
use smtp::Sink;

/// Messages the test sends.
const MESSAGES: u32 = 30;
/// The repository's root, where the script lives.
const ROOT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../..");
/// The script's command: the cluster's coordinates to `$0` (written whole, then renamed),
/// then a wait of at most 300 s for the stop file `$1`.
const WAITER: &str = r#"printf '%s\n' "$KD_URL" "$KD_TOKEN" "$KD_DIR" >"$0.tmp" && mv "$0.tmp" "$0" || exit 1
for ((i = 0; i < 3000; i++)); do [[ -e $1 ]] && exit 0; sleep 0.1; done
echo "cluster_channels: no stop file in 300 s" >&2; exit 1"#;
/// How long the replicas may take to start (the script's own bound per replica is 180 s).
const START: Duration = Duration::from_secs(240);
/// How long the script may take to stop nginx, the replicas and drop its schema.
const STOP: Duration = Duration::from_secs(60);

/// `scripts/cluster/run 3` running, in a process group of its own.
struct Cluster {
    child: Child,
    /// The scratch dir: config, coordinates, stop file, the script's output.
    dir: PathBuf,
    /// Set once the script was stopped and reaped.
    done: bool,
}

/// What the script's command saw.
struct Coordinates {
    /// `127.0.0.1:PORT`, nginx.
    addr: String,
    token: String,
    /// The script's run dir (`.cluster/<pid>`): the replicas' logs.
    run: PathBuf,
}

impl Cluster {
    fn start(pg_server: &str, config: &str) -> (Self, Coordinates) {
        let dir = scratch("cluster-channels");
        let config_path = dir.join("extra.toml");
        std::fs::write(&config_path, config).unwrap();
        let out = File::create(dir.join("script.log")).unwrap();
        let port = free_ports(4);
        let child = Command::new("bash")
            .current_dir(ROOT)
            .args(["scripts/cluster/run", "3", "--", "bash", "-c", WAITER])
            .arg(dir.join("coordinates"))
            .arg(dir.join("stop"))
            .env("KD_PROFILE", "debug")
            .env("KD_PORT", port.to_string())
            .env("KD_PG", pg_server)
            .env("KD_BIN", BIN)
            .env("KD_CONFIG", &config_path)
            .env("KD_CLOCK", &clock_args()[1])
            .env(
                "KD_LIMITS",
                "org_per_minute=600000 org_burst=100000 token_per_minute=600000 token_burst=100000",
            )
            .stdin(Stdio::null())
            .stdout(out.try_clone().unwrap())
            .stderr(out)
            .process_group(0)
            .spawn()
            .expect("bash");
        let mut cluster = Self {
            child,
            dir,
            done: false,
        };
        let coordinates = cluster.coordinates();
        (cluster, coordinates)
    }

    /// Waits (bounded) for the command's file; fails with the script's output when the
    /// script ends first.
    fn coordinates(&mut self) -> Coordinates {
        let path = self.dir.join("coordinates");
        let deadline = Instant::now() + START;
        while !path.exists() {
            if let Some(status) = self.child.try_wait().unwrap() {
                self.done = true;
                panic!(
                    "the script ended ({status}) before its command ran:\n{}",
                    self.output()
                );
            }
            assert!(
                Instant::now() < deadline,
                "no cluster in {START:?}:\n{}",
                self.output()
            );
            thread::sleep(Duration::from_millis(100));
        }
        let text = std::fs::read_to_string(&path).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        let [url, token, run] = lines[..] else {
            panic!("coordinates: {text:?}")
        };
        let addr = url
            .strip_prefix("http://")
            .and_then(|a| a.strip_suffix('/'))
            .unwrap_or_else(|| panic!("KD_URL={url:?}"))
            .to_owned();
        Coordinates {
            addr,
            token: token.to_owned(),
            run: PathBuf::from(run),
        }
    }

    fn output(&self) -> String {
        std::fs::read_to_string(self.dir.join("script.log")).unwrap_or_default()
    }

    /// Makes the stop file and reaps the script, within `within`; `None` past it.
    fn stop(&mut self, within: Duration) -> Option<ExitStatus> {
        let _ = File::create(self.dir.join("stop"));
        let deadline = Instant::now() + within;
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                self.done = true;
                return Some(status);
            }
            if Instant::now() >= deadline {
                return None;
            }
            thread::sleep(Duration::from_millis(100));
        }
    }
}

impl Drop for Cluster {
    /// After a failure: the stop file first (the script then stops what it started and
    /// drops its schema), SIGTERM to its process group past 30 s, SIGKILL past 10 more.
    fn drop(&mut self) {
        if self.done || self.stop(Duration::from_secs(30)).is_some() {
            return;
        }
        let group = Pid::from_child(&self.child);
        let _ = kill_process_group(group, Signal::TERM);
        if self.stop(Duration::from_secs(10)).is_none() {
            let _ = kill_process_group(group, Signal::KILL);
            let _ = self.child.wait();
        }
    }
}

/// A base port in 20000..29000 whose `count` ports from it are free on loopback.
fn free_ports(count: u16) -> u16 {
    let seed = std::process::id().wrapping_mul(2_654_435_761)
        ^ u32::try_from(common::now_ms() % 1_000_000_007).unwrap();
    for n in 0..200u32 {
        let base = 20000 + u16::try_from(seed.wrapping_add(n.wrapping_mul(7919)) % 9000).unwrap();
        if (base..base + count).all(|p| TcpListener::bind(("127.0.0.1", p)).is_ok()) {
            return base;
        }
    }
    panic!("no {count} free loopback ports in 20000..29000 after 200 tries");
}

/// The server part of a database URL (the script names its own database on it):
/// `postgres://u@h:5432/db` is `postgres://u@h:5432`.
fn server_of(url: &str) -> &str {
    let (scheme, rest) = url.split_once("://").expect("DUNNING_TEST_PG is a URL");
    match rest.find(['/', '?']) {
        Some(end) => &url[..scheme.len() + 3 + end],
        None => url,
    }
}

fn ok(addr: &str, token: &str, tool: &str, args: Value) -> Value {
    let r = mcp_call(addr, token, tool, &args).unwrap_or_else(|| panic!("{tool}: no answer"));
    tool_ok(&r).unwrap_or_else(|e| panic!("{tool}: {e}"))
}

/// Messages the sink received, by recipient.
fn received(sink: &Sink) -> HashMap<String, usize> {
    let mut by = HashMap::new();
    for e in sink.events() {
        if e["event"] == "message" {
            for to in e["rcpt_tos"].as_array().unwrap() {
                *by.entry(to.as_str().unwrap().to_owned()).or_insert(0) += 1;
            }
        }
    }
    by
}

/// The replicas (`replica-N.err` in the script's run dir) that logged a send.
fn senders(run: &Path) -> usize {
    (1..=3)
        .filter(|i| {
            std::fs::read_to_string(run.join(format!("replica-{i}.err")))
                .is_ok_and(|log| log.contains("delivery sent"))
        })
        .count()
}

#[test]
fn three_replicas_behind_nginx_send_each_delivery_once() {
    let Some(url) = pg_url() else { return };
    let pg_server = server_of(&url).to_owned();
    let sink = Sink::slow(150);
    let config = format!(
        "[jobs]\nengine_interval_secs = 1\n\
         [channels.email]\ndriver = \"smtp\"\nurl = \"smtp://127.0.0.1:{}\"\n\
         from = \"Cobranca Demo <cobranca@demo.example>\"\n",
        sink.port
    );
    let (mut cluster, at) = Cluster::start(&pg_server, &config);
    let (addr, token) = (at.addr.as_str(), at.token.as_str());

    // A ruler open all day, one e-mail on the due date; charges due today, all through
    // nginx, which spreads them over the replicas.
    let created = ok(
        addr,
        token,
        "dunning_rulers_create",
        json!({
            "name": "Régua do cluster",
            "send_window": {"start": "00:00", "end": "23:59", "saturday_end": "23:59", "skip_holidays": false},
            "steps": [{"offset_days": 0, "channel": "email", "send_at": "00:00",
                       "template": {"subject": "Vence hoje", "body": "Olá {{debtor.name}}, {{charge.amount}} vence hoje."}}]
        }),
    );
    let ruler = created["id"].as_str().unwrap().to_owned();
    let step = created["steps"][0]["id"].as_str().unwrap().to_owned();
    ok(addr, token, "dunning_rulers_activate", json!({"id": ruler}));
    let mut addresses = Vec::new();
    for n in 0..MESSAGES {
        let d = ok(
            addr,
            token,
            "dunning_debtors_create",
            json!({"cnpj_cpf": cpf(428_000_000 + n), "name": format!("Cliente {n}")}),
        )["id"]
            .as_str()
            .unwrap()
            .to_owned();
        let email = format!("cliente{n}@cluster.example");
        ok(
            addr,
            token,
            "dunning_contact_points_create",
            json!({"id": d, "channel": "email", "value": email}),
        );
        ok(
            addr,
            token,
            "dunning_charges_create",
            json!({"debtor_id": d, "amount": 10.0 + f64::from(n), "due_date": date_in(0),
                   "payment_method": "pix", "ruler_id": ruler}),
        );
        addresses.push(email);
    }

    // Every one arrives...
    let deadline = Instant::now() + Duration::from_secs(90);
    while addresses
        .iter()
        .any(|a| !received(&sink).contains_key(a.as_str()))
    {
        assert!(
            Instant::now() < deadline,
            "not all sent: {:?}",
            received(&sink)
        );
        thread::sleep(Duration::from_millis(250));
    }
    // ...and after several more ticks of every replica, still once.
    thread::sleep(Duration::from_secs(4));
    let got = received(&sink);
    for a in &addresses {
        assert_eq!(
            got.get(a.as_str()),
            Some(&1),
            "{a} received {:?}",
            got.get(a.as_str())
        );
    }
    let sent = ok(
        addr,
        token,
        "dunning_deliveries_list",
        json!({"step_id": step, "status": "sent", "per_page": 100}),
    );
    let ours: Vec<&Value> = sent["data"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|d| {
            d["to"]
                .as_str()
                .is_some_and(|t| t.ends_with("@cluster.example"))
        })
        .collect();
    assert_eq!(ours.len(), MESSAGES as usize);
    assert!(ours.iter().all(|d| d["attempt"] == 1), "one attempt each");
    // The work was shared: more than one replica sent.
    let senders = senders(&at.run);
    assert!(senders >= 2, "only {senders} replica sent");

    // The script stops nginx and the replicas, drops its schema (`c_` and its pid) and
    // exits 0.
    let schema = format!("c_{}", cluster.child.id());
    let status = cluster.stop(STOP);
    assert!(
        status.is_some_and(|s| s.success()),
        "the script's exit: {status:?}\n{}",
        cluster.output()
    );
    let mut db =
        postgres::Client::connect(&format!("{pg_server}/dunning_cluster"), postgres::NoTls)
            .unwrap();
    let left = db
        .query("SELECT 1 FROM pg_namespace WHERE nspname = $1", &[&schema])
        .unwrap();
    assert!(left.is_empty(), "schema {schema} left behind");
    let _ = std::fs::remove_dir_all(&at.run);
    common::discard(&cluster.dir);
}
