//! The command line: `serve`, `token` and `demo`, and their flags.

use std::net::SocketAddr;
use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

/// `kobana-dunning`: the MCP server of Kobana Dunning (Régua de Cobrança).
#[derive(Debug, Parser)]
#[command(name = "kobana-dunning", version, about, long_about = None)]
pub(crate) struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub(crate) command: Command,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub(crate) enum Command {
    /// Serve the MCP endpoint and the /v1 API. On a new data dir: creates the database,
    /// the development keys and the demo data, and prints a development token.
    Serve(ServeArgs),
    /// Print a signed development access token (only the token) on stdout.
    Token(TokenArgs),
    /// Re-seed the demo organizations (`demo`, `acme`) of the data dir.
    Demo(DemoArgs),
}

/// Which network adapter serves the connections.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum Transport {
    /// tokio: a task per connection, the core on the blocking pool (the default).
    Tokio,
    /// std::net: a bounded pool of worker threads.
    Blocking,
    /// mio: one event loop, the core called inline.
    Mio,
}

/// Log line format.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum LogFormat {
    /// Human-readable lines.
    Text,
    /// One JSON object per line.
    Json,
}

/// Which audience a token is minted for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub(crate) enum AudienceArg {
    /// The MCP endpoint (the MCP resource identifier).
    Mcp,
    /// The REST API (`<public url>/v1`).
    Api,
}

/// `serve` options; each also has a config-file key, and the flag wins.
#[derive(Debug, Args)]
pub(crate) struct ServeArgs {
    /// Address to listen on [default: 127.0.0.1:8080].
    #[arg(long, value_name = "ADDR")]
    pub(crate) listen: Option<SocketAddr>,
    /// Data directory (database, development keys) [default: ./data].
    #[arg(long, value_name = "DIR")]
    pub(crate) data_dir: Option<PathBuf>,
    /// The store: `postgres://user@host:port/db` for PostgreSQL [default: SQLite in the
    /// data directory].
    #[arg(long, value_name = "URL")]
    pub(crate) store: Option<String>,
    /// Public base URL [default: http://<listen address>].
    #[arg(long, value_name = "URL")]
    pub(crate) public_url: Option<String>,
    /// Network adapter [default: tokio].
    #[arg(long, value_enum)]
    pub(crate) transport: Option<Transport>,
    /// TOML configuration file.
    #[arg(long, value_name = "FILE")]
    pub(crate) config: Option<PathBuf>,
    /// Log line format [default: text].
    #[arg(long, value_enum)]
    pub(crate) log_format: Option<LogFormat>,
    /// Log level (error, warn, info, debug, trace) or `RUST_LOG`-style directives
    /// (`info,kobana_dunning=debug`). Wins over `RUST_LOG`, which wins over the
    /// configuration file's `log_level` [default: info].
    #[arg(long, value_name = "FILTER")]
    pub(crate) log_level: Option<String>,
    /// Serve `/metrics` on this address only (e.g. a private interface); the public
    /// listener then answers `/metrics` with `404` unless `metrics_on_public = true`.
    #[arg(long, value_name = "ADDR")]
    pub(crate) metrics_listen: Option<SocketAddr>,
    /// Put the development token in the JSON startup event too (text logs always show
    /// it; JSON logs leave it out, since they are usually shipped somewhere).
    #[arg(long)]
    pub(crate) print_token: bool,
    /// The test clock.
    #[command(flatten)]
    pub(crate) clock: ClockArg,
}

/// `token` options.
#[derive(Debug, Args)]
pub(crate) struct TokenArgs {
    /// Organization slug or id.
    #[arg(long)]
    pub(crate) org: String,
    /// The person's e-mail (a member of the organization).
    #[arg(long, value_name = "EMAIL")]
    pub(crate) person: String,
    /// Space-separated scopes, minted exactly as given [default: what the person's role allows].
    #[arg(long)]
    pub(crate) scope: Option<String>,
    /// Lifetime in seconds; negative mints an already expired token.
    #[arg(long, default_value_t = 3600, allow_negative_numbers = true)]
    pub(crate) ttl: i64,
    /// Audience.
    #[arg(long, value_enum, default_value = "mcp")]
    pub(crate) audience: AudienceArg,
    /// The data dir, its store and the test clock.
    #[command(flatten)]
    pub(crate) data: DataArgs,
}

/// `demo` options.
#[derive(Debug, Args)]
#[command(mut_arg("store", |a| a.help(DEMO_STORE_HELP)))]
pub(crate) struct DemoArgs {
    /// The data dir, its store and the test clock.
    #[command(flatten)]
    pub(crate) data: DataArgs,
}

/// `demo --store` says what it does there; the flag is [`DataArgs::store`].
const DEMO_STORE_HELP: &str = "The server's store, when it runs on PostgreSQL: re-seeds the demo organizations there [default: the store the data directory's server recorded (store.json), else SQLite in the data directory]";

/// Where `token` and `demo` find the data: the data dir, the store the data dir's server
/// serves, and the test clock. One struct, so both read them the same way.
#[derive(Debug, Args)]
pub(crate) struct DataArgs {
    /// Data directory.
    #[arg(long, value_name = "DIR", default_value = "./data")]
    pub(crate) data_dir: PathBuf,
    /// The server's store, when it runs on PostgreSQL [default: the store the data
    /// directory's server recorded (store.json), else SQLite in the data directory].
    #[arg(long, value_name = "URL")]
    pub(crate) store: Option<String>,
    /// The test clock.
    #[command(flatten)]
    pub(crate) clock: ClockArg,
}

/// The test clock: every subcommand takes it, so that `serve`, `token` and `demo`
/// started with the same value agree on the time.
#[derive(Debug, Args)]
pub(crate) struct ClockArg {
    /// For tests only: the wall clock reads this RFC 3339 instant at start and advances
    /// in real time (send windows, business days, token times); `INSTANT@MS` reads
    /// INSTANT at the real time MS (ms since the epoch), so processes started at
    /// different moments agree to the millisecond. Give `serve`, `token` and `demo` the
    /// same value.
    #[arg(long, value_name = "INSTANT[@MS]", hide = true, value_parser = crate::clock::parse_flag)]
    pub(crate) clock: Option<crate::clock::Clock>,
}

impl ClockArg {
    /// The clock the flag asks for (the real one without it).
    pub(crate) fn clock(&self) -> crate::clock::Clock {
        crate::clock::Clock::from_flag(self.clock)
    }
}
