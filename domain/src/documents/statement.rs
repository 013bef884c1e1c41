//! The debtor statement (extrato): open, paid and other charges with totals.

use chrono::NaiveDate;

use super::{Align, Party, Style, Writer, fit, short_date};
use crate::brazil::money::Money;

/// One charge in a statement.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct StatementLine {
    /// Description (or charge id).
    pub description: String,
    /// Due date.
    pub due_date: NaiveDate,
    /// Status (as the API names it).
    pub status: String,
    /// Amount charged (centavos).
    pub amount: Money,
    /// Paid so far (centavos).
    pub paid: Money,
    /// Owed on the statement date (centavos).
    pub updated: Money,
    /// Days late on the statement date.
    pub days_overdue: i64,
}

/// Totals of a statement (centavos), computed by the server.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct StatementTotals {
    /// Open charges' amounts minus payments.
    pub open: Money,
    /// Open charges' updated amounts.
    pub updated: Money,
    /// Overdue part of the updated amounts.
    pub overdue: Money,
    /// Received on paid charges.
    pub paid: Money,
    /// Amounts folded into agreements.
    pub renegotiated: Money,
}

/// What a debtor statement says.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct StatementDoc {
    /// The creditor.
    pub creditor: Party,
    /// The debtor.
    pub debtor: Party,
    /// Date of the updated amounts.
    pub as_of: NaiveDate,
    /// The charges.
    pub lines: Vec<StatementLine>,
    /// The totals.
    pub totals: StatementTotals,
}

/// A listed charge status in Portuguese; any other as the API names it.
pub(super) fn status_text(s: &str) -> &str {
    use crate::status::ChargeStatus as C;
    match s.parse::<C>() {
        Ok(C::Pending) => "em aberto",
        Ok(C::Overdue) => "vencida",
        Ok(C::PartiallyPaid) => "paga em parte",
        Ok(C::Paid) => "paga",
        Ok(C::Renegotiated) => "renegociada",
        _ => s,
    }
}

/// The debtor statement (extrato) as a PDF.
pub fn debtor_statement(s: &StatementDoc) -> Vec<u8> {
    let mut w = Writer::new("Extrato de débitos", s.as_of);
    w.party(&s.creditor, Style::bold(12.0));
    w.space(16.0);
    w.centered("EXTRATO DE DÉBITOS", Style::bold(15.0));
    w.space(10.0);
    let body = Style::regular(10.0);
    // The name on a line of its own: a name in a right-to-left script then reads back
    // (copy, `pdftotext`) as one run, not mixed with the document number.
    w.line(&format!("Devedor(a): {}", s.debtor.name), body);
    w.line(
        &format!(
            "{} {}",
            s.debtor.document_kind(),
            s.debtor.document_formatted()
        ),
        body,
    );
    w.line(
        &format!(
            "Valores atualizados em {} (multa e juros de mora calculados pelo credor).",
            short_date(s.as_of)
        ),
        body,
    );
    w.space(10.0);
    let (l, r) = (w.left(), w.right());
    let cols = [l, l + 210.0, l + 275.0, l + 385.0, r];
    let head = Style::bold(9.0);
    w.row(
        &[
            ("Descrição", cols[0], Align::Left),
            ("Vencimento", cols[1], Align::Left),
            ("Situação", cols[2], Align::Left),
            ("Valor", cols[3], Align::Right),
            ("Atualizado", cols[4], Align::Right),
        ],
        head,
    );
    w.rule();
    let cell = Style::regular(9.0);
    for line in &s.lines {
        let desc = fit(&line.description, cell, 200.0);
        let status = if line.days_overdue > 0 {
            format!("{} ({} d)", status_text(&line.status), line.days_overdue)
        } else {
            status_text(&line.status).to_owned()
        };
        let due = short_date(line.due_date);
        let amount = line.amount.to_string();
        let updated = line.updated.to_string();
        w.row(
            &[
                (&desc, cols[0], Align::Left),
                (&due, cols[1], Align::Left),
                (&status, cols[2], Align::Left),
                (&amount, cols[3], Align::Right),
                (&updated, cols[4], Align::Right),
            ],
            cell,
        );
    }
    if s.lines.is_empty() {
        w.line("Nenhuma cobrança em aberto, paga ou renegociada.", cell);
    }
    w.rule();
    w.space(6.0);
    let t = &s.totals;
    let total = Style::bold(10.0);
    for (label, amount, style) in [
        ("Em aberto (valor original)", t.open, body),
        ("Vencido (atualizado)", t.overdue, body),
        ("Pago", t.paid, body),
        ("Renegociado", t.renegotiated, body),
        ("Total devido atualizado", t.updated, total),
    ] {
        let amount = amount.to_string();
        w.row(
            &[
                (label, cols[2], Align::Left),
                (&amount, cols[4], Align::Right),
            ],
            style,
        );
    }
    w.space(18.0);
    w.paragraph(
        "Este extrato informa os débitos registrados pelo credor na data indicada. Pagamentos em processamento podem não estar refletidos.",
        Style::regular(8.0),
    );
    w.finish()
}

/// Reading PDFs back (tests of this crate and of the documents other modules make).
#[doc(hidden)]
pub mod check {
    use std::collections::HashMap;

    fn find(hay: &[u8], needle: &[u8], from: usize) -> Option<usize> {
        hay.get(from..)?
            .windows(needle.len())
            .position(|w| w == needle)
            .map(|p| p + from)
    }

    fn rfind(hay: &[u8], needle: &[u8]) -> Option<usize> {
        hay.windows(needle.len()).rposition(|w| w == needle)
    }

    /// Checks the header, the trailer and that every cross-reference entry points at its
    /// object.
    pub fn structure(pdf: &[u8]) -> Result<u32, String> {
        if !pdf.starts_with(b"%PDF-1.") {
            return Err("no %PDF-1.x header".into());
        }
        let tail = String::from_utf8_lossy(&pdf[pdf.len().saturating_sub(64)..]).into_owned();
        if !tail.trim_end().ends_with("%%EOF") {
            return Err("no %%EOF".into());
        }
        let sx = rfind(pdf, b"startxref").ok_or("no startxref")?;
        let offset: usize = String::from_utf8_lossy(&pdf[sx + 9..])
            .split_whitespace()
            .next()
            .and_then(|s| s.parse().ok())
            .ok_or("bad startxref")?;
        if !pdf.get(offset..).is_some_and(|s| s.starts_with(b"xref")) {
            return Err("startxref does not point at the xref table".into());
        }
        let table = String::from_utf8_lossy(&pdf[offset..sx]).into_owned();
        let mut lines = table.lines().skip(1);
        let sub = lines.next().ok_or("empty xref")?;
        let mut it = sub.split_whitespace();
        let start: u32 = it.next().and_then(|s| s.parse().ok()).ok_or("bad xref")?;
        let count: u32 = it.next().and_then(|s| s.parse().ok()).ok_or("bad xref")?;
        let mut objects = 0;
        for i in 0..count {
            let entry = lines.next().ok_or("short xref")?;
            let mut f = entry.split_whitespace();
            let off: usize = f.next().and_then(|s| s.parse().ok()).ok_or("bad entry")?;
            let _gen = f.next();
            if f.next() == Some("n") {
                let expect = format!("{} 0 obj", start + i);
                if !pdf
                    .get(off..)
                    .is_some_and(|s| s.starts_with(expect.as_bytes()))
                {
                    return Err(format!("object {} is not at offset {off}", start + i));
                }
                objects += 1;
            }
        }
        if find(pdf, b"trailer", offset).is_none() {
            return Err("no trailer".into());
        }
        Ok(objects)
    }

    fn decode_literal(s: &[u8], i: &mut usize, out: &mut Vec<u8>) {
        let mut depth = 1;
        while *i < s.len() {
            let b = s[*i];
            *i += 1;
            match b {
                b'\\' if *i < s.len() => {
                    let e = s[*i];
                    *i += 1;
                    match e {
                        b'n' => out.push(b'\n'),
                        b'r' => out.push(b'\r'),
                        b't' => out.push(b'\t'),
                        b'b' => out.push(0x08),
                        b'f' => out.push(0x0C),
                        b'0'..=b'7' => {
                            let mut v = u32::from(e - b'0');
                            for _ in 0..2 {
                                if *i < s.len() && (b'0'..=b'7').contains(&s[*i]) {
                                    v = v * 8 + u32::from(s[*i] - b'0');
                                    *i += 1;
                                }
                            }
                            out.push(v as u8);
                        }
                        other => out.push(other),
                    }
                }
                b'(' => {
                    depth += 1;
                    out.push(b);
                }
                b')' => {
                    depth -= 1;
                    if depth == 0 {
                        return;
                    }
                    out.push(b);
                }
                _ => out.push(b),
            }
        }
    }

    /// [`text`] with every run of whitespace made one space: what a reader sees,
    /// whatever the line breaks.
    pub fn flat_text(pdf: &[u8]) -> String {
        text(pdf).split_whitespace().collect::<Vec<_>>().join(" ")
    }

    /// Every stream of the document: where its `stream` keyword starts, and its bytes.
    fn streams(pdf: &[u8]) -> impl Iterator<Item = (usize, &[u8])> {
        let mut at = 0;
        std::iter::from_fn(move || {
            let start = find(pdf, b"stream\n", at)?;
            let body = start + 7;
            let end = find(pdf, b"endstream", body)?;
            at = end;
            Some((start, &pdf[body..end]))
        })
    }

    /// The dictionary before the stream starting at `start` (the `stream` keyword).
    fn dict_before(pdf: &[u8], start: usize) -> &[u8] {
        let from = rfind(&pdf[..start], b"obj").unwrap_or(0);
        &pdf[from..start]
    }

    /// The `ToUnicode` maps of the document, by the font resource they belong to (the
    /// writer names each `Kobana-<resource>-UCS`): glyph id to text.
    fn unicode_maps(pdf: &[u8]) -> HashMap<String, HashMap<u16, String>> {
        let mut maps = HashMap::new();
        for (_, body) in streams(pdf) {
            let s = String::from_utf8_lossy(body);
            if !s.contains("begincmap") {
                continue;
            }
            let Some(name) = s
                .split("/CMapName /Kobana-")
                .nth(1)
                .and_then(|r| r.split("-UCS").next())
            else {
                continue;
            };
            let mut map = HashMap::new();
            for line in s.lines() {
                let parts: Vec<&str> = line
                    .split(['<', '>'])
                    .map(str::trim)
                    .filter(|p| !p.is_empty())
                    .collect();
                if parts.len() != 2 || parts[0].len() != 4 {
                    continue;
                }
                let Ok(id) = u16::from_str_radix(parts[0], 16) else {
                    continue;
                };
                let units: Vec<u16> = parts[1]
                    .as_bytes()
                    .chunks(4)
                    .filter_map(|c| u16::from_str_radix(std::str::from_utf8(c).ok()?, 16).ok())
                    .collect();
                map.insert(id, String::from_utf16_lossy(&units));
            }
            maps.insert(name.to_owned(), map);
        }
        maps
    }

    /// The text shown by the content streams, one line per text object, each glyph
    /// read back through its font's `ToUnicode` map (`?` for a glyph without one).
    pub fn text(pdf: &[u8]) -> String {
        let maps = unicode_maps(pdf);
        let empty = HashMap::new();
        let mut out = String::new();
        for (start, s) in streams(pdf) {
            // Font files and ToUnicode maps are not page content.
            let dict = dict_before(pdf, start);
            if find(dict, b"/Length1", 0).is_some() || find(s, b"begincmap", 0).is_some() {
                continue;
            }
            let mut font = String::new();
            let mut last_name = String::new();
            let mut line = String::new();
            let show = |bytes: &[u8], font: &str, line: &mut String| {
                let map = maps.get(font).unwrap_or(&empty);
                for pair in bytes.chunks(2) {
                    let id = u16::from_be_bytes([pair[0], *pair.get(1).unwrap_or(&0)]);
                    line.push_str(map.get(&id).map_or("?", String::as_str));
                }
            };
            let mut i = 0;
            while i < s.len() {
                match s[i] {
                    b'(' => {
                        i += 1;
                        let mut bytes = Vec::new();
                        decode_literal(s, &mut i, &mut bytes);
                        show(&bytes, &font, &mut line);
                    }
                    b'<' if s.get(i + 1) != Some(&b'<') => {
                        let close = find(s, b">", i).unwrap_or(s.len());
                        let hex: Vec<u8> = s[i + 1..close]
                            .iter()
                            .copied()
                            .filter(u8::is_ascii_hexdigit)
                            .collect();
                        let bytes: Vec<u8> = hex
                            .chunks(2)
                            .map(|p| {
                                u8::from_str_radix(std::str::from_utf8(p).unwrap_or("0"), 16)
                                    .unwrap_or(0)
                            })
                            .collect();
                        show(&bytes, &font, &mut line);
                        i = close + 1;
                    }
                    b'<' => i += 2,
                    b'/' => {
                        let from = i + 1;
                        i = from;
                        while i < s.len() && !b" \n\r\t/[]()<>".contains(&s[i]) {
                            i += 1;
                        }
                        last_name = String::from_utf8_lossy(&s[from..i]).into_owned();
                    }
                    b'A'..=b'Z' | b'a'..=b'z' => {
                        let from = i;
                        while i < s.len() && s[i].is_ascii_alphabetic() {
                            i += 1;
                        }
                        match &s[from..i] {
                            b"Tf" => font.clone_from(&last_name),
                            b"ET" => {
                                out.push_str(&line);
                                out.push('\n');
                                line.clear();
                            }
                            _ => {}
                        }
                    }
                    _ => i += 1,
                }
            }
        }
        out
    }
}
