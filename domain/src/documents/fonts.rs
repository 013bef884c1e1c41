//! Unicode text in the PDF documents: the embedded fonts (`fonts/`, see its README for
//! their origin and licenses) and how a line of text becomes positioned glyphs.
//!
//! A line goes, in this order:
//! 1. through the Unicode bidirectional algorithm (`unicode-bidi`): its runs in visual
//!    order, left to right, each left-to-right or right-to-left;
//! 2. within a run, each character to the first face that has it: DejaVu Sans (regular
//!    or bold) for Latin, Greek, Cyrillic, Hebrew and Arabic, else Droid Sans Fallback
//!    for CJK; a character neither has becomes U+FFFD (`�`), so it shows as a mark and
//!    is never silently dropped; spaces and combining marks stay with the face before
//!    them;
//! 3. each same-face piece shaped by `rustybuzz` (HarfBuzz's algorithm: Arabic joining
//!    forms, ligatures, right-to-left glyph order), pieces of a right-to-left run placed
//!    right to left.
//!
//! Each glyph keeps the text of its cluster (the characters it stands for, in logical
//! order; the other glyphs of a cluster keep none), from which the writer builds each
//! font's `ToUnicode` map: copying or extracting the text (`pdftotext`) gives back the
//! characters in reading order, whatever the script.

use std::sync::OnceLock;

use rustybuzz::{Direction, UnicodeBuffer};
use unicode_bidi::BidiInfo;

/// An embedded face.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Face {
    /// DejaVu Sans.
    Regular,
    /// DejaVu Sans Bold.
    Bold,
    /// Droid Sans Fallback (CJK).
    Cjk,
}

impl Face {
    /// Every face, in resource order.
    pub const ALL: [Self; 3] = [Self::Regular, Self::Bold, Self::Cjk];

    /// The font file.
    pub fn data(self) -> &'static [u8] {
        match self {
            Self::Regular => include_bytes!("fonts/DejaVuSans.ttf"),
            Self::Bold => include_bytes!("fonts/DejaVuSans-Bold.ttf"),
            Self::Cjk => include_bytes!("fonts/DroidSansFallback-CJK.ttf"),
        }
    }

    /// The page resource name.
    pub fn resource(self) -> &'static [u8] {
        match self {
            Self::Regular => b"F1",
            Self::Bold => b"F2",
            Self::Cjk => b"F3",
        }
    }

    /// The PostScript name.
    pub fn postscript(self) -> &'static str {
        match self {
            Self::Regular => "DejaVuSans",
            Self::Bold => "DejaVuSans-Bold",
            Self::Cjk => "DroidSansFallback",
        }
    }

    fn shaper(self) -> &'static rustybuzz::Face<'static> {
        static FACES: OnceLock<[rustybuzz::Face<'static>; 3]> = OnceLock::new();
        let faces = FACES.get_or_init(|| {
            Self::ALL.map(|f| {
                rustybuzz::Face::from_slice(f.data(), 0)
                    .unwrap_or_else(|| unreachable!("the embedded fonts parse"))
            })
        });
        &faces[self as usize]
    }

    /// Units per em.
    pub fn units_per_em(self) -> f32 {
        f32::from(self.shaper().units_per_em() as u16)
    }

    /// `(ascender, descender, cap height, bounding box)` in 1/1000 em.
    pub fn metrics(self) -> (f32, f32, f32, [f32; 4]) {
        let f = self.shaper();
        let k = 1000.0 / self.units_per_em();
        let b = f.global_bounding_box();
        let cap = f.capital_height().unwrap_or_else(|| f.ascender());
        (
            f32::from(f.ascender()) * k,
            f32::from(f.descender()) * k,
            f32::from(cap) * k,
            [
                f32::from(b.x_min) * k,
                f32::from(b.y_min) * k,
                f32::from(b.x_max) * k,
                f32::from(b.y_max) * k,
            ],
        )
    }

    fn has(self, c: char) -> bool {
        self.shaper().glyph_index(c).is_some()
    }
}

/// One glyph of a shaped line.
#[derive(Clone, Debug, PartialEq)]
pub struct Glyph {
    /// Its face.
    pub face: Face,
    /// Its id in the face's font file.
    pub gid: u16,
    /// Its advance in 1/1000 em as shaped.
    pub advance: f32,
    /// The characters it stands for (empty for the second glyph of a cluster).
    pub text: String,
}

/// The glyphs of one line of text, left to right (see the module docs).
pub fn shape_line(text: &str, bold: bool) -> Vec<Glyph> {
    let primary = if bold { Face::Bold } else { Face::Regular };
    let clean: String = text
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .map(|c| {
            if c.is_whitespace() || primary.has(c) || Face::Cjk.has(c) {
                c
            } else {
                '\u{FFFD}'
            }
        })
        .collect();
    let mut out = Vec::new();
    if clean.is_empty() {
        return out;
    }
    let bidi = BidiInfo::new(&clean, None);
    for para in &bidi.paragraphs {
        let (levels, runs) = bidi.visual_runs(para, para.range.clone());
        for run in runs {
            let rtl = levels[run.start].is_rtl();
            let mut pieces = pieces(&clean[run.clone()], primary);
            if rtl {
                pieces.reverse();
            }
            for (face, piece) in pieces {
                shape_piece(face, piece, rtl, &mut out);
            }
        }
    }
    out
}

/// `run` split into same-face pieces, in logical order.
fn pieces(run: &str, primary: Face) -> Vec<(Face, &str)> {
    let mut out: Vec<(Face, &str)> = Vec::new();
    let mut start = 0;
    let mut current: Option<Face> = None;
    for (i, c) in run.char_indices() {
        // Spaces and marks stay with the face before them when it has them.
        let follows = (c.is_whitespace() || is_mark(c)) && current.is_none_or(|f| f.has(c));
        let face = if follows {
            current.unwrap_or(primary)
        } else if primary.has(c) {
            primary
        } else {
            Face::Cjk
        };
        match current {
            Some(f) if f != face => {
                out.push((f, &run[start..i]));
                start = i;
                current = Some(face);
            }
            None => current = Some(face),
            _ => {}
        }
    }
    if let Some(f) = current {
        out.push((f, &run[start..]));
    }
    out
}

/// A combining mark (stays with its base character's face).
fn is_mark(c: char) -> bool {
    matches!(c as u32, 0x0300..=0x036F | 0x0610..=0x061A | 0x064B..=0x065F | 0x0670 | 0x06D6..=0x06ED | 0x1AB0..=0x1AFF | 0x20D0..=0x20FF | 0xFE20..=0xFE2F)
}

fn shape_piece(face: Face, piece: &str, rtl: bool, out: &mut Vec<Glyph>) {
    let mut buffer = UnicodeBuffer::new();
    buffer.push_str(piece);
    buffer.set_direction(if rtl {
        Direction::RightToLeft
    } else {
        Direction::LeftToRight
    });
    buffer.guess_segment_properties();
    let shaped = rustybuzz::shape(face.shaper(), &[], buffer);
    let k = 1000.0 / face.units_per_em();
    // Cluster starts in logical order, to cut each cluster's text.
    let mut starts: Vec<usize> = shaped
        .glyph_infos()
        .iter()
        .map(|g| g.cluster as usize)
        .collect();
    starts.sort_unstable();
    starts.dedup();
    let mut given = std::collections::BTreeSet::new();
    for (info, pos) in shaped.glyph_infos().iter().zip(shaped.glyph_positions()) {
        let start = info.cluster as usize;
        let text = if given.insert(start) {
            let end = starts
                .iter()
                .find(|s| **s > start)
                .copied()
                .unwrap_or(piece.len());
            piece.get(start..end).unwrap_or_default().to_owned()
        } else {
            String::new()
        };
        out.push(Glyph {
            face,
            gid: u16::try_from(info.glyph_id).unwrap_or(0),
            advance: pos.x_advance as f32 * k,
            text,
        });
    }
}

/// Width of `text` in points at `size`.
pub fn width(text: &str, bold: bool, size: f32) -> f32 {
    shape_line(text, bold)
        .iter()
        .map(|g| g.advance)
        .sum::<f32>()
        * size
        / 1000.0
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text_of(glyphs: &[Glyph]) -> String {
        glyphs.iter().map(|g| g.text.as_str()).collect()
    }

    #[test]
    fn every_script_of_a_name_finds_a_face_and_keeps_its_text() {
        let g = shape_line("Ñandú Ørsted 王芳 محمد", false);
        assert!(g.iter().all(|g| g.gid != 0), "no missing glyph: {g:?}");
        assert!(text_of(&g).starts_with("Ñandú Ørsted 王芳 "), "{g:?}");
        // The space after the CJK name is the Latin face's (the CJK font has none).
        let space = g.iter().find(|g| g.text == " " && g.face == Face::Cjk);
        assert!(space.is_none(), "{g:?}");
        let han: Vec<Face> = g
            .iter()
            .filter(|g| g.text == "王" || g.text == "芳")
            .map(|g| g.face)
            .collect();
        assert_eq!(han, [Face::Cjk, Face::Cjk]);
        assert!(
            g.iter()
                .filter(|g| g.text == "Ñ")
                .all(|g| g.face == Face::Regular)
        );
    }

    #[test]
    fn arabic_is_joined_and_laid_out_right_to_left() {
        let g = shape_line("محمد", true);
        assert_eq!(g.len(), 4, "{g:?}");
        assert!(g.iter().all(|g| g.gid != 0 && g.face == Face::Bold));
        // Visual order: the last letter (dal) leftmost, the first (meem) rightmost.
        assert_eq!(g[0].text, "د");
        assert_eq!(g[3].text, "م");
        // Joined forms: the two meems (initial and medial) are different glyphs.
        assert_ne!(g[1].gid, g[3].gid);
        // A left-to-right name around it keeps its place.
        let mixed = shape_line("Sr. محمد Ali", false);
        let text = text_of(&mixed);
        assert!(text.starts_with("Sr. ") && text.ends_with(" Ali"), "{text}");
    }

    #[test]
    fn a_character_no_font_has_shows_as_a_replacement_mark() {
        let g = shape_line("a😀b", false);
        assert_eq!(text_of(&g), "a\u{FFFD}b");
        assert!(g.iter().all(|g| g.gid != 0));
        assert!(width("abc", false, 10.0) > 0.0);
        assert!(width("abc", true, 10.0) > width("abc", false, 10.0) * 0.99);
    }
}
