//! CPF and CNPJ check digits: a document number whose check digits do not match is
//! refused where it is written.
//!
//! CNPJ includes the alphanumeric format in force since July 2026: the first twelve
//! characters may be `0-9A-Z`, each weighted by its ASCII code minus 48; the two check
//! digits stay numeric.

/// A validated taxpayer document, normalized (no punctuation, uppercase).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Document {
    /// Natural person, 11 digits.
    Cpf(String),
    /// Legal entity, 14 characters.
    Cnpj(String),
}

impl Document {
    /// The normalized text.
    pub fn as_str(&self) -> &str {
        match self {
            Self::Cpf(s) | Self::Cnpj(s) => s,
        }
    }

    /// `natural` for a CPF, `juridical` for a CNPJ.
    pub fn person_type(&self) -> &'static str {
        match self {
            Self::Cpf(_) => "natural",
            Self::Cnpj(_) => "juridical",
        }
    }
}

/// Parses and validates a CPF or CNPJ, with or without punctuation.
pub fn parse(raw: &str) -> Result<Document, &'static str> {
    let clean: String = raw
        .chars()
        .filter(|c| !matches!(c, '.' | '-' | '/' | ' '))
        .map(|c| c.to_ascii_uppercase())
        .collect();
    match clean.len() {
        11 if clean.bytes().all(|b| b.is_ascii_digit()) => {
            if valid_cpf(clean.as_bytes()) {
                Ok(Document::Cpf(clean))
            } else {
                Err("invalid CPF check digits")
            }
        }
        14 => {
            if valid_cnpj(clean.as_bytes()) {
                Ok(Document::Cnpj(clean))
            } else {
                Err("invalid CNPJ check digits")
            }
        }
        _ => Err("must be a CPF (11 digits) or a CNPJ (14 characters)"),
    }
}

fn valid_cpf(d: &[u8]) -> bool {
    if d.iter().all(|&b| b == d[0]) {
        return false;
    }
    let digit = |n: usize| {
        let sum: u32 = (0..n)
            .map(|i| u32::from(d[i] - b'0') * (n as u32 + 1 - i as u32))
            .sum();
        let r = (sum * 10) % 11;
        if r == 10 { 0 } else { r }
    };
    digit(9) == u32::from(d[9] - b'0') && digit(10) == u32::from(d[10] - b'0')
}

fn valid_cnpj(d: &[u8]) -> bool {
    let base_ok = d[..12]
        .iter()
        .all(|b| b.is_ascii_digit() || b.is_ascii_uppercase());
    if !base_ok || !d[12].is_ascii_digit() || !d[13].is_ascii_digit() {
        return false;
    }
    if d.iter().all(|&b| b == d[0]) {
        return false;
    }
    let value = |b: u8| u32::from(b) - 48;
    let digit = |n: usize| {
        let weights: Vec<u32> = (0..n).map(|i| ((n - 1 - i) % 8 + 2) as u32).collect();
        let sum: u32 = (0..n).map(|i| value(d[i]) * weights[i]).sum();
        let r = sum % 11;
        if r < 2 { 0 } else { 11 - r }
    };
    digit(12) == value(d[12]) && digit(13) == value(d[13])
}

/// Completes 9 CPF base digits with their check digits (demo data, tests).
pub fn cpf_from_base(base: &[u8; 9]) -> String {
    let mut d: Vec<u8> = base.iter().map(|b| b % 10 + b'0').collect();
    for n in [9usize, 10] {
        let sum: u32 = (0..n)
            .map(|i| u32::from(d[i] - b'0') * (n as u32 + 1 - i as u32))
            .sum();
        let r = (sum * 10) % 11;
        d.push(if r == 10 { b'0' } else { r as u8 + b'0' });
    }
    String::from_utf8(d).unwrap_or_default()
}

/// Completes 12 CNPJ base digits with their check digits (demo data, tests).
pub fn cnpj_from_base(base: &[u8; 12]) -> String {
    let mut d: Vec<u8> = base.iter().map(|b| b % 10 + b'0').collect();
    for n in [12usize, 13] {
        let sum: u32 = (0..n)
            .map(|i| u32::from(d[i] - b'0') * ((n - 1 - i) % 8 + 2) as u32)
            .sum();
        let r = sum % 11;
        d.push(if r < 2 { b'0' } else { (11 - r) as u8 + b'0' });
    }
    String::from_utf8(d).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_documents() {
        assert_eq!(
            parse("529.982.247-25").unwrap(),
            Document::Cpf("52998224725".into())
        );
        assert!(parse("529.982.247-24").is_err());
        assert!(
            parse("111.111.111-11").is_err(),
            "repeated digits are invalid"
        );
        assert_eq!(
            parse("11.222.333/0001-81").unwrap(),
            Document::Cnpj("11222333000181".into())
        );
        assert!(parse("11.222.333/0001-82").is_err());
        // Alphanumeric CNPJ (Receita Federal example).
        assert_eq!(
            parse("12.ABC.345/01DE-35").unwrap(),
            Document::Cnpj("12ABC34501DE35".into())
        );
        assert!(parse("12.ABC.345/01DE-36").is_err());
        assert!(parse("123").is_err());
        assert!(parse("").is_err());
    }

    #[test]
    fn generators_make_valid_documents() {
        for i in 0..50u8 {
            let cpf = cpf_from_base(&[i, 3, 7, i / 3, 9, 1, 4, 2, i % 7]);
            assert!(parse(&cpf).is_ok(), "{cpf}");
            let cnpj = cnpj_from_base(&[i, 1, 2, 3, 4, 5, 6, 7, 0, 0, 0, 1]);
            assert!(parse(&cnpj).is_ok(), "{cnpj}");
        }
    }
}
