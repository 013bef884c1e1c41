//! The settlement letter (carta de quitação, Civil Code arts. 319–320).

use chrono::NaiveDate;

use super::{Party, Style, Writer, amount_in_words, long_date, short_date};
use crate::brazil::money::Money;

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
    pub original: Money,
    /// Amount received (centavos).
    pub paid: Money,
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

pub(super) fn via_text(via: &str) -> &'static str {
    match via {
        "boleto" => "boleto bancário",
        "pix" => "Pix",
        _ => "pagamento registrado pelo credor",
    }
}

/// The settlement letter (carta de quitação, Código Civil arts. 319–320) as a PDF.
pub fn settlement_letter(l: &SettlementLetter) -> Vec<u8> {
    let mut w = Writer::new("Carta de quitação", l.paid_on);
    w.party(&l.creditor, Style::bold(12.0));
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
    let amount = l.paid.to_string();
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
    let words = amount_in_words(l.paid);
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
    if l.original != l.paid {
        w.space(8.0);
        w.paragraph(
            &format!(
                "Valor original da cobrança: {}; valor recebido, com os encargos ou descontos aplicáveis na data do pagamento: {amount}.",
                l.original
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
    w.party(&l.creditor, Style::bold(11.0));
    w.finish()
}
