//! The agreement term (termo de acordo) as a PDF, with a draft watermark until it is
//! accepted.

use super::*;

pub(super) fn term(op: &mut Op<'_>) -> Result<Output, DomainError> {
    let id = op.str("id")?;
    let mut a = load_agreement(op, id)?;
    sync_installments(op, &mut a)?;
    let debtor: Debtor = must(op.tx, Kind::Debtor, op.org, &a.debtor_id)?;
    let org: crate::org::Organization = must(op.tx, Kind::Organization, op.org, op.org)?;
    let creditor = Party {
        name: org.name,
        document: org.cnpj,
    };
    let bytes = term_pdf(&a, &creditor, &debtor);
    Ok(Output::File(File {
        content_type: "application/pdf".into(),
        bytes,
        download_path: format!("/v1/agreements/{id}/term-pdf"),
    }))
}

pub(super) fn ts_date(ts: &str) -> Option<NaiveDate> {
    calendar::parse_timestamp(ts).map(|t| t.with_timezone(&calendar::offset()).date_naive())
}

pub(super) fn brl(x: f64) -> String {
    money::format_brl(money::cents(money::round2(x)).unwrap_or_default())
}

pub(super) fn short_iso(iso: &str) -> String {
    calendar::parse_date(iso).map_or_else(|| iso.to_owned(), documents::short_date)
}

/// The term of an agreement as a PDF: final once accepted, watermarked before.
pub fn term_pdf(a: &Agreement, creditor: &Party, debtor: &Debtor) -> Vec<u8> {
    let accepted = a.accepted_at.is_some();
    let date = a
        .accepted_at
        .as_deref()
        .and_then(ts_date)
        .or_else(|| ts_date(&a.created_at))
        .unwrap_or_default();
    let mut w = TermWriter::new(
        "Termo de acordo e confissão de dívida",
        date,
        (!accepted).then_some(DRAFT_WATERMARK),
    );
    let debtor_party = Party {
        name: debtor.name.clone(),
        document: debtor.cnpj_cpf.clone(),
    };
    w.centered("TERMO DE ACORDO E CONFISSÃO DE DÍVIDA", Style::bold(14.0));
    if !accepted {
        w.centered(
            "MINUTA — proposta ainda não aceita, sem valor de acordo",
            Style::bold(9.0),
        );
    }
    w.space(10.0);
    let body = Style::regular(10.0);
    let bold = Style::bold(10.0);
    w.line("CREDOR", bold);
    w.paragraph(
        &format!(
            "{}, inscrita no {} sob o nº {}.",
            creditor.name,
            creditor.document_kind(),
            creditor.document_formatted()
        ),
        body,
    );
    w.space(4.0);
    w.line("DEVEDOR(A)", bold);
    let addr = &debtor.address;
    let address = if addr.street.trim().is_empty() {
        String::new()
    } else {
        format!(
            ", com endereço em {}, {} - {}, {}/{}, CEP {}",
            addr.street, addr.number, addr.neighborhood, addr.city, addr.state, addr.zipcode
        )
    };
    w.paragraph(
        &format!(
            "{}, inscrito(a) no {} sob o nº {}{address}.",
            debtor_party.name,
            debtor_party.document_kind(),
            debtor_party.document_formatted()
        ),
        body,
    );
    w.space(8.0);
    let updated_cents = money::cents(a.updated_amount).unwrap_or_default();
    let total_cents = money::cents(a.total_amount).unwrap_or_default();
    let as_of = ts_date(&a.created_at).unwrap_or(date);
    w.line("Cláusula 1ª — Da confissão de dívida", bold);
    w.paragraph(
        &format!(
            "O(A) DEVEDOR(A) reconhece e confessa dever ao CREDOR a importância de {} ({}), atualizada até {} com multa e juros de mora, referente às cobranças abaixo:",
            money::format_brl(updated_cents),
            documents::amount_in_words(updated_cents),
            documents::short_date(as_of),
        ),
        body,
    );
    let (x0, x1, x2, x3) = (w.left(), w.left() + 250.0, w.right() - 90.0, w.right());
    let small = Style::regular(9.0);
    w.row(
        &[
            ("Cobrança", x0, Align::Left),
            ("Vencimento", x1, Align::Left),
            ("Valor original", x2, Align::Right),
            ("Valor atualizado", x3, Align::Right),
        ],
        Style::bold(9.0),
    );
    for p in &a.charges {
        let label = p.description.clone().unwrap_or_else(|| p.charge_id.clone());
        let label: String = label.chars().take(48).collect();
        w.row(
            &[
                (&label, x0, Align::Left),
                (&short_iso(&p.due_date), x1, Align::Left),
                (&brl(p.amount), x2, Align::Right),
                (&brl(p.updated_amount), x3, Align::Right),
            ],
            small,
        );
    }
    w.rule();
    w.space(6.0);
    w.line("Cláusula 2ª — Do desconto", bold);
    if a.discount_amount > 0.0 {
        w.paragraph(
            &format!(
                "O CREDOR concede desconto de {}% ({}), que dispensa {} de juros e {} de multa, de modo que o valor do acordo é de {} ({}).",
                a.discount_percentage,
                brl(a.discount_amount),
                brl(a.interest_waived),
                brl(a.fine_waived),
                money::format_brl(total_cents),
                documents::amount_in_words(total_cents),
            ),
            body,
        );
    } else {
        w.paragraph(
            &format!(
                "Não há desconto: o valor do acordo é de {} ({}).",
                money::format_brl(total_cents),
                documents::amount_in_words(total_cents)
            ),
            body,
        );
    }
    w.space(6.0);
    w.line("Cláusula 3ª — Do pagamento", bold);
    let method = match a.payment_method.as_str() {
        "pix" => "Pix",
        "bolepix" => "boleto bancário com QR Code Pix",
        _ => "boleto bancário",
    };
    w.paragraph(
        &format!(
            "O valor do acordo será pago por {method}, conforme o plano abaixo. Vencimentos em dia não útil passam ao dia útil seguinte."
        ),
        body,
    );
    w.row(
        &[
            ("Nº", x0, Align::Left),
            ("Parcela", x0 + 30.0, Align::Left),
            ("Vencimento", x1, Align::Left),
            ("Valor", x3, Align::Right),
        ],
        Style::bold(9.0),
    );
    for i in &a.installments {
        let kind = if i.kind == "down_payment" {
            "Entrada"
        } else {
            "Parcela"
        };
        w.row(
            &[
                (&i.number.to_string(), x0, Align::Left),
                (kind, x0 + 30.0, Align::Left),
                (&short_iso(&i.due_date), x1, Align::Left),
                (&brl(i.amount), x3, Align::Right),
            ],
            small,
        );
    }
    w.rule();
    w.space(6.0);
    w.line("Cláusula 4ª — Do inadimplemento", bold);
    w.paragraph(
        &format!(
            "O atraso de qualquer parcela por mais de {} dias rompe este acordo: as parcelas restantes serão canceladas e o saldo devedor, deduzidos os valores pagos, voltará a ser cobrado.",
            a.break_after_days
        ),
        body,
    );
    w.space(6.0);
    w.line("Cláusula 5ª — Dos cadastros de proteção ao crédito", bold);
    w.paragraph(
        "Com o aceite deste acordo, o CREDOR solicitará a exclusão dos registros relativos às cobranças renegociadas em cadastros de proteção ao crédito em até 5 (cinco) dias úteis (Súmula 548 do STJ).",
        body,
    );
    w.space(6.0);
    w.line("Cláusula 6ª — Da quitação", bold);
    w.paragraph(
        "Pagas todas as parcelas, o CREDOR dará ao(à) DEVEDOR(A) plena quitação das cobranças renegociadas (Código Civil, arts. 319 e 320). Este termo, assinado pelo(a) DEVEDOR(A) e por duas testemunhas, constitui título executivo extrajudicial (Código de Processo Civil, art. 784, III).",
        body,
    );
    w.space(10.0);
    if let (Some(at), Some(by)) = (&a.accepted_at, &a.accepted_by) {
        let who = if by == "debtor" {
            "pelo(a) DEVEDOR(A)"
        } else {
            "pelo CREDOR, em nome do(a) DEVEDOR(A)"
        };
        w.paragraph(
            &format!(
                "Acordo aceito em {} {who}.",
                ts_date(at).map(documents::short_date).unwrap_or_default()
            ),
            body,
        );
    } else {
        w.paragraph(
            &format!(
                "Proposta válida até {}.",
                ts_date(&a.expires_at)
                    .map(documents::short_date)
                    .unwrap_or_default()
            ),
            body,
        );
    }
    w.space(10.0);
    w.line(
        &format!(
            "{}, {}.",
            if debtor.address.city.trim().is_empty() {
                "São Paulo"
            } else {
                debtor.address.city.as_str()
            },
            documents::long_date(date)
        ),
        body,
    );
    w.space(36.0);
    w.line("________________________________________", body);
    w.line(&creditor.name, bold);
    w.space(28.0);
    w.line("________________________________________", body);
    w.line(&debtor_party.name, bold);
    w.space(28.0);
    w.row(
        &[
            ("________________________", x0, Align::Left),
            ("________________________", x1, Align::Left),
        ],
        body,
    );
    w.row(
        &[
            ("Testemunha 1", x0, Align::Left),
            ("Testemunha 2", x1, Align::Left),
        ],
        small,
    );
    w.finish()
}

pub(super) const PAGE_W: f32 = 595.0;
pub(super) const PAGE_H: f32 = 842.0;
pub(super) const MARGIN: f32 = 56.0;
pub(super) const BOTTOM: f32 = 72.0;

/// A page-layout writer like [`documents::Writer`], plus a diagonal watermark drawn
/// under the text of every page.
pub(super) struct TermWriter {
    pub(super) title: String,
    pub(super) date: NaiveDate,
    pub(super) watermark: Option<&'static str>,
    pub(super) pages: Vec<pdf_writer::Content>,
    pub(super) y: f32,
}

impl TermWriter {
    fn new(title: &str, date: NaiveDate, watermark: Option<&'static str>) -> Self {
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

    fn new_page(&mut self) {
        let mut c = pdf_writer::Content::new();
        if let Some(text) = self.watermark {
            let style = Style::bold(54.0);
            let bytes = documents::encode(text);
            let (sin, cos) = std::f32::consts::FRAC_PI_4.sin_cos();
            let width = documents::text_width(text, style);
            let (cx, cy) = (PAGE_W / 2.0, PAGE_H / 2.0);
            let x = cx - cos * width / 2.0;
            let y = cy - sin * width / 2.0;
            c.save_state();
            c.set_fill_gray(0.82);
            c.begin_text();
            c.set_font(pdf_writer::Name(b"F2"), style.size);
            c.set_text_matrix([cos, sin, -sin, cos, x, y]);
            c.show(pdf_writer::Str(&bytes));
            c.end_text();
            c.restore_state();
        }
        self.pages.push(c);
        self.y = PAGE_H - MARGIN;
    }

    fn left(&self) -> f32 {
        MARGIN
    }

    fn right(&self) -> f32 {
        PAGE_W - MARGIN
    }

    fn reserve(&mut self, h: f32) {
        if self.y - h < BOTTOM {
            self.new_page();
        }
    }

    fn space(&mut self, h: f32) {
        self.y -= h;
    }

    fn show(&mut self, x: f32, y: f32, text: &str, style: Style) {
        let font = if style.bold { b"F2" } else { b"F1" };
        let bytes = documents::encode(text);
        let last = self.pages.len() - 1;
        let c = &mut self.pages[last];
        c.begin_text();
        c.set_font(pdf_writer::Name(font), style.size);
        c.next_line(x, y);
        c.show(pdf_writer::Str(&bytes));
        c.end_text();
    }

    fn line(&mut self, text: &str, style: Style) {
        let h = style.size * 1.45;
        self.reserve(h);
        self.y -= style.size;
        let y = self.y;
        self.show(MARGIN, y, text, style);
        self.y -= h - style.size;
    }

    fn centered(&mut self, text: &str, style: Style) {
        let h = style.size * 1.45;
        self.reserve(h);
        self.y -= style.size;
        let x = (PAGE_W - documents::text_width(text, style)) / 2.0;
        let y = self.y;
        self.show(x, y, text, style);
        self.y -= h - style.size;
    }

    fn paragraph(&mut self, text: &str, style: Style) {
        for l in documents::wrap(text, style, PAGE_W - 2.0 * MARGIN) {
            self.line(&l, style);
        }
    }

    fn row(&mut self, cells: &[(&str, f32, Align)], style: Style) {
        let h = style.size * 1.5;
        self.reserve(h);
        self.y -= style.size;
        let y = self.y;
        for (text, x, align) in cells {
            let x = match align {
                Align::Left => *x,
                Align::Right => x - documents::text_width(text, style),
            };
            self.show(x, y, text, style);
        }
        self.y -= h - style.size;
    }

    fn rule(&mut self) {
        self.reserve(6.0);
        self.y -= 3.0;
        let y = self.y;
        let last = self.pages.len() - 1;
        let c = &mut self.pages[last];
        c.set_line_width(0.5);
        c.move_to(MARGIN, y);
        c.line_to(PAGE_W - MARGIN, y);
        c.stroke();
        self.y -= 3.0;
    }

    fn finish(self) -> Vec<u8> {
        use chrono::Datelike;
        use pdf_writer::{Date, Finish, Name, Pdf, Rect, Ref, Str, TextStr};
        use sha2::{Digest, Sha256};
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
        let page_ids: Vec<Ref> = (0..n)
            .map(|i| Ref::new(first + 2 * i32::try_from(i).unwrap_or_default()))
            .collect();
        pdf.pages(tree)
            .kids(page_ids.iter().copied())
            .count(i32::try_from(n).unwrap_or_default());
        let mut digest = Sha256::new();
        digest.update(self.title.as_bytes());
        for (i, mut content) in self.pages.into_iter().enumerate() {
            let footer = format!("{} — página {} de {n}", self.title, i + 1);
            let style = Style::regular(8.0);
            let bytes = documents::encode(&footer);
            content.begin_text();
            content.set_font(Name(b"F1"), style.size);
            content.next_line(
                PAGE_W - MARGIN - documents::text_width(&footer, style),
                MARGIN - 20.0,
            );
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
            .month(u8::try_from(self.date.month()).unwrap_or(1))
            .day(u8::try_from(self.date.day()).unwrap_or(1))
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
