//! # kobana-dunning: the product binary
//!
//! One binary, three commands:
//!
//! * `serve` — the MCP server (and the `/v1` REST API) on the tokio, blocking or mio
//!   adapter: [`serve`] wires the OS into the sans-IO core;
//! * `token` — prints a development access token signed with the data dir's key;
//! * `demo` — re-seeds the demo organizations.
//!
//! This crate is the one place where sockets, the clock, randomness, files and signals
//! meet the core. Its own pieces: [`auth`] (JWT → cache → store), [`limiter`] (GCRA per
//! organization and token), [`telemetry`] (request log line and `/metrics`),
//! [`settings`] (TOML file and flags), [`datadir`] (database and keys on disk), [`clock`]
//! (the one wall clock every command reads), [`keys`] (every key held: verification,
//! development, requestState), [`outbound`] (every client toward another machine:
//! webhooks, channel providers, JWKS, client metadata, OTLP), [`channels`] (messages to
//! debtors: which driver, their budgets, the providers' callbacks), [`jobs`] (runs the
//! domain's schedule). The domain decides; these modules wire it to the OS.

#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod arenas;
mod auth;
mod channels;
mod cli;
mod clock;
mod datadir;
mod fdlimit;
mod instructions;
mod jobs;
mod keys;
mod limiter;
mod outbound;
mod serve;
mod settings;
mod telemetry;
mod token;

use std::process::ExitCode;

use clap::Parser as _;
use dunning_domain::Domain;

use crate::cli::{Cli, Command, DemoArgs, TokenArgs};
use crate::datadir::{DataDir, DirError};

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match &cli.command {
        Command::Serve(args) => {
            arenas::cap();
            serve::run(args).map_err(DirError::Other)
        }
        Command::Token(args) => token_command(args),
        Command::Demo(args) => demo_command(args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("kobana-dunning: {e}");
            match e {
                // The caller asked for something that cannot be: like a usage error.
                DirError::NotInitialized(_) | DirError::NeedsStore(_) => ExitCode::from(2),
                DirError::Other(_) => ExitCode::FAILURE,
            }
        }
    }
}

/// `token`: prints only the token on stdout.
///
/// It never creates anything: on a data dir that `serve` (or `demo`) did not initialize
/// it refuses (exit code 2) instead of making a key the running server does not trust.
fn token_command(args: &TokenArgs) -> Result<(), DirError> {
    let now = args.data.clock.clock().now();
    let opened = DataDir::open_initialized(&args.data.data_dir, args.data.store.as_deref())?;
    let (org_id, member) = token::lookup(&*opened.store, &args.org, &args.person)?;
    let scope = match (&args.scope, &member) {
        (Some(s), Some(_)) => s.clone(),
        (Some(s), None) => {
            eprintln!(
                "kobana-dunning: warning: {} is not a member of {}; the server will refuse this token",
                args.person, args.org
            );
            s.clone()
        }
        (None, Some(m)) => token::role_scopes(&m.role),
        (None, None) => {
            return Err(format!("{} is not a member of {}", args.person, args.org).into());
        }
    };
    let endpoint = token::endpoint_of(&opened.dir);
    let person = member
        .as_ref()
        .map_or(args.person.as_str(), |m| m.email.as_str());
    let t = token::mint(
        &opened.dev_key,
        &endpoint,
        &token::Request {
            org_id: &org_id,
            person,
            scope: &scope,
            ttl: args.ttl,
            audience: args.audience,
        },
        now,
    );
    println!("{t}");
    Ok(())
}

/// `demo`: wipes and re-seeds the demo organizations, in the data dir's SQLite file or,
/// with `--store` or when the data dir's server recorded one, in the PostgreSQL database
/// the replicas share.
fn demo_command(args: &DemoArgs) -> Result<(), DirError> {
    let now = args.data.clock.clock().now();
    let store = datadir::served_store(&args.data.data_dir, args.data.store.as_deref())?;
    let dir = DataDir::create(&args.data.data_dir)?;
    // The whole directory, keys included, so that `token` works on it at once.
    let init = dir.initialize(store.as_deref(), 0, now, true)?;
    if !init.fresh {
        dunning_domain::demo::reseed(&Domain::new(init.store), now)
            .map_err(|e| format!("demo data: {e}"))?;
    }
    if store.is_some() {
        eprintln!("demo data seeded in the PostgreSQL store");
    } else {
        eprintln!("demo data seeded in {}", dir.path().display());
    }
    Ok(())
}
