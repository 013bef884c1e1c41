//! The listener of membership changes across processes (migration 5's `NOTIFY`).
//!
//! One thread per store, started at the first [`super::Store::members_epoch`] question
//! (a store nobody asks, as in most tests, opens no extra connection), on a connection
//! of its own that does nothing but `LISTEN dunning_members`. Every notification whose
//! payload names this store's schema bumps the [`MemberEpoch`] (the channel is the
//! database's, shared by every schema in it: another schema's members are not this
//! store's, and counting them would only empty its caches for nothing); while the
//! connection is not up (not yet, or lost) the epoch answers `None`, so nothing cached
//! from membership is used, and it reconnects every second. It ends within [`POLL`] of the store being dropped.

use std::sync::{Arc, Weak};
use std::thread;
use std::time::Duration;

use postgres::fallible_iterator::FallibleIterator as _;
use tokio_postgres::Config;

use crate::store::MemberEpoch;

/// How long the listener waits for a notification before checking the store is alive.
const POLL: Duration = Duration::from_millis(250);

/// Starts the listener thread for `epoch`, of the store in `schema`; it connects with
/// `config`.
pub(super) fn listen(config: Config, schema: &str, epoch: &Arc<MemberEpoch>) {
    let epoch = Arc::downgrade(epoch);
    let schema = schema.to_owned();
    let spawned = thread::Builder::new()
        .name("pg-members".into())
        .spawn(move || run(&config, &schema, &epoch));
    // Without the thread the epoch stays unwatched: correct, only uncached.
    drop(spawned);
}

fn run(config: &Config, schema: &str, epoch: &Weak<MemberEpoch>) {
    loop {
        let Ok(mut client) = super::blocking(config) else {
            if !alive(epoch) {
                return;
            }
            thread::sleep(Duration::from_secs(1));
            continue;
        };
        if client.batch_execute("LISTEN dunning_members").is_ok() {
            let Some(e) = epoch.upgrade() else { return };
            e.set_watched(true);
            drop(e);
            loop {
                let next = client.notifications().timeout_iter(POLL).next();
                match next {
                    Ok(Some(n)) if n.payload() != schema => {}
                    Ok(Some(_)) => match epoch.upgrade() {
                        Some(e) => e.bump(),
                        None => return,
                    },
                    Ok(None) if alive(epoch) && !client.is_closed() => {}
                    Ok(None) | Err(_) => break,
                }
            }
        }
        match epoch.upgrade() {
            Some(e) => e.set_watched(false),
            None => return,
        }
        thread::sleep(Duration::from_secs(1));
    }
}

fn alive(epoch: &Weak<MemberEpoch>) -> bool {
    epoch.strong_count() > 0
}
