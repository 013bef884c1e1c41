//! Portuguese text of documents: parties, CPF/CNPJ punctuation, dates and amounts in
//! words (for the letter's "a quantia de ...").

use chrono::{Datelike, NaiveDate};

use crate::brazil::money::Money;

/// A party of a document: name and CPF/CNPJ (digits, or alphanumeric CNPJ).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Party {
    /// Name.
    pub name: String,
    /// CPF (11) or CNPJ (14), without punctuation.
    pub document: String,
}

impl Party {
    /// `CPF` or `CNPJ`.
    pub fn document_kind(&self) -> &'static str {
        if self.document.len() == 11 {
            "CPF"
        } else {
            "CNPJ"
        }
    }

    /// The document with its usual punctuation.
    pub fn document_formatted(&self) -> String {
        format_document(&self.document)
    }
}

/// `529.982.247-25` / `11.222.333/0001-81`; anything else unchanged.
pub fn format_document(d: &str) -> String {
    match d.len() {
        11 => format!("{}.{}.{}-{}", &d[..3], &d[3..6], &d[6..9], &d[9..]),
        14 => format!(
            "{}.{}.{}/{}-{}",
            &d[..2],
            &d[2..5],
            &d[5..8],
            &d[8..12],
            &d[12..]
        ),
        _ => d.to_owned(),
    }
}

pub(super) const MONTHS: [&str; 12] = [
    "janeiro",
    "fevereiro",
    "março",
    "abril",
    "maio",
    "junho",
    "julho",
    "agosto",
    "setembro",
    "outubro",
    "novembro",
    "dezembro",
];

/// `1º de dezembro de 2026`.
pub fn long_date(d: NaiveDate) -> String {
    let day = if d.day() == 1 {
        "1º".to_owned()
    } else {
        d.day().to_string()
    };
    format!("{day} de {} de {}", MONTHS[d.month0() as usize], d.year())
}

/// `01/12/2026`.
pub fn short_date(d: NaiveDate) -> String {
    d.format("%d/%m/%Y").to_string()
}

pub(super) const UNITS: [&str; 20] = [
    "zero",
    "um",
    "dois",
    "três",
    "quatro",
    "cinco",
    "seis",
    "sete",
    "oito",
    "nove",
    "dez",
    "onze",
    "doze",
    "treze",
    "quatorze",
    "quinze",
    "dezesseis",
    "dezessete",
    "dezoito",
    "dezenove",
];
pub(super) const TENS: [&str; 10] = [
    "",
    "",
    "vinte",
    "trinta",
    "quarenta",
    "cinquenta",
    "sessenta",
    "setenta",
    "oitenta",
    "noventa",
];
pub(super) const HUNDREDS: [&str; 10] = [
    "",
    "cento",
    "duzentos",
    "trezentos",
    "quatrocentos",
    "quinhentos",
    "seiscentos",
    "setecentos",
    "oitocentos",
    "novecentos",
];

pub(super) fn below_thousand(n: u64) -> String {
    if n == 100 {
        return "cem".into();
    }
    let mut parts: Vec<String> = Vec::new();
    if n >= 100 {
        parts.push(HUNDREDS[(n / 100) as usize].into());
    }
    let r = n % 100;
    if r >= 20 {
        parts.push(TENS[(r / 10) as usize].into());
        if r % 10 > 0 {
            parts.push(UNITS[(r % 10) as usize].into());
        }
    } else if r > 0 || parts.is_empty() {
        parts.push(UNITS[r as usize].into());
    }
    parts.join(" e ")
}

/// A whole number in Portuguese words (`1234` → `mil duzentos e trinta e quatro`).
pub fn in_words(n: u64) -> String {
    if n < 1000 {
        return below_thousand(n);
    }
    let groups = [
        (1_000_000_000u64, "bilhão", "bilhões"),
        (1_000_000, "milhão", "milhões"),
        (1_000, "mil", "mil"),
    ];
    let mut parts: Vec<(u64, String)> = Vec::new();
    let mut rest = n;
    for (size, one, many) in groups {
        let g = rest / size;
        rest %= size;
        if g == 0 {
            continue;
        }
        let text = if size == 1_000 && g == 1 {
            "mil".to_owned()
        } else {
            format!("{} {}", below_thousand(g), if g == 1 { one } else { many })
        };
        parts.push((g * size, text));
    }
    if rest > 0 {
        parts.push((rest, below_thousand(rest)));
    }
    let mut out = String::new();
    for (i, (value, text)) in parts.iter().enumerate() {
        if i > 0 {
            let last = i == parts.len() - 1;
            let lower = *value < 100 || value % 100 == 0;
            out.push_str(if last && lower { " e " } else { " " });
        }
        out.push_str(text);
    }
    out
}

/// An amount in words (`R$ 1.234,56` → `mil duzentos e trinta e quatro reais e cinquenta
/// e seis centavos`).
pub fn amount_in_words(amount: Money) -> String {
    let c = amount.cents().unsigned_abs();
    let (reais, centavos) = (c / 100, c % 100);
    let mut out = String::new();
    if reais > 0 {
        out.push_str(&in_words(reais));
        if reais >= 1_000_000 && reais % 1_000_000 == 0 {
            out.push_str(" de");
        }
        out.push_str(if reais == 1 { " real" } else { " reais" });
    }
    if centavos > 0 {
        if !out.is_empty() {
            out.push_str(" e ");
        }
        out.push_str(&in_words(centavos));
        out.push_str(if centavos == 1 {
            " centavo"
        } else {
            " centavos"
        });
    }
    if out.is_empty() {
        out.push_str("zero real");
    }
    out
}
