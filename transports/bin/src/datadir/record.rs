//! `store.json`: the store the data dir's server serves, so that `token` and `demo` on
//! the same directory find it without being told (`--store`).
//!
//! `serve` writes it at every start, after the store is open and before the port opens.
//! It never holds a password: the URL is written without one (neither `user:password@`
//! nor a `password=` parameter), and where the password came from is recorded instead:
//! the configuration file whose `store` key carries it (read again by `token`), or
//! `serve`'s command line (which nothing can read back: `token` then asks for
//! `--store`). A password-less URL (trust, peer or certificate authentication) needs
//! nothing more.
//!
//! ```text
//! {"store": "sqlite"}
//! {"store": "postgres", "url": "postgres://dunning@db:5432/dunning"}
//! {"store": "postgres", "url": "...", "password": {"config_file": "/etc/kd/config.toml"}}
//! {"store": "postgres", "url": "...", "password": "command_line"}
//! ```

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// File name of the record, in the data dir.
pub(crate) const STORE_FILE: &str = "store.json";

/// What `store.json` says.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "store", rename_all = "lowercase", deny_unknown_fields)]
pub(crate) enum StoreRecord {
    /// The data dir's own SQLite file.
    Sqlite,
    /// A PostgreSQL database.
    Postgres {
        /// Its URL, without any password.
        url: String,
        /// Where the password is, when the URL `serve` was given had one.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        password: Option<PasswordSource>,
    },
}

/// Where the password of a recorded PostgreSQL store comes from.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub(crate) enum PasswordSource {
    /// The `store` key of this configuration file (`serve --config`), absolute.
    ConfigFile(PathBuf),
    /// `serve --store` on the command line: not readable by another process.
    CommandLine,
}

impl StoreRecord {
    /// The record of a server whose store is `postgres` (`None`: SQLite), taken from its
    /// configuration file `config` when given (`Some`) or else from its `--store` flag.
    pub(crate) fn of(postgres: Option<&str>, config: Option<&Path>) -> Self {
        let Some(url) = postgres else {
            return Self::Sqlite;
        };
        let (url, had_password) = without_password(url);
        let password = had_password.then(|| match config {
            Some(file) => PasswordSource::ConfigFile(
                std::fs::canonicalize(file).unwrap_or_else(|_| file.to_owned()),
            ),
            None => PasswordSource::CommandLine,
        });
        Self::Postgres { url, password }
    }
}

/// `url` without its password (`user:password@` and any `password=` query parameter),
/// and whether it had one. Everything else is kept byte for byte.
pub(crate) fn without_password(url: &str) -> (String, bool) {
    let Some(scheme_end) = url.find("://").map(|i| i + 3) else {
        return (url.to_owned(), false);
    };
    let rest = &url[scheme_end..];
    let authority_end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let (authority, tail) = rest.split_at(authority_end);
    let mut had = false;
    let authority = match authority.rsplit_once('@') {
        Some((userinfo, host)) => match userinfo.split_once(':') {
            Some((user, password)) => {
                had |= !password.is_empty();
                format!("{user}@{host}")
            }
            None => authority.to_owned(),
        },
        None => authority.to_owned(),
    };
    let (before_query, query_and_fragment) = match tail.split_once('?') {
        Some((path, q)) => (path, Some(q)),
        None => (tail, None),
    };
    let mut out = format!("{}{authority}{before_query}", &url[..scheme_end]);
    if let Some(q) = query_and_fragment {
        let (query, fragment) = match q.split_once('#') {
            Some((q, f)) => (q, Some(f)),
            None => (q, None),
        };
        let kept: Vec<&str> = query
            .split('&')
            .filter(|p| {
                let secret = p.split('=').next() == Some("password");
                had |= secret;
                !secret
            })
            .collect();
        if !kept.is_empty() && kept != [""] {
            out.push('?');
            out.push_str(&kept.join("&"));
        }
        if let Some(f) = fragment {
            out.push('#');
            out.push_str(f);
        }
    }
    (out, had)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passwords_are_left_out_and_everything_else_kept() {
        let cases = [
            ("postgres://u@h:5432/db", "postgres://u@h:5432/db", false),
            (
                "postgres://u:s3cr%40t@h:5432/db",
                "postgres://u@h:5432/db",
                true,
            ),
            ("postgresql://u:@h/db", "postgresql://u@h/db", false),
            (
                "postgres://u:pw@h/db?options=-c%20search_path%3Dx",
                "postgres://u@h/db?options=-c%20search_path%3Dx",
                true,
            ),
            (
                "postgres://u@h/db?password=pw&sslmode=disable",
                "postgres://u@h/db?sslmode=disable",
                true,
            ),
            ("postgres://u@h/db?password=pw", "postgres://u@h/db", true),
            ("postgres://h/db", "postgres://h/db", false),
            ("postgres://u:p@w@h/db", "postgres://u@h/db", true),
        ];
        for (url, kept, had) in cases {
            assert_eq!(without_password(url), (kept.to_owned(), had), "{url}");
        }
    }

    #[test]
    fn the_record_names_where_the_password_is_never_the_password() {
        let flag = StoreRecord::of(Some("postgres://u:hunter2@h/db"), None);
        let text = serde_json::to_string(&flag).unwrap();
        assert!(!text.contains("hunter2"), "{text}");
        assert_eq!(
            text,
            r#"{"store":"postgres","url":"postgres://u@h/db","password":"command_line"}"#
        );
        let file = StoreRecord::of(
            Some("postgres://u:hunter2@h/db"),
            Some(Path::new("/nonexistent/kd.toml")),
        );
        assert_eq!(
            serde_json::to_string(&file).unwrap(),
            r#"{"store":"postgres","url":"postgres://u@h/db","password":{"config_file":"/nonexistent/kd.toml"}}"#
        );
        let none = StoreRecord::of(Some("postgres://u@h/db"), Some(Path::new("/x.toml")));
        assert_eq!(
            serde_json::to_string(&none).unwrap(),
            r#"{"store":"postgres","url":"postgres://u@h/db"}"#
        );
        assert_eq!(
            serde_json::to_string(&StoreRecord::of(None, None)).unwrap(),
            r#"{"store":"sqlite"}"#
        );
        for r in [flag, file, none, StoreRecord::Sqlite] {
            let back: StoreRecord =
                serde_json::from_str(&serde_json::to_string(&r).unwrap()).unwrap();
            assert_eq!(back, r);
        }
    }
}
