//! Documents generated on demand: the settlement letter (carta
//! de quitação) and the debtor statement (extrato), as real PDF files.
//!
//! PDFs are written with `pdf-writer` (the typst project's PDF writer): PDF 1.4, A4
//! pages, Unicode fonts embedded as subsets of the glyphs used ([`fonts`]: DejaVu Sans
//! and Droid Sans Fallback, shipped under their licenses in `documents/fonts/`), so a
//! name in any script prints, and extracts, as written. Content streams are left
//! uncompressed: the documents are small.
//!
//! Deterministic: the same input gives the same bytes. No clock is read; dates come
//! from the data (the payment date of a letter, the `as_of` of a statement), and the
//! file identifier is a digest of the content. [`Writer`] is the small layout engine
//! both documents use (headings, wrapped paragraphs, table rows, page breaks, page
//! numbers); other documents (the agreement term) can use it too.
//!
//! Files: `writer` (the engine), `fonts` (shaping over the embedded fonts), `words`
//! (Portuguese dates, documents and amounts in words), `letter` and `statement` (the two
//! documents).

pub mod fonts;
mod letter;
mod statement;
mod words;
mod writer;

pub use letter::*;
pub use statement::*;
pub use words::*;
pub use writer::*;

#[cfg(test)]
mod tests {
    use chrono::NaiveDate;

    use super::*;
    use crate::brazil::money::Money;

    #[test]
    fn words() {
        assert_eq!(in_words(0), "zero");
        assert_eq!(in_words(100), "cem");
        assert_eq!(in_words(101), "cento e um");
        assert_eq!(in_words(1000), "mil");
        assert_eq!(in_words(1001), "mil e um");
        assert_eq!(in_words(1100), "mil e cem");
        assert_eq!(in_words(1234), "mil duzentos e trinta e quatro");
        assert_eq!(in_words(21_000), "vinte e um mil");
        assert_eq!(in_words(2_000_000), "dois milhões");
        assert_eq!(
            amount_in_words(Money::from_cents(123_456)),
            "mil duzentos e trinta e quatro reais e cinquenta e seis centavos"
        );
        assert_eq!(amount_in_words(Money::from_cents(100)), "um real");
        assert_eq!(amount_in_words(Money::from_cents(1)), "um centavo");
        assert_eq!(
            amount_in_words(Money::from_cents(100_000_000)),
            "um milhão de reais"
        );
    }

    #[test]
    fn documents_and_dates() {
        assert_eq!(format_document("52998224725"), "529.982.247-25");
        assert_eq!(format_document("11222333000181"), "11.222.333/0001-81");
        let d = NaiveDate::from_ymd_opt(2026, 3, 1).unwrap();
        assert_eq!(long_date(d), "1º de março de 2026");
    }
}
