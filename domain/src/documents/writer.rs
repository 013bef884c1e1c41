//! The small PDF layout engine every document uses: A4 pages, the embedded Unicode
//! fonts, headings, wrapped paragraphs, table rows, page breaks and numbers.
//!
//! Text is shaped as it is placed ([`fonts::shape_line`]) and each glyph gets its id in
//! its face's subset at once (the order of first use), so the content streams are final
//! when written; [`Writer::finish`] then embeds each face used as a subset of exactly
//! those glyphs (`subsetter`), as a `Type0` font over a `CIDFontType2` (`Identity-H`,
//! two bytes per glyph) with its widths and a `ToUnicode` map of every glyph's text.

use chrono::{Datelike, NaiveDate};
use pdf_writer::{Content, Date, Finish, Name, Pdf, Rect, Ref, Str, TextStr};
use sha2::{Digest, Sha256};

use super::Party;

use std::collections::BTreeMap;

use pdf_writer::types::{CidFontType, FontFlags, SystemInfo, UnicodeCmap};

use super::fonts::{self, Face, Glyph};

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
    /// The bold face.
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

/// Width of `text` in points (shaped with the embedded fonts, see [`super::fonts`]).
pub fn text_width(text: &str, style: Style) -> f32 {
    fonts::width(text, style.bold, style.size)
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
    faces: BTreeMap<Face, FaceUse>,
}

/// What a document uses of one face.
#[derive(Default)]
struct FaceUse {
    /// Glyph ids in the font file to their ids in the subset, in order of first use.
    remapper: subsetter::GlyphRemapper,
    /// Each subset glyph's width (1/1000 em), as first shaped.
    widths: BTreeMap<u16, f32>,
    /// Each subset glyph's text, as first shaped.
    text: BTreeMap<u16, String>,
}

/// A run of glyphs of one face: the two-byte ids, then after which glyph (index) the
/// pen moves by how much more than the glyph's width (`TJ` adjustments, 1/1000 em).
struct Run {
    face: Face,
    ids: Vec<u8>,
    adjust: Vec<(usize, f32)>,
}

/// Shows `runs` at `size` in the open text object.
fn emit(c: &mut Content, runs: &[Run], size: f32) {
    for run in runs {
        c.set_font(Name(run.face.resource()), size);
        let mut shown = c.show_positioned();
        let mut items = shown.items();
        let mut from = 0;
        for (after, adj) in &run.adjust {
            let end = 2 * (after + 1);
            items.show(Str(&run.ids[from..end]));
            items.adjust(*adj);
            from = end;
        }
        if from < run.ids.len() {
            items.show(Str(&run.ids[from..]));
        }
    }
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
            faces: BTreeMap::new(),
        };
        w.new_page();
        w
    }

    /// The runs of `text`, registering its glyphs in their faces' subsets.
    fn runs(&mut self, text: &str, style: Style) -> Vec<Run> {
        let mut runs: Vec<Run> = Vec::new();
        for Glyph {
            face,
            gid,
            advance,
            text,
        } in fonts::shape_line(text, style.bold)
        {
            let used = self.faces.entry(face).or_default();
            let id = used.remapper.remap(gid);
            let width = *used.widths.entry(id).or_insert(advance);
            if !text.is_empty() {
                used.text.entry(id).or_insert(text);
            }
            if runs.last().is_none_or(|r| r.face != face) {
                runs.push(Run {
                    face,
                    ids: Vec::new(),
                    adjust: Vec::new(),
                });
            }
            let Some(run) = runs.last_mut() else { continue };
            run.ids.extend(id.to_be_bytes());
            if (width - advance).abs() > 0.01 {
                run.adjust.push((run.ids.len() / 2 - 1, width - advance));
            }
        }
        runs
    }

    /// Starts a page: the watermark first, so the text is drawn over it.
    fn new_page(&mut self) {
        let mut c = Content::new();
        if let Some(text) = self.watermark {
            let style = Style::bold(54.0);
            let runs = self.runs(text, style);
            let (sin, cos) = std::f32::consts::FRAC_PI_4.sin_cos();
            let width = text_width(text, style);
            let (cx, cy) = (PAGE_W / 2.0, PAGE_H / 2.0);
            let x = cx - cos * width / 2.0;
            let y = cy - sin * width / 2.0;
            c.save_state();
            c.set_fill_gray(0.82);
            c.begin_text();
            c.set_text_matrix([cos, sin, -sin, cos, x, y]);
            emit(&mut c, &runs, style.size);
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
        let runs = self.runs(text, style);
        let c = self.page();
        c.begin_text();
        c.next_line(x, y);
        emit(c, &runs, style.size);
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

    /// Writes the PDF: catalog, pages with page numbers, the fonts used (subsets),
    /// metadata.
    pub fn finish(mut self) -> Vec<u8> {
        let n = self.pages.len();
        // The footers first: their glyphs belong to the subsets too.
        let footer_style = Style::regular(8.0);
        let footers: Vec<(f32, Vec<Run>)> = (0..n)
            .map(|i| {
                let footer = format!("{} — página {} de {n}", self.title, i + 1);
                let x = PAGE_W - MARGIN - text_width(&footer, footer_style);
                (x, self.runs(&footer, footer_style))
            })
            .collect();
        let catalog = Ref::new(1);
        let tree = Ref::new(2);
        let info = Ref::new(3);
        // Five objects per face used: Type0 font, CID font, descriptor, file, ToUnicode.
        let faces: Vec<(Face, i32)> = self
            .faces
            .keys()
            .enumerate()
            .map(|(i, f)| (*f, 4 + 5 * i as i32))
            .collect();
        let first = 4 + 5 * faces.len() as i32;
        let mut pdf = Pdf::new();
        pdf.set_version(1, 4);
        pdf.catalog(catalog).pages(tree);
        let page_ids: Vec<Ref> = (0..n).map(|i| Ref::new(first + 2 * i as i32)).collect();
        pdf.pages(tree)
            .kids(page_ids.iter().copied())
            .count(n as i32);
        let mut digest = Sha256::new();
        digest.update(self.title.as_bytes());
        let pages = std::mem::take(&mut self.pages);
        for (i, (mut content, (x, runs))) in pages.into_iter().zip(footers).enumerate() {
            content.begin_text();
            content.next_line(x, MARGIN - 20.0);
            emit(&mut content, &runs, footer_style.size);
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
            let mut fonts = resources.fonts();
            for (face, at) in &faces {
                fonts.pair(Name(face.resource()), Ref::new(*at));
            }
            fonts.finish();
            resources.finish();
            page.finish();
            pdf.stream(content_id, stream.as_slice());
        }
        for (face, at) in &faces {
            if let Some(used) = self.faces.get(face) {
                embed(&mut pdf, *face, *at, used);
            }
        }
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

/// Writes `face`'s five objects from `first`: the `Type0` font, its `CIDFontType2`,
/// the descriptor, the subset font file and the `ToUnicode` map.
fn embed(pdf: &mut Pdf, face: Face, first: i32, used: &FaceUse) {
    let (type0, cid, descriptor, file, cmap) = (
        Ref::new(first),
        Ref::new(first + 1),
        Ref::new(first + 2),
        Ref::new(first + 3),
        Ref::new(first + 4),
    );
    // A subset's name starts with a tag of six capitals naming the subset.
    let mut h = Sha256::new();
    h.update(face.postscript().as_bytes());
    for g in used.remapper.remapped_gids() {
        h.update(g.to_be_bytes());
    }
    let tag: String = h.finalize()[..6]
        .iter()
        .map(|b| char::from(b'A' + b % 26))
        .collect();
    let base = format!("{tag}+{}", face.postscript());
    let data = subsetter::subset(face.data(), 0, &used.remapper)
        .unwrap_or_else(|e| unreachable!("the embedded fonts subset: {e}"));
    let system = || SystemInfo {
        registry: Str(b"Adobe"),
        ordering: Str(b"Identity"),
        supplement: 0,
    };
    pdf.type0_font(type0)
        .base_font(Name(base.as_bytes()))
        .encoding_predefined(Name(b"Identity-H"))
        .descendant_font(cid)
        .to_unicode(cmap);
    let mut c = pdf.cid_font(cid);
    c.subtype(CidFontType::Type2)
        .base_font(Name(base.as_bytes()))
        .system_info(system())
        .font_descriptor(descriptor)
        .default_width(0.0)
        .cid_to_gid_map_predefined(Name(b"Identity"));
    let mut widths = c.widths();
    for (id, w) in &used.widths {
        widths.consecutive(*id, [*w]);
    }
    widths.finish();
    c.finish();
    let (ascent, descent, cap, [x0, y0, x1, y1]) = face.metrics();
    let flags = if face == Face::Cjk {
        FontFlags::SYMBOLIC
    } else {
        FontFlags::NON_SYMBOLIC
    };
    pdf.font_descriptor(descriptor)
        .name(Name(base.as_bytes()))
        .flags(flags)
        .bbox(Rect::new(x0, y0, x1, y1))
        .italic_angle(0.0)
        .ascent(ascent)
        .descent(descent)
        .cap_height(cap)
        .stem_v(if face == Face::Bold { 140.0 } else { 80.0 })
        .font_file2(file);
    pdf.stream(file, &data).pair(
        Name(b"Length1"),
        i32::try_from(data.len()).unwrap_or(i32::MAX),
    );
    let name = format!("Kobana-{}-UCS", String::from_utf8_lossy(face.resource()));
    let mut map = UnicodeCmap::new(Name(name.as_bytes()), system());
    for (id, text) in &used.text {
        map.pair_with_multiple(*id, text.chars());
    }
    pdf.cmap(cmap, &map.finish());
}
