//! The export file: one CSV writer for both dialects, and how each cell is written.
//!
//! - `rfc4180` (the default): RFC 4180, UTF-8, comma-separated, CRLF, a header row,
//!   fields quoted when needed; numbers with a decimal point (money as `1234.56`).
//! - `pt-BR`: what Excel in Portuguese opens as columns without an import wizard: a
//!   UTF-8 byte-order mark (so accents are read as UTF-8), `;` as the separator and a
//!   decimal comma (`1234,56`); otherwise the same (CRLF, header, quoting).
//!
//! In both, dates and timestamps stay ISO 8601, lists are joined with `;` (quoted in
//! `pt-BR`), and text cells a spreadsheet would run as a formula (starting with `=`,
//! `+`, `-`, `@`, tab or CR) get a leading `'` (OWASP "CSV injection").

use serde_json::Value;

/// Columns written as money (two decimals).
const MONEY: &[&str] = &[
    "amount",
    "updated_amount",
    "paid_amount",
    "open_amount",
    "overdue_amount",
    "original_amount",
    "fine_waived",
    "interest_waived",
    "discount_amount",
    "total_amount",
    "down_payment_amount",
];

/// A CSV dialect (the export's `dialect`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dialect {
    /// RFC 4180: `,` and a decimal point.
    Rfc4180,
    /// Brazilian spreadsheets: BOM, `;` and a decimal comma.
    PtBr,
}

impl Dialect {
    /// Every dialect's name, as the tools take it.
    pub const NAMES: [&'static str; 2] = ["rfc4180", "pt-BR"];

    /// From its name.
    pub fn parse(name: &str) -> Option<Self> {
        match name {
            "rfc4180" => Some(Self::Rfc4180),
            "pt-BR" => Some(Self::PtBr),
            _ => None,
        }
    }

    fn separator(self) -> u8 {
        match self {
            Self::Rfc4180 => b',',
            Self::PtBr => b';',
        }
    }

    /// `12.5` as this dialect writes it.
    fn decimal(self, text: String) -> String {
        match self {
            Self::Rfc4180 => text,
            Self::PtBr => text.replace('.', ","),
        }
    }
}

/// Writes records into a file of one dialect.
pub(super) struct Writer {
    dialect: Dialect,
    inner: csv::Writer<Vec<u8>>,
}

impl Writer {
    /// An empty file (the `pt-BR` one starts with its byte-order mark).
    pub(super) fn new(dialect: Dialect) -> Self {
        let start = match dialect {
            Dialect::Rfc4180 => Vec::new(),
            Dialect::PtBr => "\u{feff}".as_bytes().to_vec(),
        };
        let inner = csv::WriterBuilder::new()
            .delimiter(dialect.separator())
            .terminator(csv::Terminator::CRLF)
            .quote_style(csv::QuoteStyle::Necessary)
            .from_writer(start);
        Self { dialect, inner }
    }

    /// One record.
    pub(super) fn record<T: AsRef<[u8]>>(&mut self, fields: &[T]) -> Result<(), String> {
        self.inner
            .write_record(fields)
            .map_err(|e| format!("csv: {e}"))
    }

    /// The cell of `column` (a top-level field or a dotted path) in `row`.
    pub(super) fn cell(&self, row: &Value, column: &str) -> String {
        let pointer = format!("/{}", column.replace('.', "/"));
        let money = MONEY.contains(&column);
        match row.pointer(&pointer) {
            None | Some(Value::Null) => String::new(),
            Some(Value::Bool(b)) => b.to_string(),
            Some(Value::Number(n)) if money => self
                .dialect
                .decimal(format!("{:.2}", n.as_f64().unwrap_or_default())),
            Some(Value::Number(n)) => self.dialect.decimal(n.to_string()),
            Some(Value::String(s)) => safe_text(s.clone()),
            Some(Value::Array(items)) => safe_text(
                items
                    .iter()
                    .map(|i| match i {
                        Value::String(s) => s.clone(),
                        other => other.to_string(),
                    })
                    .collect::<Vec<_>>()
                    .join(";"),
            ),
            Some(other) => safe_text(other.to_string()),
        }
    }

    /// The file's text.
    pub(super) fn finish(self) -> Result<String, String> {
        let bytes = self.inner.into_inner().map_err(|e| format!("csv: {e}"))?;
        String::from_utf8(bytes).map_err(|e| format!("csv: {e}"))
    }
}

/// Neutralizes spreadsheet formulas (OWASP "CSV injection").
pub(super) fn safe_text(s: String) -> String {
    if s.starts_with(['=', '+', '-', '@', '\t', '\r']) {
        format!("'{s}")
    } else {
        s
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn file(dialect: Dialect) -> String {
        let mut w = Writer::new(dialect);
        w.record(&["name", "amount", "fine_percentage", "tags"])
            .unwrap();
        let row = json!({"name": "José; Ltda", "amount": 1234.5, "fine_percentage": 2.5,
                         "tags": ["a", "b"]});
        let cells: Vec<String> = ["name", "amount", "fine_percentage", "tags"]
            .iter()
            .map(|c| w.cell(&row, c))
            .collect();
        w.record(&cells).unwrap();
        w.finish().unwrap()
    }

    #[test]
    fn rfc4180_is_commas_and_decimal_points() {
        assert_eq!(
            file(Dialect::Rfc4180),
            "name,amount,fine_percentage,tags\r\nJosé; Ltda,1234.50,2.5,a;b\r\n"
        );
    }

    #[test]
    fn pt_br_is_a_bom_semicolons_and_decimal_commas() {
        assert_eq!(
            file(Dialect::PtBr),
            "\u{feff}name;amount;fine_percentage;tags\r\n\"José; Ltda\";1234,50;2,5;\"a;b\"\r\n"
        );
    }

    #[test]
    fn formulas_are_neutralized() {
        assert_eq!(safe_text("=1+1".into()), "'=1+1");
        assert_eq!(safe_text("-5".into()), "'-5");
        assert_eq!(safe_text("Maria".into()), "Maria");
    }
}
