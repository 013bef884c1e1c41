//! Payment codes of a registered charge: the boleto's barcode and typeable line
//! (FEBRABAN layout) and the Pix with due date (`cobv`) `txid` and BR Code (EMV) payload.
//!
//! Everything is derived from the charge id (itself derived from the request's entropy),
//! the amount and the due date, so the same charge always gets the same codes and a
//! re-dated or re-valued charge keeps its `our_number` and `txid`.

use chrono::NaiveDate;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::brazil::calendar;
use crate::brazil::growth;
use crate::brazil::money::Money;

/// The bank code of the default registration driver (a demo bank: nothing is sent out).
pub const BANK_CODE: &str = "001";

/// A registered boleto.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct Boleto {
    /// Typeable line (linha digitável), 47 digits.
    pub line: String,
    /// Barcode, 44 digits.
    pub barcode: String,
    /// The creditor's number for this boleto (nosso número), 11 digits.
    pub our_number: String,
    /// Where the debtor can see the boleto, when the bank driver offers one.
    pub url: Option<String>,
}

/// A Pix charge with due date (`cobv`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct Pix {
    /// Transaction id, 32 alphanumerics (Pix allows 26–35).
    pub txid: String,
    /// BR Code payload ("copia e cola").
    pub emv: String,
    /// QR code image, when the Pix driver offers one.
    pub qrcode_png_url: Option<String>,
    /// Last moment the Pix can be paid (30 days after the due date).
    pub expires_at: String,
}

fn digest(charge_id: &str, purpose: &str) -> [u8; 32] {
    let mut h = Sha256::new();
    h.update(purpose.as_bytes());
    h.update([0]);
    h.update(charge_id.as_bytes());
    h.finalize().into()
}

fn digits(bytes: &[u8], n: usize) -> String {
    bytes
        .iter()
        .cycle()
        .take(n)
        .map(|b| char::from(b'0' + b % 10))
        .collect()
}

/// Modulo-10 check digit of a typeable-line field (weights 2,1 from the right).
pub fn mod10(field: &str) -> u32 {
    let sum: u32 = field
        .bytes()
        .rev()
        .enumerate()
        .map(|(i, b)| {
            let p = u32::from(b - b'0') * if i % 2 == 0 { 2 } else { 1 };
            p / 10 + p % 10
        })
        .sum();
    (10 - sum % 10) % 10
}

/// Modulo-11 general check digit of a barcode (weights 2–9 from the right; 0, 10 and
/// 11 become 1).
pub fn mod11(data: &str) -> u32 {
    let sum: u32 = data
        .bytes()
        .rev()
        .enumerate()
        .map(|(i, b)| u32::from(b - b'0') * (i as u32 % 8 + 2))
        .sum();
    match 11 - sum % 11 {
        0 | 10 | 11 => 1,
        d => d,
    }
}

/// The due-date factor: days since 1997-10-07, restarting at 1000 on 2025-02-22.
pub fn due_factor(due: NaiveDate) -> u32 {
    let base = NaiveDate::from_ymd_opt(1997, 10, 7).unwrap_or_default();
    let days = (due - base).num_days().max(1000) as u32;
    if days > 9999 {
        (days - 1000) % 9000 + 1000
    } else {
        days
    }
}

/// The boleto of a charge.
pub fn boleto(charge_id: &str, amount: Money, due: NaiveDate) -> Boleto {
    let h = digest(charge_id, "boleto");
    let our_number = digits(&h, 11);
    // Free field (campo livre), 25 digits: our number + agreement digits.
    let free = format!("{our_number}{}", digits(&h[11..], 14));
    let amount = amount.or_zero().min(growth::MAX_AMOUNT).cents();
    let factor_amount = format!("{:04}{:010}", due_factor(due), amount);
    let head = format!("{BANK_CODE}9");
    let without_dv = format!("{head}{factor_amount}{free}");
    let dv = mod11(&without_dv);
    let barcode = format!("{head}{dv}{factor_amount}{free}");
    let f1 = format!("{head}{}", &free[..5]);
    let f2 = free[5..15].to_owned();
    let f3 = free[15..25].to_owned();
    let line = format!(
        "{f1}{}{f2}{}{f3}{}{dv}{factor_amount}",
        mod10(&f1),
        mod10(&f2),
        mod10(&f3)
    );
    Boleto {
        line,
        barcode,
        our_number,
        url: None,
    }
}

/// CRC16-CCITT (polynomial 0x1021, initial 0xFFFF), as the BR Code asks.
pub fn crc16(data: &[u8]) -> u16 {
    let mut crc: u16 = 0xFFFF;
    for &b in data {
        crc ^= u16::from(b) << 8;
        for _ in 0..8 {
            crc = if crc & 0x8000 != 0 {
                (crc << 1) ^ 0x1021
            } else {
                crc << 1
            };
        }
    }
    crc
}

fn emv_field(id: &str, value: &str) -> String {
    format!("{id}{:02}{value}", value.len())
}

/// Uppercase ASCII letters, digits and spaces (EMV merchant fields), at most `max` long.
fn emv_text(s: &str, max: usize) -> String {
    let folded: String = s
        .chars()
        .map(|c| match c {
            'á' | 'à' | 'â' | 'ã' | 'ä' | 'Á' | 'À' | 'Â' | 'Ã' | 'Ä' => 'A',
            'é' | 'ê' | 'è' | 'É' | 'Ê' | 'È' => 'E',
            'í' | 'Í' => 'I',
            'ó' | 'ô' | 'õ' | 'Ó' | 'Ô' | 'Õ' => 'O',
            'ú' | 'ü' | 'Ú' | 'Ü' => 'U',
            'ç' | 'Ç' => 'C',
            c if c.is_ascii_alphanumeric() => c.to_ascii_uppercase(),
            _ => ' ',
        })
        .collect();
    let mut out = folded.split_whitespace().collect::<Vec<_>>().join(" ");
    out.truncate(max);
    out.trim_end().to_owned()
}

/// The Pix with due date of a charge: `creditor` is the receiving organization's name.
pub fn pix(charge_id: &str, due: NaiveDate, creditor: &str) -> Pix {
    let h = digest(charge_id, "pix");
    let txid: String = h[..16].iter().map(|b| format!("{b:02x}")).collect();
    let account = format!(
        "{}{}",
        emv_field("00", "br.gov.bcb.pix"),
        emv_field("25", &format!("pix.kobana.example/qr/v2/cobv/{txid}"))
    );
    let mut payload = String::new();
    payload.push_str(&emv_field("00", "01"));
    payload.push_str(&emv_field("01", "12"));
    payload.push_str(&emv_field("26", &account));
    payload.push_str(&emv_field("52", "0000"));
    payload.push_str(&emv_field("53", "986"));
    payload.push_str(&emv_field("58", "BR"));
    let name = emv_text(creditor, 25);
    payload.push_str(&emv_field(
        "59",
        if name.is_empty() { "CREDOR" } else { &name },
    ));
    payload.push_str(&emv_field("60", "SAO PAULO"));
    payload.push_str(&emv_field("62", &emv_field("05", "***")));
    payload.push_str("6304");
    let crc = crc16(payload.as_bytes());
    payload.push_str(&format!("{crc:04X}"));
    let expires = due + chrono::Duration::days(30);
    Pix {
        txid,
        emv: payload,
        qrcode_png_url: None,
        expires_at: format!(
            "{}T23:59:59{}",
            expires.format("%Y-%m-%d"),
            calendar::offset()
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn d(y: i32, m: u32, day: u32) -> NaiveDate {
        NaiveDate::from_ymd_opt(y, m, day).unwrap()
    }

    #[test]
    fn boleto_layout_and_check_digits() {
        let b = boleto("charge-1", Money::from_cents(123_456), d(2026, 12, 10));
        assert_eq!(b.barcode.len(), 44);
        assert_eq!(b.line.len(), 47);
        assert!(b.line.bytes().all(|c| c.is_ascii_digit()));
        assert_eq!(&b.barcode[..4], "0019");
        assert_eq!(&b.barcode[9..19], "0000123456");
        let dv = mod11(&format!("{}{}", &b.barcode[..4], &b.barcode[5..]));
        assert_eq!(b.barcode[4..5].parse::<u32>().unwrap(), dv);
        assert_eq!(&b.line[32..33], &b.barcode[4..5], "general check digit");
        assert_eq!(&b.line[33..], &b.barcode[5..19], "factor and amount");
        assert_eq!(
            b,
            boleto("charge-1", Money::from_cents(123_456), d(2026, 12, 10))
        );
    }

    #[test]
    fn due_factor_restarts_in_2025() {
        assert_eq!(due_factor(d(2000, 7, 3)), 1000);
        assert_eq!(due_factor(d(2025, 2, 21)), 9999);
        assert_eq!(due_factor(d(2025, 2, 22)), 1000);
        assert_eq!(due_factor(d(2025, 2, 23)), 1001);
    }

    #[test]
    fn known_check_digits() {
        // FEBRABAN examples.
        assert_eq!(mod10("001905009"), 5);
        assert_eq!(mod10("4014481606"), 9);
        assert_eq!(mod10("0680935031"), 4);
        assert_eq!(mod11("0019373700000001000500940144816060680935031"), 3);
        assert_eq!(crc16(b"123456789"), 0x29B1);
    }

    #[test]
    fn pix_txid_and_crc() {
        let p = pix("charge-1", d(2026, 12, 10), "Demo Cobranças Ltda");
        assert_eq!(p.txid.len(), 32);
        assert!(p.txid.bytes().all(|c| c.is_ascii_alphanumeric()));
        assert!(p.emv.starts_with("000201"));
        assert!(p.emv.contains("DEMO COBRANCAS LTDA"));
        let (body, crc) = p.emv.split_at(p.emv.len() - 4);
        assert_eq!(format!("{:04X}", crc16(body.as_bytes())), crc);
        assert_eq!(p.expires_at, "2027-01-09T23:59:59-03:00");
    }
}
