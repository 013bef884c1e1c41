//! The consent page and the error page: small server-rendered HTML, no script. Every
//! value that did not come from this file goes through [`escape`].

use std::fmt::Write as _;

use super::Person;

/// Escapes text for HTML element content and double-quoted attribute values.
pub fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

const STYLE: &str = "body{font-family:system-ui,sans-serif;max-width:42rem;margin:2rem auto;padding:0 1rem;color:#1d2433}\
h1{font-size:1.4rem}code{background:#f1f3f7;padding:.1rem .3rem;border-radius:4px;word-break:break-all}\
table{border-collapse:collapse;width:100%;margin:1rem 0}td,th{border-bottom:1px solid #dde1e8;padding:.5rem;text-align:left;vertical-align:top}\
.scopes span{display:inline-block;background:#e8f0fe;border-radius:4px;padding:.05rem .4rem;margin:.1rem}\
.none{color:#8a1c1c}button{font-size:1rem;padding:.5rem 1.2rem;margin-right:.5rem;border-radius:6px;border:1px solid #9aa3b5}\
button[value=approve]{background:#1a56db;color:#fff;border-color:#1a56db}";

fn shell(title: &str, body: &str) -> String {
    format!(
        "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
<title>{}</title><style>{STYLE}</style></head><body>\n{body}</body></html>\n",
        escape(title)
    )
}

/// What the consent page shows.
#[derive(Debug)]
pub struct Consent<'a> {
    /// The server's title.
    pub server: &'a str,
    /// The client's name (or its id).
    pub client: &'a str,
    /// Where the answer goes.
    pub redirect_uri: &'a str,
    /// The scopes asked.
    pub scopes: &'a [String],
    /// The people who may sign in.
    pub people: &'a [Person],
    /// The sealed request (hidden field).
    pub sealed: &'a str,
}

/// The consent page: pick a person, see what each would grant, approve or deny.
pub fn consent(c: &Consent<'_>) -> String {
    let mut b = String::with_capacity(4096);
    let _ = write!(
        b,
        "<h1>Sign in to {}</h1>\n<p><strong>{}</strong> asks for access to {} on your behalf.</p>\n\
<p>The answer goes to <code>{}</code>.</p>\n<p>Scopes asked: <span class=\"scopes\">",
        escape(c.server),
        escape(c.client),
        escape(c.server),
        escape(c.redirect_uri),
    );
    for s in c.scopes {
        let _ = write!(b, "<span>{}</span>", escape(s));
    }
    b.push_str("</span></p>\n<form method=\"post\" action=\"/authorize\">\n");
    let _ = writeln!(
        b,
        "<input type=\"hidden\" name=\"request\" value=\"{}\">",
        escape(c.sealed)
    );
    b.push_str("<table><tr><th></th><th>Person</th><th>Organization</th><th>Role</th><th>Would grant</th></tr>\n");
    let mut first = true;
    for p in c.people {
        let granted: Vec<&String> = c.scopes.iter().filter(|s| p.scopes.contains(s)).collect();
        let value = format!("{}|{}", p.organization, p.login);
        let _ = write!(
            b,
            "<tr><td><input type=\"radio\" name=\"person\" id=\"p-{id}\" value=\"{v}\"{checked}{disabled}></td>\
<td><label for=\"p-{id}\">{name}<br><small>{login}</small></label></td><td>{org}</td><td>{role}</td><td class=\"scopes\">",
            id = escape(&p.login),
            v = escape(&value),
            checked = if first && !granted.is_empty() {
                " checked"
            } else {
                ""
            },
            disabled = if granted.is_empty() { " disabled" } else { "" },
            name = escape(&p.name),
            login = escape(&p.login),
            org = escape(&p.organization_name),
            role = escape(&p.role),
        );
        if !granted.is_empty() {
            first = false;
        }
        if granted.is_empty() {
            b.push_str("<span class=\"none\">nothing: the role allows none of these</span>");
        }
        for s in granted {
            let _ = write!(b, "<span>{}</span>", escape(s));
        }
        b.push_str("</td></tr>\n");
    }
    b.push_str(
        "</table>\n<button type=\"submit\" name=\"decision\" value=\"approve\">Approve</button>\
<button type=\"submit\" name=\"decision\" value=\"deny\">Deny</button>\n</form>\n\
<p><small>Development sign-in: anyone who can reach this page may act as these people.</small></p>\n",
    );
    shell(&format!("Sign in to {}", c.server), &b)
}

/// A page for an error that cannot be sent back to the client (unknown client, bad
/// redirect URI, a refused form).
pub fn error(message: &str) -> String {
    shell(
        "Authorization error",
        &format!("<h1>Authorization error</h1>\n<p>{}</p>\n", escape(message)),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn everything_foreign_is_escaped() {
        let people = [Person {
            organization: "o\"><x>".into(),
            organization_name: "<b>Org</b>".into(),
            login: "a@x\"".into(),
            name: "<script>alert(1)</script>".into(),
            role: "owner".into(),
            scopes: vec!["dunning.read".into()],
        }];
        let html = consent(&Consent {
            server: "S",
            client: "<img src=x onerror=alert(1)>",
            redirect_uri: "http://127.0.0.1/cb?a=1&b=\"2\"",
            scopes: &["dunning.read".into(), "<i>".into()],
            people: &people,
            sealed: "a1.k1.\"x\"",
        });
        for bad in ["<script", "<img", "<b>", "<i>", "<x>", "\"2\"", "\"x\""] {
            assert!(!html.contains(bad), "{bad} in {html}");
        }
        assert!(html.contains("&lt;script&gt;"));
        assert!(!error("<svg onload=1>").contains("<svg"));
    }
}
