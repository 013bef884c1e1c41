//! The process's descriptor limit, raised at start.
//!
//! Every connection is a descriptor, and so is every lingering close, the store's
//! files and the jobs' sockets. With the usual soft limit of 1,024, connections past it
//! wait unanswered in the kernel's backlog (no `503`, nothing logged), long before
//! `max_connections` is reached. So `serve` raises its soft limit to the hard one (as
//! nginx's `worker_rlimit_nofile` or Go's runtime do), and warns when even that is below
//! what the configured caps need.

use rustix::process::{Resource, Rlimit, getrlimit, setrlimit};

/// Descriptors needed besides the connections: lingering closes (at most
/// `MAX_LINGERING`), the store, the listener, the jobs.
pub(crate) const SPARE: u64 = dunning_runtime::MAX_LINGERING as u64 + 128;

/// Raises the soft limit to the hard one. Returns the soft limit now in force and
/// whether it covers `max_connections` plus [`SPARE`].
pub(crate) fn raise(max_connections: usize) -> (Option<u64>, bool) {
    let current = getrlimit(Resource::Nofile);
    let soft = match current.maximum {
        Some(hard) if current.current.is_some_and(|soft| soft < hard) => {
            let raised = Rlimit {
                current: Some(hard),
                maximum: Some(hard),
            };
            match setrlimit(Resource::Nofile, raised) {
                Ok(()) => Some(hard),
                Err(_) => current.current,
            }
        }
        // No hard limit (infinite) or already at it.
        _ => current.current,
    };
    let needed = max_connections as u64 + SPARE;
    (soft, soft.is_none_or(|s| s >= needed))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_soft_limit_is_raised_to_the_hard_one() {
        let before = getrlimit(Resource::Nofile);
        let (soft, _) = raise(10);
        let after = getrlimit(Resource::Nofile);
        assert_eq!(after.current, soft);
        assert_eq!(after.current, before.maximum.or(before.current));
    }

    #[test]
    fn a_limit_below_the_caps_is_reported() {
        let (soft, enough) = raise(usize::MAX / 2);
        assert!(soft.is_some(), "a finite limit on this machine");
        assert!(!enough, "{soft:?} cannot cover that many connections");
    }
}
