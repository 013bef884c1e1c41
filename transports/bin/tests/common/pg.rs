//! The PostgreSQL of the suites that run on it (issue 12): `DUNNING_TEST_PG` names a
//! database (CI's PostgreSQL step sets it); without it those suites say so and pass.

/// The database to run on, when one is named.
pub fn pg_url() -> Option<String> {
    let url = std::env::var("DUNNING_TEST_PG")
        .ok()
        .filter(|u| !u.trim().is_empty());
    if url.is_none() {
        eprintln!("DUNNING_TEST_PG is not set: skipped (CI runs it on PostgreSQL)");
    }
    url
}

/// `url` with every table in `schema` (libpq's `options` parameter).
pub fn in_schema(url: &str, schema: &str) -> String {
    let sep = if url.contains('?') { '&' } else { '?' };
    format!("{url}{sep}options=-c%20search_path%3D{schema}")
}
