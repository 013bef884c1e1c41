//! Documents generated on demand (domain.md §1 "document"): the settlement letter (carta
//! de quitação) and the debtor statement (extrato), as real PDF files.
//!
//! PDFs are written with `pdf-writer` (the typst project's PDF writer): PDF 1.4, A4
//! pages, the standard Helvetica fonts (not embedded) with `WinAnsiEncoding`, so
//! Portuguese accents come out right in any reader. Content streams are left
//! uncompressed: the documents are small and stay greppable.
//!
//! Deterministic: the same input gives the same bytes. No clock is read; dates come
//! from the data (the payment date of a letter, the `as_of` of a statement), and the
//! file identifier is a digest of the content. [`Writer`] is the small layout engine
//! both documents use (headings, wrapped paragraphs, table rows, page breaks, page
//! numbers); other documents (the agreement term) can use it too.

use chrono::{Datelike, NaiveDate};
use pdf_writer::{Content, Date, Finish, Name, Pdf, Rect, Ref, Str, TextStr};
use sha2::{Digest, Sha256};

use crate::rules::money;

const PAGE_W: f32 = 595.0;
const PAGE_H: f32 = 842.0;
const MARGIN: f32 = 56.0;
const BOTTOM: f32 = 72.0;

/// Horizontal alignment of a table cell.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Align {
    /// Text starts at the cell's x.
    Left,
    /// Text ends at the cell's x.
    Right,
}

/// A text style.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Style {
    /// Font size in points.
    pub size: f32,
    /// Helvetica-Bold instead of Helvetica.
    pub bold: bool,
}

impl Style {
    /// Regular text of `size` points.
    pub const fn regular(size: f32) -> Self {
        Self { size, bold: false }
    }
    /// Bold text of `size` points.
    pub const fn bold(size: f32) -> Self {
        Self { size, bold: true }
    }
}

/// Maps a character to its `WinAnsiEncoding` byte (`?` when it has none).
pub fn winansi(c: char) -> u8 {
    let u = c as u32;
    match u {
        0x20..=0x7E | 0xA0..=0xFF => u as u8,
        _ => match c {
            '€' => 0x80,
            '‚' => 0x82,
            'ƒ' => 0x83,
            '„' => 0x84,
            '…' => 0x85,
            '†' => 0x86,
            '‡' => 0x87,
            'ˆ' => 0x88,
            '‰' => 0x89,
            'Š' => 0x8A,
            '‹' => 0x8B,
            'Œ' => 0x8C,
            'Ž' => 0x8E,
            '‘' => 0x91,
            '’' => 0x92,
            '“' => 0x93,
            '”' => 0x94,
            '•' => 0x95,
            '–' => 0x96,
            '—' => 0x97,
            '˜' => 0x98,
            '™' => 0x99,
            'š' => 0x9A,
            '›' => 0x9B,
            'œ' => 0x9C,
            'ž' => 0x9E,
            'Ÿ' => 0x9F,
            '\t' | '\n' | '\r' => b' ',
            _ => b'?',
        },
    }
}

/// The character a `WinAnsiEncoding` byte stands for.
pub fn from_winansi(b: u8) -> char {
    const HIGH: [char; 32] = [
        '€', '\u{81}', '‚', 'ƒ', '„', '…', '†', '‡', 'ˆ', '‰', 'Š', '‹', 'Œ', '\u{8d}', 'Ž',
        '\u{8f}', '\u{90}', '‘', '’', '“', '”', '•', '–', '—', '˜', '™', 'š', '›', 'œ', '\u{9d}',
        'ž', 'Ÿ',
    ];
    match b {
        0x80..=0x9F => HIGH[usize::from(b - 0x80)],
        _ => char::from(b),
    }
}

/// Encodes text for a `WinAnsiEncoding` font.
pub fn encode(text: &str) -> Vec<u8> {
    text.chars().map(winansi).collect()
}

// Helvetica and Helvetica-Bold advance widths (AFM, 1/1000 em) for ASCII 32..=126.
const HELVETICA: [u16; 95] = [
    278, 278, 355, 556, 556, 889, 667, 191, 333, 333, 389, 584, 278, 333, 278, 278, 556, 556, 556,
    556, 556, 556, 556, 556, 556, 556, 278, 278, 584, 584, 584, 556, 1015, 667, 667, 722, 722, 667,
    611, 778, 722, 278, 500, 667, 556, 833, 722, 778, 667, 778, 722, 667, 611, 722, 667, 944, 667,
    667, 611, 278, 278, 278, 469, 556, 333, 556, 556, 500, 556, 556, 278, 556, 556, 222, 222, 500,
    222, 833, 556, 556, 556, 556, 333, 500, 278, 556, 500, 722, 500, 500, 500, 334, 260, 334, 584,
];
const HELVETICA_BOLD: [u16; 95] = [
    278, 333, 474, 556, 556, 889, 722, 238, 333, 333, 389, 584, 278, 333, 278, 278, 556, 556, 556,
    556, 556, 556, 556, 556, 556, 556, 333, 333, 584, 584, 584, 611, 975, 722, 722, 722, 722, 667,
    611, 778, 722, 278, 556, 722, 611, 833, 722, 778, 667, 778, 722, 667, 611, 722, 667, 944, 667,
    667, 611, 333, 278, 333, 584, 556, 333, 556, 611, 556, 611, 556, 333, 611, 611, 278, 278, 556,
    278, 889, 611, 611, 611, 611, 389, 556, 333, 611, 556, 778, 556, 556, 500, 389, 280, 389, 584,
];

/// The ASCII letter an accented Latin-1 letter is drawn like (for widths).
fn base_letter(c: char) -> char {
    match c {
        'à'..='å' => 'a',
        'À'..='Å' => 'A',
        'ç' => 'c',
        'Ç' => 'C',
        'è'..='ë' => 'e',
        'È'..='Ë' => 'E',
        'ì'..='ï' => 'i',
        'Ì'..='Ï' => 'I',
        'ñ' => 'n',
        'Ñ' => 'N',
        'ò'..='ö' => 'o',
        'Ò'..='Ö' => 'O',
        'ù'..='ü' => 'u',
        'Ù'..='Ü' => 'U',
        'º' | 'ª' | '°' => 'o',
        _ => c,
    }
}

/// Width of `text` in points.
pub fn text_width(text: &str, style: Style) -> f32 {
    let table = if style.bold {
        &HELVETICA_BOLD
    } else {
        &HELVETICA
    };
    let units: u32 = text
        .chars()
        .map(|c| {
            let b = base_letter(c) as u32;
            if (32..=126).contains(&b) {
                u32::from(table[(b - 32) as usize])
            } else {
                556
            }
        })
        .sum();
    units as f32 * style.size / 1000.0
}

/// Splits `text` into lines no wider than `width`.
pub fn wrap(text: &str, style: Style, width: f32) -> Vec<String> {
    let mut lines = Vec::new();
    let mut cur = String::new();
    for word in text.split_whitespace() {
        let candidate = if cur.is_empty() {
            word.to_owned()
        } else {
            format!("{cur} {word}")
        };
        if text_width(&candidate, style) <= width || cur.is_empty() {
            cur = candidate;
        } else {
            lines.push(std::mem::take(&mut cur));
            cur = word.to_owned();
        }
    }
    if !cur.is_empty() {
        lines.push(cur);
    }
    lines
}

/// `text` cut with an ellipsis so that it is no wider than `width`.
pub fn fit(text: &str, style: Style, width: f32) -> String {
    if text_width(text, style) <= width {
        return text.to_owned();
    }
    let mut s = text.to_owned();
    while !s.is_empty() && text_width(&format!("{s}…"), style) > width {
        s.pop();
    }
    let mut s = s.trim_end().to_owned();
    s.push('…');
    s
}

/// A small page-layout engine over `pdf-writer`: text flows top to bottom and breaks
/// to a new page when the bottom margin is reached; [`Writer::finish`] adds the page
/// numbers and writes the file.
pub struct Writer {
    title: String,
    date: NaiveDate,
    pages: Vec<Content>,
    y: f32,
}

impl std::fmt::Debug for Writer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Writer")
            .field("title", &self.title)
            .field("pages", &self.pages.len())
            .finish_non_exhaustive()
    }
}

impl Writer {
    /// A document titled `title`, dated `date` (its creation date in the metadata).
    pub fn new(title: &str, date: NaiveDate) -> Self {
        Self {
            title: title.to_owned(),
            date,
            pages: vec![Content::new()],
            y: PAGE_H - MARGIN,
        }
    }

    /// Usable width between the margins.
    pub fn width(&self) -> f32 {
        PAGE_W - 2.0 * MARGIN
    }

    /// Left margin x.
    pub fn left(&self) -> f32 {
        MARGIN
    }

    /// Right margin x.
    pub fn right(&self) -> f32 {
        PAGE_W - MARGIN
    }

    fn page(&mut self) -> &mut Content {
        let last = self.pages.len() - 1;
        &mut self.pages[last]
    }

    /// Makes room for `h` points, breaking the page when needed.
    pub fn reserve(&mut self, h: f32) {
        if self.y - h < BOTTOM {
            self.pages.push(Content::new());
            self.y = PAGE_H - MARGIN;
        }
    }

    /// Vertical space.
    pub fn space(&mut self, h: f32) {
        self.y -= h;
    }

    fn show(&mut self, x: f32, y: f32, text: &str, style: Style) {
        let font = if style.bold { b"F2" } else { b"F1" };
        let bytes = encode(text);
        let c = self.page();
        c.begin_text();
        c.set_font(Name(font), style.size);
        c.next_line(x, y);
        c.show(Str(&bytes));
        c.end_text();
    }

    /// One line of text at the left margin.
    pub fn line(&mut self, text: &str, style: Style) {
        let h = style.size * 1.45;
        self.reserve(h);
        self.y -= style.size;
        let y = self.y;
        self.show(MARGIN, y, text, style);
        self.y -= h - style.size;
    }

    /// One centered line.
    pub fn centered(&mut self, text: &str, style: Style) {
        let h = style.size * 1.45;
        self.reserve(h);
        self.y -= style.size;
        let x = (PAGE_W - text_width(text, style)) / 2.0;
        let y = self.y;
        self.show(x, y, text, style);
        self.y -= h - style.size;
    }

    /// A paragraph wrapped to the margins.
    pub fn paragraph(&mut self, text: &str, style: Style) {
        for l in wrap(text, style, self.width()) {
            self.line(&l, style);
        }
    }

    /// One table row: `(text, x, alignment)` per cell.
    pub fn row(&mut self, cells: &[(&str, f32, Align)], style: Style) {
        let h = style.size * 1.5;
        self.reserve(h);
        self.y -= style.size;
        let y = self.y;
        for (text, x, align) in cells {
            let x = match align {
                Align::Left => *x,
                Align::Right => x - text_width(text, style),
            };
            self.show(x, y, text, style);
        }
        self.y -= h - style.size;
    }

    /// A thin horizontal rule across the margins.
    pub fn rule(&mut self) {
        self.reserve(6.0);
        self.y -= 3.0;
        let y = self.y;
        let c = self.page();
        c.set_line_width(0.5);
        c.move_to(MARGIN, y);
        c.line_to(PAGE_W - MARGIN, y);
        c.stroke();
        self.y -= 3.0;
    }

    /// Writes the PDF: catalog, pages with page numbers, the two fonts, metadata.
    pub fn finish(self) -> Vec<u8> {
        let n = self.pages.len();
        let catalog = Ref::new(1);
        let tree = Ref::new(2);
        let regular = Ref::new(3);
        let bold = Ref::new(4);
        let info = Ref::new(5);
        let first = 6;
        let mut pdf = Pdf::new();
        pdf.set_version(1, 4);
        pdf.catalog(catalog).pages(tree);
        let page_ids: Vec<Ref> = (0..n).map(|i| Ref::new(first + 2 * i as i32)).collect();
        pdf.pages(tree)
            .kids(page_ids.iter().copied())
            .count(n as i32);
        let mut digest = Sha256::new();
        digest.update(self.title.as_bytes());
        for (i, mut content) in self.pages.into_iter().enumerate() {
            let footer = format!("{} — página {} de {n}", self.title, i + 1);
            let style = Style::regular(8.0);
            let bytes = encode(&footer);
            content.begin_text();
            content.set_font(Name(b"F1"), style.size);
            content.next_line(PAGE_W - MARGIN - text_width(&footer, style), MARGIN - 20.0);
            content.show(Str(&bytes));
            content.end_text();
            let stream = content.finish();
            digest.update(stream.as_slice());
            let page_id = page_ids[i];
            let content_id = Ref::new(page_id.get() + 1);
            let mut page = pdf.page(page_id);
            page.media_box(Rect::new(0.0, 0.0, PAGE_W, PAGE_H));
            page.parent(tree);
            page.contents(content_id);
            let mut resources = page.resources();
            resources
                .fonts()
                .pair(Name(b"F1"), regular)
                .pair(Name(b"F2"), bold);
            resources.finish();
            page.finish();
            pdf.stream(content_id, stream.as_slice());
        }
        pdf.type1_font(regular)
            .base_font(Name(b"Helvetica"))
            .encoding_predefined(Name(b"WinAnsiEncoding"));
        pdf.type1_font(bold)
            .base_font(Name(b"Helvetica-Bold"))
            .encoding_predefined(Name(b"WinAnsiEncoding"));
        let date = Date::new(u16::try_from(self.date.year()).unwrap_or(2000))
            .month(self.date.month() as u8)
            .day(self.date.day() as u8)
            .hour(0)
            .minute(0)
            .second(0)
            .utc_offset_hour(-3)
            .utc_offset_minute(0);
        pdf.document_info(info)
            .title(TextStr(&self.title))
            .producer(TextStr("kobana-dunning"))
            .creator(TextStr("kobana-dunning"))
            .creation_date(date)
            .modified_date(date);
        let id = digest.finalize()[..16].to_vec();
        pdf.set_file_id((id.clone(), id));
        pdf.finish()
    }
}

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

const MONTHS: [&str; 12] = [
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

const UNITS: [&str; 20] = [
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
const TENS: [&str; 10] = [
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
const HUNDREDS: [&str; 10] = [
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

fn below_thousand(n: u64) -> String {
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
pub fn amount_in_words(cents: i64) -> String {
    let c = cents.unsigned_abs();
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

/// What a settlement letter says.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SettlementLetter {
    /// The creditor (the organization).
    pub creditor: Party,
    /// The debtor.
    pub debtor: Party,
    /// Charge id.
    pub charge_id: String,
    /// The creditor's own id for the charge.
    pub external_id: Option<String>,
    /// What was charged.
    pub description: Option<String>,
    /// Amount originally charged (centavos).
    pub original_cents: i64,
    /// Amount received (centavos).
    pub paid_cents: i64,
    /// Due date.
    pub due_date: NaiveDate,
    /// Date of the settling payment.
    pub paid_on: NaiveDate,
    /// `boleto`, `pix`, `manual` or `agreement`.
    pub paid_via: String,
    /// The completed agreement that settled the charge (`paid_via` = `agreement`).
    pub agreement_id: Option<String>,
    /// Where the letter is issued.
    pub place: String,
}

fn via_text(via: &str) -> &'static str {
    match via {
        "boleto" => "boleto bancário",
        "pix" => "Pix",
        _ => "pagamento registrado pelo credor",
    }
}

/// The settlement letter (carta de quitação, Código Civil arts. 319–320) as a PDF.
pub fn settlement_letter(l: &SettlementLetter) -> Vec<u8> {
    let mut w = Writer::new("Carta de quitação", l.paid_on);
    w.line(&l.creditor.name, Style::bold(12.0));
    w.line(
        &format!(
            "{} {}",
            l.creditor.document_kind(),
            l.creditor.document_formatted()
        ),
        Style::regular(10.0),
    );
    w.space(28.0);
    w.centered("CARTA DE QUITAÇÃO", Style::bold(16.0));
    w.space(20.0);
    let body = Style::regular(11.0);
    let reference = match (&l.description, &l.external_id) {
        (Some(d), Some(e)) => format!("{d} (cobrança {}, referência {e})", l.charge_id),
        (Some(d), None) => format!("{d} (cobrança {})", l.charge_id),
        (None, Some(e)) => format!("cobrança {}, referência {e}", l.charge_id),
        (None, None) => format!("cobrança {}", l.charge_id),
    };
    let amount = money::format_brl(l.paid_cents);
    let debtor = format!(
        "{}, inscrito(a) no {} sob o nº {}",
        l.debtor.name,
        l.debtor.document_kind(),
        l.debtor.document_formatted()
    );
    let creditor = format!(
        "{}, inscrita no {} sob o nº {}",
        l.creditor.name,
        l.creditor.document_kind(),
        l.creditor.document_formatted()
    );
    let words = amount_in_words(l.paid_cents);
    let text = match &l.agreement_id {
        Some(aid) => format!(
            "{creditor}, declara, para os devidos fins, que o débito de {debtor}, no valor de {amount} ({words}), referente a {reference}, com vencimento em {}, foi integralmente pago por meio do acordo de renegociação nº {aid}, cujas parcelas foram todas quitadas, estando o acordo concluído em {}.",
            short_date(l.due_date),
            short_date(l.paid_on),
        ),
        None => format!(
            "{creditor}, declara, para os devidos fins, que recebeu de {debtor} a importância de {amount} ({words}), por meio de {}, em {}, referente a {reference}, com vencimento em {}.",
            via_text(&l.paid_via),
            short_date(l.paid_on),
            short_date(l.due_date),
        ),
    };
    w.paragraph(&text, body);
    w.space(8.0);
    w.paragraph(
        "Com o recebimento dessa importância, o credor dá ao devedor plena, geral e irrevogável quitação do débito acima identificado, nada mais tendo a reclamar a esse título, nos termos dos arts. 319 e 320 do Código Civil (Lei nº 10.406/2002).",
        body,
    );
    if l.original_cents != l.paid_cents {
        w.space(8.0);
        w.paragraph(
            &format!(
                "Valor original da cobrança: {}; valor recebido, com os encargos ou descontos aplicáveis na data do pagamento: {amount}.",
                money::format_brl(l.original_cents)
            ),
            body,
        );
    }
    w.space(24.0);
    w.line(
        &format!("{}, {}.", l.place, long_date(l.paid_on)),
        Style::regular(11.0),
    );
    w.space(56.0);
    w.line("________________________________________", body);
    w.line(&l.creditor.name, Style::bold(11.0));
    w.line(
        &format!(
            "{} {}",
            l.creditor.document_kind(),
            l.creditor.document_formatted()
        ),
        Style::regular(10.0),
    );
    w.finish()
}

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
    pub amount_cents: i64,
    /// Paid so far (centavos).
    pub paid_cents: i64,
    /// Owed on the statement date (centavos).
    pub updated_cents: i64,
    /// Days late on the statement date.
    pub days_overdue: i64,
}

/// Totals of a statement (centavos), computed by the server.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct StatementTotals {
    /// Open charges' amounts minus payments.
    pub open_cents: i64,
    /// Open charges' updated amounts.
    pub updated_cents: i64,
    /// Overdue part of the updated amounts.
    pub overdue_cents: i64,
    /// Received on paid charges.
    pub paid_cents: i64,
    /// Amounts folded into agreements.
    pub renegotiated_cents: i64,
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

fn status_text(s: &str) -> &str {
    match s {
        "pending" => "em aberto",
        "overdue" => "vencida",
        "partially_paid" => "paga em parte",
        "paid" => "paga",
        "renegotiated" => "renegociada",
        other => other,
    }
}

/// The debtor statement (extrato) as a PDF.
pub fn debtor_statement(s: &StatementDoc) -> Vec<u8> {
    let mut w = Writer::new("Extrato de débitos", s.as_of);
    w.line(&s.creditor.name, Style::bold(12.0));
    w.line(
        &format!(
            "{} {}",
            s.creditor.document_kind(),
            s.creditor.document_formatted()
        ),
        Style::regular(10.0),
    );
    w.space(16.0);
    w.centered("EXTRATO DE DÉBITOS", Style::bold(15.0));
    w.space(10.0);
    let body = Style::regular(10.0);
    w.line(
        &format!(
            "Devedor(a): {} — {} {}",
            s.debtor.name,
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
        let amount = money::format_brl(line.amount_cents);
        let updated = money::format_brl(line.updated_cents);
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
    for (label, cents, style) in [
        ("Em aberto (valor original)", t.open_cents, body),
        ("Vencido (atualizado)", t.overdue_cents, body),
        ("Pago", t.paid_cents, body),
        ("Renegociado", t.renegotiated_cents, body),
        ("Total devido atualizado", t.updated_cents, total),
    ] {
        let amount = money::format_brl(cents);
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
    use super::from_winansi;

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

    /// The text shown by the content streams, one string per line, decoded from
    /// `WinAnsiEncoding`.
    pub fn text(pdf: &[u8]) -> String {
        let mut out = String::new();
        let mut at = 0;
        while let Some(start) = find(pdf, b"stream\n", at) {
            let body = start + 7;
            let Some(end) = find(pdf, b"endstream", body) else {
                break;
            };
            let s = &pdf[body..end];
            let mut i = 0;
            while i < s.len() {
                match s[i] {
                    b'(' => {
                        i += 1;
                        let mut bytes = Vec::new();
                        decode_literal(s, &mut i, &mut bytes);
                        out.extend(bytes.into_iter().map(from_winansi));
                        out.push('\n');
                    }
                    b'<' if s.get(i + 1) != Some(&b'<') => {
                        let close = find(s, b">", i).unwrap_or(s.len());
                        let hex: Vec<u8> = s[i + 1..close]
                            .iter()
                            .copied()
                            .filter(u8::is_ascii_hexdigit)
                            .collect();
                        for pair in hex.chunks(2) {
                            let h = std::str::from_utf8(pair).unwrap_or("0");
                            let v = u8::from_str_radix(h, 16).unwrap_or(b'?');
                            out.push(from_winansi(v));
                        }
                        out.push('\n');
                        i = close + 1;
                    }
                    b'<' => i += 2,
                    _ => i += 1,
                }
            }
            at = end;
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
            amount_in_words(123_456),
            "mil duzentos e trinta e quatro reais e cinquenta e seis centavos"
        );
        assert_eq!(amount_in_words(100), "um real");
        assert_eq!(amount_in_words(1), "um centavo");
        assert_eq!(amount_in_words(100_000_000), "um milhão de reais");
    }

    #[test]
    fn winansi_round_trip() {
        for c in "ÁÉÍÓÚáéíóúÂÊÔâêôÃÕãõÇçº€“”—".chars() {
            assert_eq!(from_winansi(winansi(c)), c, "{c}");
        }
        assert_eq!(winansi('😀'), b'?');
    }

    #[test]
    fn documents_and_dates() {
        assert_eq!(format_document("52998224725"), "529.982.247-25");
        assert_eq!(format_document("11222333000181"), "11.222.333/0001-81");
        let d = NaiveDate::from_ymd_opt(2026, 3, 1).unwrap();
        assert_eq!(long_date(d), "1º de março de 2026");
    }
}
