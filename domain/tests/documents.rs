//! The PDF documents: valid files (header, cross-reference table, trailer), Portuguese
//! text in embedded Unicode fonts (any script, read back through their `ToUnicode` maps), the content a settlement letter must carry (Código Civil
//! arts. 319–320), pagination, and deterministic bytes.

use chrono::NaiveDate;
use dunning_domain::brazil::money::Money;
use dunning_domain::documents::{
    self, Party, SettlementLetter, StatementDoc, StatementLine, StatementTotals, Style, check,
};

fn day(y: i32, m: u32, d: u32) -> NaiveDate {
    NaiveDate::from_ymd_opt(y, m, d).unwrap()
}

fn letter() -> SettlementLetter {
    SettlementLetter {
        creditor: Party {
            name: "Demo Cobranças Ltda".into(),
            document: "11222333000181".into(),
        },
        debtor: Party {
            name: "João Conceição".into(),
            document: "52998224725".into(),
        },
        charge_id: "6f1c2a9e-0000-4000-8000-000000000001".into(),
        external_id: Some("FAT-00042".into()),
        description: Some("Mensalidade de dezembro".into()),
        original: Money::from_cents(120_000),
        paid: Money::from_cents(123_456),
        due_date: day(2026, 11, 20),
        paid_on: day(2026, 12, 1),
        paid_via: "pix".into(),
        agreement_id: None,
        place: "São Paulo".into(),
    }
}

fn count(hay: &[u8], needle: &[u8]) -> usize {
    hay.windows(needle.len()).filter(|w| *w == needle).count()
}

#[test]
fn settlement_letter_is_a_valid_pdf() {
    let pdf = documents::settlement_letter(&letter());
    assert!(pdf.starts_with(b"%PDF-1.4"), "PDF 1.x header");
    let tail = String::from_utf8_lossy(&pdf[pdf.len() - 16..]).into_owned();
    assert!(tail.trim_end().ends_with("%%EOF"), "{tail:?}");
    let objects = check::structure(&pdf).unwrap();
    assert!(
        objects >= 7,
        "catalog, pages, fonts, info, page, content: {objects}"
    );
    assert_eq!(count(&pdf, b"/Type /Page\n"), 1, "one page");
    // The two DejaVu Sans faces it uses, embedded as subsets, with their text maps.
    assert_eq!(count(&pdf, b"/Encoding /Identity-H"), 2, "both fonts");
    assert_eq!(count(&pdf, b"/FontFile2"), 2);
    assert_eq!(count(&pdf, b"/ToUnicode"), 2);
    // Subset names: six capitals, `+`, the PostScript name (Type0 font, CID font,
    // descriptor: three each).
    let text = String::from_utf8_lossy(&pdf);
    let mut names: Vec<&str> = text
        .match_indices("/BaseFont /")
        .chain(text.match_indices("/FontName /"))
        .map(|(at, m)| text[at + m.len()..].split_whitespace().next().unwrap())
        .collect();
    names.sort_unstable();
    names.dedup();
    assert_eq!(names.len(), 2, "{names:?}");
    for (name, font) in names.iter().zip(["+DejaVuSans", "+DejaVuSans-Bold"]) {
        let (tag, rest) = name.split_at(6);
        assert!(tag.bytes().all(|b| b.is_ascii_uppercase()), "{name}");
        assert!(
            rest == font || names.iter().any(|n| n.ends_with(font)),
            "{names:?}"
        );
    }
    assert_eq!(count(&pdf, b"/Helvetica"), 0, "no font left to the reader");
}

#[test]
fn rule_settlement_letter_carries_what_the_civil_code_asks() {
    let text = check::flat_text(&documents::settlement_letter(&letter()));
    for part in [
        "CARTA DE QUITAÇÃO",
        // Art. 320: value, debtor, time and place, and the creditor's signature.
        "Demo Cobranças Ltda, inscrita no CNPJ sob o nº 11.222.333/0001-81",
        "recebeu de João Conceição, inscrito(a) no CPF sob o nº 529.982.247-25",
        "a importância de R$ 1.234,56 (mil duzentos e trinta e quatro reais e cinquenta e seis centavos)",
        "por meio de Pix, em 01/12/2026",
        "Mensalidade de dezembro (cobrança 6f1c2a9e-0000-4000-8000-000000000001, referência FAT-00042)",
        "com vencimento em 20/11/2026",
        "plena, geral e irrevogável quitação",
        "arts. 319 e 320 do Código Civil",
        "Valor original da cobrança: R$ 1.200,00",
        "São Paulo, 1º de dezembro de 2026.",
    ] {
        assert!(text.contains(part), "missing {part:?} in {text}");
    }
}

#[test]
fn rule_settlement_through_a_completed_agreement() {
    let mut l = letter();
    l.paid_via = "agreement".into();
    l.agreement_id = Some("a9d0c7e2-0000-4000-8000-000000000002".into());
    l.paid_on = day(2027, 3, 10);
    let text = check::flat_text(&documents::settlement_letter(&l));
    for part in [
        "que o débito de João Conceição, inscrito(a) no CPF sob o nº 529.982.247-25, no valor de R$ 1.234,56",
        "foi integralmente pago por meio do acordo de renegociação nº a9d0c7e2-0000-4000-8000-000000000002",
        "estando o acordo concluído em 10/03/2027",
        "arts. 319 e 320 do Código Civil",
        "São Paulo, 10 de março de 2027.",
    ] {
        assert!(text.contains(part), "missing {part:?} in {text}");
    }
}

#[test]
fn accents_are_glyphs_of_the_embedded_fonts_and_read_back() {
    let pdf = documents::settlement_letter(&letter());
    // No UTF-8 text in the page content: "ç" would be C3 A7, "ã" C3 A3; the content
    // holds glyph ids, the ToUnicode maps give the letters back.
    let maps = pdf.windows(9).filter(|w| *w == b"begincmap").count();
    assert_eq!(maps, 2);
    let text = check::text(&pdf);
    for part in ["CARTA DE QUITAÇÃO", "João Conceição", "São Paulo"] {
        assert!(text.contains(part), "{part} in {text}");
    }
    assert!(!text.contains('?'), "every glyph maps back: {text}");
}

#[test]
fn same_input_same_bytes_and_no_clock() {
    let a = documents::settlement_letter(&letter());
    let b = documents::settlement_letter(&letter());
    assert_eq!(a, b, "deterministic");
    let mut other = letter();
    other.paid += Money::from_cents(1);
    let c = documents::settlement_letter(&other);
    assert_ne!(a, c);
    // The metadata date is the payment date, not the time the file was made.
    assert_eq!(count(&a, b"/CreationDate (D:20261201000000-03'00)"), 1);
    // The file identifier follows the content.
    let id = |pdf: &[u8]| {
        let at = pdf.windows(3).position(|w| w == b"/ID").unwrap();
        pdf[at..at + 80].to_vec()
    };
    assert_ne!(id(&a), id(&c));
}

fn statement(lines: usize) -> StatementDoc {
    StatementDoc {
        creditor: Party {
            name: "Acme Serviços S.A.".into(),
            document: "12345678000195".into(),
        },
        debtor: Party {
            name: "Padaria Pão Quente Ltda".into(),
            document: "11444777000161".into(),
        },
        as_of: day(2027, 1, 15),
        lines: (0..lines)
            .map(|i| StatementLine {
                description: if i == 0 {
                    "Serviço de manutenção preventiva e corretiva de equipamentos de refrigeração industrial".into()
                } else {
                    format!("Fatura nº {i}")
                },
                due_date: day(2026, 12, 1),
                status: if i % 2 == 0 { "overdue" } else { "paid" }.into(),
                amount: Money::from_cents(10_000 + i as i64),
                paid: Money::from_cents(0),
                updated: Money::from_cents(10_500 + i as i64),
                days_overdue: if i % 2 == 0 { 45 } else { 0 },
            })
            .collect(),
        totals: StatementTotals {
            open: Money::from_cents(987_654),
            updated: Money::from_cents(1_234_567),
            overdue: Money::from_cents(1_000_000),
            paid: Money::from_cents(55_500),
            renegotiated: Money::from_cents(0),
        },
    }
}

#[test]
fn statement_paginates_and_totals() {
    let pdf = documents::debtor_statement(&statement(120));
    check::structure(&pdf).unwrap();
    let pages = count(&pdf, b"/Type /Page\n");
    assert!(pages >= 3, "{pages} pages");
    let text = check::flat_text(&pdf);
    for part in [
        "EXTRATO DE DÉBITOS",
        "Devedor(a): Padaria Pão Quente Ltda CNPJ 11.444.777/0001-61",
        "Valores atualizados em 15/01/2027",
        "Total devido atualizado R$ 12.345,67",
        "Pago R$ 555,00",
        "vencida (45 d)",
        "Fatura nº 119",
        &format!("página 1 de {pages}"),
        &format!("página {pages} de {pages}"),
    ] {
        assert!(text.contains(part), "missing {part:?}");
    }
    assert!(
        text.contains("Serviço de manutenção preventiva") && text.contains('…'),
        "a long description is cut with an ellipsis"
    );
    assert!(!text.contains("refrigeração industrial"));
    let empty = documents::debtor_statement(&statement(0));
    check::structure(&empty).unwrap();
    assert!(check::flat_text(&empty).contains("Nenhuma cobrança"));
}

#[test]
fn wrapping_keeps_lines_inside_the_margins() {
    let style = Style::regular(11.0);
    let text = "Com o recebimento dessa importância, o credor dá ao devedor plena, geral e irrevogável quitação do débito acima identificado, nada mais tendo a reclamar a esse título.";
    let lines = documents::wrap(text, style, 300.0);
    assert!(lines.len() > 1);
    for l in &lines {
        assert!(documents::text_width(l, style) <= 300.0, "{l}");
    }
    assert_eq!(lines.join(" "), text, "no word lost");
    // The font's own advances: narrow letters are narrow, and widths scale with size.
    let w = |t: &str, size: f32| documents::text_width(t, Style::regular(size));
    assert!(w("iiii", 10.0) < w("MMMM", 10.0) / 2.0);
    assert!((w("Quitação", 20.0) - 2.0 * w("Quitação", 10.0)).abs() < 0.01);
    assert!(documents::text_width("Quitação", Style::bold(10.0)) > w("Quitação", 10.0));
}

#[test]
fn structure_check_catches_broken_files() {
    let pdf = documents::settlement_letter(&letter());
    assert!(
        check::structure(&pdf[..pdf.len() - 10]).is_err(),
        "truncated"
    );
    let mut shifted = b"\n".to_vec();
    shifted.extend_from_slice(&pdf);
    assert!(check::structure(&shifted).is_err(), "offsets off by one");
    assert!(check::structure(b"hello").is_err());
}

/// A name in four scripts prints in the letter and the statement: every glyph from an
/// embedded font and mapped back to its text. `check::text` reads glyphs in drawing
/// order (left to right), so the Arabic name, drawn right to left, reads reversed
/// there; reading order is what `pdftotext` gives (the binary's `pdf_scripts` test).
#[test]
fn a_name_in_any_script_prints_in_every_document() {
    let name = "Ñandú Ørsted 王芳 محمد";
    let mut l = letter();
    l.debtor.name = name.into();
    let mut s = statement(2);
    s.debtor.name = name.into();
    for pdf in [
        documents::settlement_letter(&l),
        documents::debtor_statement(&s),
    ] {
        check::structure(&pdf).unwrap();
        let text = check::flat_text(&pdf);
        assert!(text.contains("Ñandú Ørsted 王芳 دمحم"), "{text}");
        assert!(!text.contains('?') && !text.contains('\u{FFFD}'), "{text}");
        assert_eq!(
            count(&pdf, b"+DroidSansFallback"),
            3,
            "the CJK face, embedded"
        );
    }
}
