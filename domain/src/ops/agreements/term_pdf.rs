//! The agreement term (termo de acordo) as a PDF, with a draft watermark until it is
//! accepted.

use chrono::NaiveDate;
use dunning_core::{File, Output};

use super::{Agreement, DRAFT_WATERMARK, load_agreement, sync_installments};
use crate::args::ById;
use crate::brazil::calendar;
use crate::brazil::money::Money;
use crate::documents;
use crate::documents::{Align, Party, Style};
use crate::error::DomainError;
use crate::op::Op;
use crate::ops::debtors::Debtor;
use crate::store::{Kind, must};

pub(super) fn term(op: &mut Op<'_>) -> Result<Output, DomainError> {
    let ById { id } = op.args()?;
    let mut a = load_agreement(op, &id)?;
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
    let mut w = documents::Writer::watermarked(
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
    let as_of = ts_date(&a.created_at).unwrap_or(date);
    w.line("Cláusula 1ª — Da confissão de dívida", bold);
    w.paragraph(
        &format!(
            "O(A) DEVEDOR(A) reconhece e confessa dever ao CREDOR a importância de {} ({}), atualizada até {} com multa e juros de mora, referente às cobranças abaixo:",
            a.updated_amount,
            documents::amount_in_words(a.updated_amount),
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
                (&p.amount.to_string(), x2, Align::Right),
                (&p.updated_amount.to_string(), x3, Align::Right),
            ],
            small,
        );
    }
    w.rule();
    w.space(6.0);
    w.line("Cláusula 2ª — Do desconto", bold);
    if a.discount_amount > Money::ZERO {
        w.paragraph(
            &format!(
                "O CREDOR concede desconto de {}% ({}), que dispensa {} de juros e {} de multa, de modo que o valor do acordo é de {} ({}).",
                a.discount_percentage,
                a.discount_amount,
                a.interest_waived,
                a.fine_waived,
                a.total_amount,
                documents::amount_in_words(a.total_amount),
            ),
            body,
        );
    } else {
        w.paragraph(
            &format!(
                "Não há desconto: o valor do acordo é de {} ({}).",
                a.total_amount,
                documents::amount_in_words(a.total_amount)
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
                (&i.amount.to_string(), x3, Align::Right),
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
