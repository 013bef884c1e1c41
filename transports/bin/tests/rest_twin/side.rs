//! One server of the three: the core [`Server`] over the real [`Domain`] on its own
//! seeded store, served by the blocking adapter on a loopback port, under a fixed clock
//! and a request counter the sequence sets before each operation.

use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::thread::JoinHandle;
use std::time::Duration;

use dunning_core::{
    Audience, AuthError, Authenticate, Config, Env, Keys, Load, Principal, Server, UnixTime,
};
use dunning_domain::store::{self, Kind, Query, Store};
use dunning_domain::testing::T0;
use dunning_domain::{Domain, demo};
use dunning_runtime::{EnvSource, NoopObserver, Options};
use dunning_tests::client::{self, Resp};

use crate::{PERSON, TOKEN};

/// A clock fixed at the demo seeding time and a request counter the test sets before each
/// operation, so both servers run it with the same `Env` (entropy and request id).
pub(crate) struct Steered {
    pub(crate) now: UnixTime,
    pub(crate) counter: AtomicU64,
}

impl EnvSource for Steered {
    fn now(&self) -> UnixTime {
        self.now
    }

    fn env(&self, load: Load) -> Env {
        let mut env = Env::fixed(self.now, self.counter.load(Ordering::SeqCst));
        env.load = load;
        env
    }
}

/// Accepts [`TOKEN`] as [`PERSON`] of `demo`, looked up in the store at every request like
/// the product's authenticator does after verifying a JWT; same principal for both
/// audiences (see the module documentation).
pub(crate) struct TwinAuth {
    pub(crate) domain: Domain,
}

impl Authenticate for TwinAuth {
    fn authenticate(
        &self,
        token: &str,
        _audience: Audience,
        now: UnixTime,
    ) -> Result<Principal, AuthError> {
        if token != TOKEN {
            return Err(AuthError::Signature);
        }
        let scopes: Vec<String> = dunning_domain::catalog::SCOPES
            .all()
            .map(str::to_owned)
            .to_vec();
        self.domain.principal(
            "demo",
            PERSON,
            &scopes,
            Audience::Mcp,
            now.plus_millis(3_600_000),
        )
    }
}

/// One server on a loopback port.
pub(crate) struct Side {
    pub(crate) server: Arc<Server<Domain>>,
    pub(crate) store: Arc<dyn Store>,
    pub(crate) env: Arc<Steered>,
    pub(crate) addr: SocketAddr,
    pub(crate) stop: Arc<AtomicBool>,
    pub(crate) thread: Option<JoinHandle<std::io::Result<()>>>,
}

impl Side {
    pub(crate) fn start() -> Self {
        // In-memory SQLite, or a fresh PostgreSQL schema when `DUNNING_TEST_PG` is set
        // (dropped with the store), as the domain's tests get theirs.
        let store = dunning_domain::testing::store();
        let domain = Domain::new(store.clone());
        demo::seed(&domain, T0).expect("demo seed");
        let auth = TwinAuth {
            domain: Domain::new(store.clone()),
        };
        let server = Arc::new(
            Server::new(
                Config::default(),
                Keys::single(b"rest-twin-state-key-0123456789abcdef"),
                domain,
                auth,
            )
            .expect("the catalogue is valid"),
        );
        let env = Arc::new(Steered {
            now: T0,
            counter: AtomicU64::new(0),
        });
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind loopback");
        let addr = listener.local_addr().expect("local addr");
        let opts = Options {
            env: env.clone(),
            workers: 2,
            ..Options::default()
        };
        let stop = Arc::new(AtomicBool::new(false));
        let thread = {
            let (server, stop) = (server.clone(), stop.clone());
            std::thread::spawn(move || {
                dunning_blocking::serve(listener, server, opts, Arc::new(NoopObserver), stop)
            })
        };
        Self {
            server,
            store,
            env,
            addr,
            stop,
            thread: Some(thread),
        }
    }

    /// Every document of every organization, as stored (JSON text, in a fixed order).
    pub(crate) fn snapshot(&self) -> Vec<String> {
        store::read(&*self.store, |tx| {
            let mut docs = Vec::new();
            for org in tx.organizations()? {
                for kind in Kind::ALL {
                    docs.push(format!("{org} {}", kind.table()));
                    docs.extend(tx.find_raw(kind, &org, &Query::all())?);
                }
            }
            Ok(docs)
        })
        .expect("store snapshot")
    }

    /// One request on a fresh connection, answered under request counter `n`: written
    /// whole and read to the end (any I/O error fails), and framed exactly.
    pub(crate) fn send(
        &self,
        n: u64,
        method: &str,
        target: &str,
        headers: &[(String, String)],
        body: &[u8],
    ) -> Resp {
        self.env.counter.store(n, Ordering::SeqCst);
        let addr = self.addr.to_string();
        let headers: Vec<(&str, &str)> = headers
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect();
        let raw = client::request(&addr, method, target, &headers, body);
        let out = client::roundtrip(&addr, &raw).expect("request and response");
        let reply = Resp::parse(&out);
        // A 204 has no body and no Content-Length (RFC 9110 §8.6); any other answer
        // declares exactly the body it sends.
        let expected = (reply.status != 204).then_some(reply.body.len() + reply.excess);
        assert_eq!(
            reply.content_length(),
            expected,
            "Content-Length of {reply:?}"
        );
        reply
    }
}

impl Drop for Side {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Release);
        let _ = TcpStream::connect_timeout(&self.addr, Duration::from_secs(1));
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}
