//! Money: floats in BRL on the wire, integer centavos inside (no float drift in totals).

/// Centavos from a BRL float, or `None` when it has more than two decimals or is not finite.
pub fn cents(brl: f64) -> Option<i64> {
    if !brl.is_finite() || brl.abs() > 1e13 {
        return None;
    }
    let c = (brl * 100.0).round();
    ((brl * 100.0 - c).abs() < 1e-6).then_some(c as i64)
}

/// BRL float from centavos.
pub fn brl(cents: i64) -> f64 {
    cents as f64 / 100.0
}

/// Rounds a BRL amount to centavos.
pub fn round2(x: f64) -> f64 {
    (x * 100.0).round() / 100.0
}

/// `R$ 1.234,56`, the way a Brazilian reads an amount.
pub fn format_brl(cents: i64) -> String {
    let neg = cents < 0;
    let c = cents.unsigned_abs();
    let reais = (c / 100).to_string();
    let mut grouped = String::new();
    for (i, ch) in reais.chars().enumerate() {
        if i > 0 && (reais.len() - i) % 3 == 0 {
            grouped.push('.');
        }
        grouped.push(ch);
    }
    format!("{}R$ {grouped},{:02}", if neg { "-" } else { "" }, c % 100)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn conversions() {
        assert_eq!(cents(1234.56), Some(123_456));
        assert_eq!(cents(0.1 + 0.2), Some(30));
        assert_eq!(cents(1.234), None);
        assert_eq!(cents(f64::NAN), None);
        assert_eq!(brl(123_456), 1234.56);
        assert_eq!(format_brl(123_456), "R$ 1.234,56");
        assert_eq!(format_brl(5), "R$ 0,05");
        assert_eq!(format_brl(100_000_000), "R$ 1.000.000,00");
    }
}
