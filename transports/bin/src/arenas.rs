//! One glibc malloc arena for `serve`.
//!
//! glibc's malloc gives each thread that allocates an arena of its own, up to eight per
//! core, and keeps what was freed there, resident, for that arena's next allocations.
//! Answers are built on many threads (tokio's blocking pool, the workers of the blocking
//! and mio adapters): 24 clients pipelining large answers left 26-28 MB more resident
//! with the default arenas than with two, and that memory stayed after they closed.
//! With one, what a burst of answers freed on one thread is reused by the next on any
//! thread: the mio adapter's growth went from 33-41 MiB (two arenas) to 32 MiB, tokio's
//! and the blocking adapter's to 27-29, side by side; each thread's cache (tcache) still
//! serves small allocations without the arena's lock (`docs/decisions.md`, "Output cap"). glibc reads the cap from `MALLOC_ARENA_MAX` before
//! `main`, so `serve` re-executes itself with it set; an operator's own value is kept.

use std::ffi::OsString;

/// The variable glibc reads, and the cap set when it is unset.
const VAR: &str = "MALLOC_ARENA_MAX";
const ARENAS: &str = "1";

/// Re-executes this process with [`VAR`] set, unless it is set already (then returns at
/// once). Returns only when that cannot be done (the binary was replaced on disk, say):
/// the server then runs with glibc's default arenas, which is only more memory.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
pub(crate) fn cap() {
    use std::os::unix::process::CommandExt;
    if std::env::var_os(VAR).is_some() {
        return;
    }
    let Ok(exe) = std::env::current_exe() else {
        return;
    };
    let mut args = std::env::args_os();
    let arg0 = args
        .next()
        .unwrap_or_else(|| OsString::from("kobana-dunning"));
    let err = std::process::Command::new(exe)
        .arg0(arg0)
        .args(args)
        .env(VAR, ARENAS)
        .exec();
    eprintln!("kobana-dunning: warning: running with glibc's default malloc arenas ({err})");
}

/// Other platforms' allocators need no cap.
#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
pub(crate) fn cap() {
    let _ = (VAR, ARENAS, OsString::new());
}
