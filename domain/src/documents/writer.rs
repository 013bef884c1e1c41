//! The small PDF layout engine every document uses: A4 pages, Helvetica with
//! `WinAnsiEncoding`, headings, wrapped paragraphs, table rows, page breaks and numbers.

use super::*;

pub(super) const PAGE_W: f32 = 595.0;
pub(super) const PAGE_H: f32 = 842.0;
pub(super) const MARGIN: f32 = 56.0;
pub(super) const BOTTOM: f32 = 72.0;

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
pub(super) const HELVETICA: [u16; 95] = [
    278, 278, 355, 556, 556, 889, 667, 191, 333, 333, 389, 584, 278, 333, 278, 278, 556, 556, 556,
    556, 556, 556, 556, 556, 556, 556, 278, 278, 584, 584, 584, 556, 1015, 667, 667, 722, 722, 667,
    611, 778, 722, 278, 500, 667, 556, 833, 722, 778, 667, 778, 722, 667, 611, 722, 667, 944, 667,
    667, 611, 278, 278, 278, 469, 556, 333, 556, 556, 500, 556, 556, 278, 556, 556, 222, 222, 500,
    222, 833, 556, 556, 556, 556, 333, 500, 278, 556, 500, 722, 500, 500, 500, 334, 260, 334, 584,
];
pub(super) const HELVETICA_BOLD: [u16; 95] = [
    278, 333, 474, 556, 556, 889, 722, 238, 333, 333, 389, 584, 278, 333, 278, 278, 556, 556, 556,
    556, 556, 556, 556, 556, 556, 556, 333, 333, 584, 584, 584, 611, 975, 722, 722, 722, 722, 667,
    611, 778, 722, 278, 556, 722, 611, 833, 722, 778, 667, 778, 722, 667, 611, 722, 667, 944, 667,
    667, 611, 333, 278, 333, 584, 556, 333, 556, 611, 556, 611, 556, 333, 611, 611, 278, 278, 556,
    278, 889, 611, 611, 611, 611, 389, 556, 333, 611, 556, 778, 556, 556, 500, 389, 280, 389, 584,
];

/// The ASCII letter an accented Latin-1 letter is drawn like (for widths).
pub(super) fn base_letter(c: char) -> char {
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
    watermark: Option<&'static str>,
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
        Self::watermarked(title, date, None)
    }

    /// [`Writer::new`], with `watermark` (a draft's "MINUTA") drawn diagonally in light
    /// grey under the text of every page, when there is one.
    pub fn watermarked(title: &str, date: NaiveDate, watermark: Option<&'static str>) -> Self {
        let mut w = Self {
            title: title.to_owned(),
            date,
            watermark,
            pages: Vec::new(),
            y: PAGE_H - MARGIN,
        };
        w.new_page();
        w
    }

    /// Starts a page: the watermark first, so the text is drawn over it.
    fn new_page(&mut self) {
        let mut c = Content::new();
        if let Some(text) = self.watermark {
            let style = Style::bold(54.0);
            let bytes = encode(text);
            let (sin, cos) = std::f32::consts::FRAC_PI_4.sin_cos();
            let width = text_width(text, style);
            let (cx, cy) = (PAGE_W / 2.0, PAGE_H / 2.0);
            let x = cx - cos * width / 2.0;
            let y = cy - sin * width / 2.0;
            c.save_state();
            c.set_fill_gray(0.82);
            c.begin_text();
            c.set_font(Name(b"F2"), style.size);
            c.set_text_matrix([cos, sin, -sin, cos, x, y]);
            c.show(Str(&bytes));
            c.end_text();
            c.restore_state();
        }
        self.pages.push(c);
        self.y = PAGE_H - MARGIN;
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
            self.new_page();
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

    /// A party as letterheads and signatures show it: the name in `name`, then its
    /// document (`CNPJ 00.000.000/0000-00`) in 10 pt.
    pub fn party(&mut self, party: &Party, name: Style) {
        self.line(&party.name, name);
        let document = format!("{} {}", party.document_kind(), party.document_formatted());
        self.line(&document, Style::regular(10.0));
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
