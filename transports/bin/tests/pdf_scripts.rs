//! PDFs in any script: a debtor named in Latin with diacritics, Chinese and Arabic gets a
//! statement (fetched over `/v1` like a person would) that `pdftotext` (Debian's
//! `poppler-utils`, installed by this test when missing) reads back with those
//! characters, in reading order; the fonts are embedded subsets.

mod common;

use std::process::Command;

use common::{Srv, V2026, cpf, date_in, tool_ok};
use serde_json::json;

const NAME: &str = "Ñandú Ørsted 王芳 محمد";

/// `pdftotext`, installed from Debian's packages when missing (as `.ci/run` installs
/// nginx and chromium).
fn pdftotext() -> &'static str {
    let present = || Command::new("pdftotext").arg("-v").output().is_ok();
    if !present() {
        let install = |args: &[&str]| {
            Command::new("apt-get")
                .args(args)
                .env("DEBIAN_FRONTEND", "noninteractive")
                .status()
                .is_ok_and(|s| s.success())
        };
        if !install(&["install", "-y", "-q", "poppler-utils"]) {
            install(&["update", "-q"]);
            install(&["install", "-y", "-q", "poppler-utils"]);
        }
    }
    assert!(present(), "pdftotext (Debian: poppler-utils) is needed");
    "pdftotext"
}

#[test]
fn a_statement_for_a_name_in_four_scripts_reads_back_with_pdftotext() {
    let tool = pdftotext();
    let mut srv = Srv::start(&[], None);
    let created = srv.call(
        &srv.token,
        V2026,
        "dunning_debtors_create",
        json!({"cnpj_cpf": cpf(427_000_001), "name": NAME}),
    );
    let debtor = tool_ok(&created).unwrap()["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let charge = srv.call(
        &srv.token,
        V2026,
        "dunning_charges_create",
        json!({"debtor_id": debtor, "amount": 250.0, "due_date": date_in(3), "payment_method": "pix",
               "description": "Mensalidade de Ñandú 王芳"}),
    );
    tool_ok(&charge).unwrap();
    let token = srv.mint_api("demo", "ana@demo.example");
    let auth = format!("Bearer {token}");
    let r = srv.request(
        "GET",
        &format!("/v1/debtors/{debtor}/statement?format=pdf"),
        &[("Authorization", &auth)],
        b"",
    );
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.header("content-type"), Some("application/pdf"));
    let pdf = r.body.clone();
    let path = srv.dir.join("statement.pdf");
    std::fs::write(&path, &pdf).unwrap();
    let out = Command::new(tool)
        .args(["-enc", "UTF-8"])
        .arg(&path)
        .arg("-")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // pdftotext marks a right-to-left run inside a left-to-right line with the
    // invisible embedding controls (U+202B ... U+202C); the characters between are the
    // text as typed.
    let raw = String::from_utf8(out.stdout).unwrap();
    let text: String = raw
        .chars()
        .filter(|c| !matches!(*c as u32, 0x202A..=0x202E | 0x2066..=0x2069))
        .collect();
    assert!(
        text.contains(&format!("Devedor(a): {NAME}\n")),
        "{NAME:?} not in:\n{raw}"
    );
    assert!(text.contains("Mensalidade de Ñandú 王芳"), "{text}");
    assert!(text.contains("EXTRATO DE DÉBITOS"), "{text}");
    assert!(!text.contains('?') && !text.contains('\u{FFFD}'), "{text}");
    // Embedded, as subsets: a CJK face besides the Latin/Arabic ones, and no font left
    // to the reader.
    let fonts = Command::new("pdffonts").arg(&path).output().unwrap();
    let listing = String::from_utf8_lossy(&fonts.stdout).into_owned();
    let rows: Vec<&str> = listing.lines().skip(2).collect();
    assert!(rows.len() >= 2, "{listing}");
    for row in &rows {
        let cols: Vec<&str> = row.split_whitespace().collect();
        // name type encoding emb sub uni object id
        let n = cols.len();
        assert_eq!(
            &cols[n - 5..n - 2],
            ["yes", "yes", "yes"],
            "embedded, subset, ToUnicode: {row}"
        );
    }
    assert!(
        rows.iter().any(|r| r.contains("+DroidSansFallback")),
        "{listing}"
    );
    assert!(rows.iter().any(|r| r.contains("+DejaVuSans")), "{listing}");
    assert!(srv.terminate().success());
}
