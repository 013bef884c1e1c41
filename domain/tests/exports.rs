//! Exports: lifecycle, the CSV file, validation, isolation, idempotency.

use dunning_core::{Output, Principal, ToolErrorCode};
use dunning_domain::ops::exports;
use dunning_domain::ops::webhooks;
use dunning_domain::store::{self, Kind};
use dunning_domain::testing::{Bed, id};
use serde_json::{Value, json};

fn process(bed: &Bed, who: &Principal) -> u32 {
    webhooks::with_system_op(
        &bed.domain,
        &who.organization,
        bed.now,
        None,
        exports::process,
    )
    .expect("process")
}

fn debtor(bed: &mut Bed, who: &Principal, doc: &str, name: &str) -> String {
    id(&bed.ok(
        who,
        "dunning_debtors_create",
        json!({"cnpj_cpf": doc, "name": name,
               "address": {"city": "São Paulo", "state": "SP", "zipcode": "01001000"}}),
    ))
}

fn download(bed: &mut Bed, who: &Principal, export_id: &str) -> (String, Value) {
    match bed
        .call(who, "dunning_exports_download", json!({"id": export_id}))
        .expect("download")
    {
        Output::File(f) => {
            assert_eq!(f.content_type, "text/csv");
            assert_eq!(f.download_path, format!("/v1/exports/{export_id}/download"));
            let descriptor = Output::File(f.clone()).tool_value();
            (String::from_utf8(f.bytes).expect("UTF-8"), descriptor)
        }
        other => panic!("not a file: {other:?}"),
    }
}

fn millis(ts: &Value) -> i64 {
    chrono::DateTime::parse_from_rfc3339(ts.as_str().unwrap())
        .unwrap()
        .timestamp_millis()
}

#[test]
fn export_lifecycle_queued_processing_processed_expired() {
    let mut bed = Bed::new();
    let ana = bed.ana();
    debtor(&mut bed, &ana, "529.982.247-25", "Maria Silva");
    debtor(&mut bed, &ana, "11.222.333/0001-81", "ACME Ltda");
    let out = bed
        .call(
            &ana,
            "dunning_exports_create",
            json!({"resource": "debtors"}),
        )
        .unwrap();
    let Output::Json { status, body } = out else {
        panic!("json")
    };
    assert_eq!(status, 202, "accepted: processed later");
    let e = body.into_value();
    assert_eq!(e["status"], "queued");
    assert_eq!(e["format"], "csv");
    assert_eq!(e["requested_by"], "ana@demo.example");
    let eid = id(&e);
    let err = bed.err(&ana, "dunning_exports_download", json!({"id": eid}));
    assert_eq!(err.code, ToolErrorCode::Conflict);
    assert!(err.message.contains("queued"), "{}", err.message);

    assert_eq!(process(&bed, &ana), 1);
    let e = bed.ok(&ana, "dunning_exports_get", json!({"id": eid}));
    assert_eq!(e["status"], "processing");
    let err = bed.err(&ana, "dunning_exports_download", json!({"id": eid}));
    assert!(err.message.contains("processing"), "{}", err.message);

    bed.now = bed.now.plus_millis(30_000);
    assert_eq!(process(&bed, &ana), 1);
    let e = bed.ok(&ana, "dunning_exports_get", json!({"id": eid}));
    assert_eq!(e["status"], "processed");
    assert_eq!(e["row_count"], 2);
    assert!(e.get("csv").is_none(), "the file is not in the JSON");
    let name = e["file_name"].as_str().unwrap();
    assert!(
        name.starts_with("debtors-") && name.ends_with(".csv"),
        "{name}"
    );
    assert_eq!(
        millis(&e["download_expires_at"]) - millis(&e["processed_at"]),
        24 * 3600 * 1000
    );
    let (csv, descriptor) = download(&mut bed, &ana, &eid);
    assert_eq!(e["file_size"], csv.len());
    assert_eq!(descriptor["byte_size"], csv.len());
    assert_eq!(descriptor["content_type"], "text/csv");
    assert_eq!(csv.lines().count(), 3, "header and two rows");
    assert_eq!(process(&bed, &ana), 0, "nothing to do");

    // Past the download window the file is refused, then dropped by the worker.
    bed.advance_days(1);
    let err = bed.err(&ana, "dunning_exports_download", json!({"id": eid}));
    assert_eq!(err.code, ToolErrorCode::Conflict);
    assert!(err.message.contains("expired"), "{}", err.message);
    assert_eq!(process(&bed, &ana), 1);
    let e = bed.ok(&ana, "dunning_exports_get", json!({"id": eid}));
    assert_eq!(e["status"], "expired");
    assert!(e["expired_at"].is_string());
    let err = bed.err(&ana, "dunning_exports_download", json!({"id": eid}));
    assert!(err.message.contains("expired"), "{}", err.message);
    let stored = store::read(bed.domain.store(), |tx| {
        Ok(tx.get(Kind::Export, &ana.organization, &eid)?)
    })
    .unwrap()
    .unwrap();
    assert!(stored.get("csv").is_none(), "the file is dropped");

    let codes: Vec<String> = bed.ok(
        &ana,
        "dunning_events_list",
        json!({"resource_id": eid, "sort_order": "asc"}),
    )["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["code"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(
        codes,
        [
            "export.created",
            "export.processing",
            "export.processed",
            "export.expired"
        ]
    );
}

#[test]
fn export_csv_is_rfc4180() {
    let mut bed = Bed::new();
    let ana = bed.ana();
    let maria = debtor(&mut bed, &ana, "529.982.247-25", "Silva, \"Maria\"\nJosé");
    debtor(
        &mut bed,
        &ana,
        "11.222.333/0001-81",
        "=HYPERLINK(\"http://x\")",
    );
    let charge = bed.ok(
        &ana,
        "dunning_charges_create",
        json!({"debtor_id": maria, "amount": 1234.5, "due_date": "2026-12-20",
               "payment_method": "boleto", "description": "Mensalidade; dezembro",
               "tags": ["a", "b"]}),
    );
    let e = bed.ok(
        &ana,
        "dunning_exports_create",
        json!({"resource": "debtors"}),
    );
    let c = bed.ok(
        &ana,
        "dunning_exports_create",
        json!({"resource": "charges", "filters": {"debtor_id": maria}}),
    );
    process(&bed, &ana);
    process(&bed, &ana);

    let (csv, _) = download(&mut bed, &ana, &id(&e));
    assert!(csv.ends_with("\r\n"));
    assert!(
        csv.split("\r\n")
            .next()
            .unwrap()
            .starts_with("id,external_code,person_type,cnpj_cpf,name,"),
        "header row"
    );
    assert!(
        csv.contains("\"Silva, \"\"Maria\"\"\nJosé\""),
        "quoted, quotes doubled"
    );
    assert!(csv.contains("São Paulo"), "UTF-8");
    assert!(
        csv.contains("\"'=HYPERLINK(\"\"http://x\"\")\""),
        "formulas neutralized: {csv}"
    );
    let mut reader = csv::ReaderBuilder::new().from_reader(csv.as_bytes());
    let header = reader.headers().unwrap().clone();
    let rows: Vec<csv::StringRecord> = reader.records().map(Result::unwrap).collect();
    assert_eq!(rows.len(), 2);
    let col = |name: &str| header.iter().position(|h| h == name).unwrap();
    let row = rows
        .iter()
        .find(|r| &r[col("id")] == maria.as_str())
        .unwrap();
    assert_eq!(&row[col("name")], "Silva, \"Maria\"\nJosé");
    assert_eq!(&row[col("address.city")], "São Paulo");
    assert_eq!(&row[col("do_not_contact")], "false");
    assert!(row[col("created_at")].starts_with("2026-12-01T09:00:00"));

    let (csv, _) = download(&mut bed, &ana, &id(&c));
    let mut reader = csv::ReaderBuilder::new().from_reader(csv.as_bytes());
    let header = reader.headers().unwrap().clone();
    let rows: Vec<csv::StringRecord> = reader.records().map(Result::unwrap).collect();
    assert_eq!(rows.len(), 1);
    let col = |name: &str| header.iter().position(|h| h == name).unwrap();
    let row = &rows[0];
    assert_eq!(&row[col("id")], charge["id"].as_str().unwrap());
    assert_eq!(&row[col("amount")], "1234.50", "money with two decimals");
    assert_eq!(&row[col("due_date")], "2026-12-20", "ISO date");
    assert_eq!(&row[col("tags")], "a;b");
    assert_eq!(&row[col("description")], "Mensalidade; dezembro");
    assert_eq!(&row[col("debtor.name")], "Silva, \"Maria\"\nJosé");
    assert_eq!(&row[col("debtor.cnpj_cpf")], "52998224725");
}

#[test]
fn filters_are_those_of_the_list_tool() {
    let mut bed = Bed::new();
    let ana = bed.ana();
    let a = debtor(&mut bed, &ana, "529.982.247-25", "Maria Silva");
    debtor(&mut bed, &ana, "11.222.333/0001-81", "ACME Ltda");
    bed.ok(&ana, "dunning_debtors_archive", json!({"id": a}));
    let e = bed.ok(
        &ana,
        "dunning_exports_create",
        json!({"resource": "debtors", "filters": {"status": "archived", "sort_by": "name"}}),
    );
    process(&bed, &ana);
    process(&bed, &ana);
    let got = bed.ok(&ana, "dunning_exports_get", json!({"id": id(&e)}));
    assert_eq!(got["row_count"], 1);
    assert_eq!(
        got["filters"],
        json!({"status": "archived", "sort_by": "name"})
    );
}

#[test]
fn validation_names_the_field() {
    let mut bed = Bed::new();
    let ana = bed.ana();
    for (args, field) in [
        (json!({"resource": "invoices"}), "resource"),
        (json!({"resource": "debtors", "format": "xlsx"}), "format"),
        (json!({"resource": "debtors", "filters": []}), "filters"),
        (
            json!({"resource": "debtors", "filters": {"colour": "blue"}}),
            "filters.colour",
        ),
        (
            json!({"resource": "debtors", "filters": {"has_overdue": "yes"}}),
            "filters.has_overdue",
        ),
        (
            json!({"resource": "debtors", "filters": {"page": 2}}),
            "filters.page",
        ),
        (
            json!({"resource": "charges", "filters": {"payment_method": "cash"}}),
            "filters.payment_method",
        ),
        (
            json!({"resource": "deliveries", "filters": {"from": "yesterday"}}),
            "filters.from",
        ),
        (json!({"resource": "debtors", "colour": 1}), "colour"),
    ] {
        let e = bed.err(&ana, "dunning_exports_create", args.clone());
        assert_eq!(e.code, ToolErrorCode::Validation, "{args}");
        assert_eq!(e.details[0].field, field, "{args}");
    }
    assert_eq!(
        store::read(bed.domain.store(), |tx| Ok(tx.count(
            Kind::Export,
            &ana.organization,
            &[]
        )?))
        .unwrap(),
        0
    );
}

#[test]
fn processing_failure_marks_the_export_failed() {
    let mut bed = Bed::new();
    let ana = bed.ana();
    let hook = bed.ok(
        &ana,
        "dunning_webhooks_create",
        json!({"url": "https://x.example.com", "events": ["export.failed"]}),
    );
    let e = bed.ok(
        &ana,
        "dunning_exports_create",
        json!({"resource": "deliveries"}),
    );
    let eid = id(&e);
    // Filters that no longer hold when the worker runs.
    store::write(bed.domain.store(), store::WriteScope::All, |tx| {
        let mut doc = tx.get(Kind::Export, &ana.organization, &eid)?.unwrap();
        doc["filters"] = json!({"from": "not-a-date"});
        tx.put(Kind::Export, &ana.organization, &doc)?;
        Ok(())
    })
    .unwrap();
    process(&bed, &ana);
    process(&bed, &ana);
    let got = bed.ok(&ana, "dunning_exports_get", json!({"id": eid}));
    assert_eq!(got["status"], "failed");
    assert!(
        got["error_message"]
            .as_str()
            .unwrap()
            .contains("filters.from")
    );
    assert!(got["failed_at"].is_string());
    let err = bed.err(&ana, "dunning_exports_download", json!({"id": eid}));
    assert_eq!(err.code, ToolErrorCode::Conflict);
    assert!(err.message.contains("failed"), "{}", err.message);
    let ds = bed.ok(
        &ana,
        "dunning_webhook_deliveries_list",
        json!({"id": hook["id"]}),
    );
    assert_eq!(ds["data"][0]["event_code"], "export.failed");
}

#[test]
fn other_organizations_ids_are_not_found() {
    let mut bed = Bed::new();
    let ana = bed.ana();
    let carla = bed.carla();
    let eid = id(&bed.ok(
        &ana,
        "dunning_exports_create",
        json!({"resource": "debtors"}),
    ));
    process(&bed, &ana);
    process(&bed, &ana);
    process(&bed, &carla);
    for tool in ["dunning_exports_get", "dunning_exports_download"] {
        let e = bed.err(&carla, tool, json!({"id": eid}));
        assert_eq!(e.code, ToolErrorCode::NotFound, "{tool}");
    }
    // Another organization's export holds only its own rows.
    debtor(&mut bed, &ana, "529.982.247-25", "Maria Silva");
    let mine = id(&bed.ok(
        &carla,
        "dunning_exports_create",
        json!({"resource": "debtors"}),
    ));
    process(&bed, &carla);
    process(&bed, &carla);
    let got = bed.ok(&carla, "dunning_exports_get", json!({"id": mine}));
    assert_eq!(got["row_count"], 0);
}

#[test]
fn idempotency_key_replays_the_create() {
    let mut bed = Bed::new();
    let ana = bed.ana();
    let args = json!({"resource": "debtors", "idempotency_key": "exp-1"});
    let a = bed.ok(&ana, "dunning_exports_create", args.clone());
    let b = bed.ok(&ana, "dunning_exports_create", args);
    assert_eq!(a, b);
    assert_eq!(
        store::read(bed.domain.store(), |tx| Ok(tx.count(
            Kind::Export,
            &ana.organization,
            &[]
        )?))
        .unwrap(),
        1
    );
    let e = bed.err(
        &ana,
        "dunning_exports_create",
        json!({"resource": "charges", "idempotency_key": "exp-1"}),
    );
    assert_eq!(e.code, ToolErrorCode::IdempotencyConflict);
}

#[test]
fn demo_has_a_webhook_with_deliveries_and_a_processed_export() {
    let mut bed = Bed::demo();
    let ana = bed.ana();
    let hooks = bed.ok(&ana, "dunning_webhooks_list", json!({}));
    assert_eq!(hooks["meta"]["total"], 1);
    let wid = hooks["data"][0]["id"].as_str().unwrap().to_owned();
    let count = |bed: &mut Bed, status: &str| {
        bed.ok(
            &ana,
            "dunning_webhook_deliveries_list",
            json!({"id": wid, "status": status}),
        )["meta"]["total"]
            .as_u64()
            .unwrap()
    };
    assert!(count(&mut bed, "failed") >= 1);
    assert!(count(&mut bed, "delivered") >= 1);
    assert_eq!(count(&mut bed, "pending"), 0);
    let exports = store::read(bed.domain.store(), |tx| {
        Ok(tx.find(Kind::Export, &ana.organization, &store::Query::all())?)
    })
    .unwrap();
    assert!(exports.iter().any(|e| e["status"] == "processed"));
    let processed = exports.iter().find(|e| e["status"] == "processed").unwrap();
    let (csv, _) = download(&mut bed, &ana, processed["id"].as_str().unwrap());
    assert!(csv.starts_with("id,"));
    let carla = bed.carla();
    assert_eq!(
        bed.ok(&carla, "dunning_webhooks_list", json!({}))["meta"]["total"],
        0
    );
}

fn read_resource(
    bed: &Bed,
    who: &Principal,
    template: &str,
    vars: &[(&str, &str)],
) -> Result<Vec<dunning_core::Contents>, dunning_core::ResourceError> {
    use dunning_core::Dispatch;
    let catalog = bed.domain.catalog();
    let t = catalog
        .templates
        .iter()
        .find(|t| t.uri_template == template)
        .expect("template listed");
    let vars: std::collections::BTreeMap<String, String> = vars
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect();
    let mut uri = template.to_owned();
    for (k, v) in &vars {
        uri = uri.replace(&format!("{{{k}}}"), v);
    }
    bed.domain.read_resource(&dunning_core::ResourceRead {
        uri: &uri,
        template: Some(t),
        vars: &vars,
        ctx: dunning_core::Ctx {
            principal: who,
            now: bed.now,
            request_id: "res",
            entropy: &[0; 32],
            ahead: None,
        },
    })
}

#[test]
fn resources_serve_the_csv_and_the_delivery() {
    let mut bed = Bed::new();
    let ana = bed.ana();
    let carla = bed.carla();
    debtor(&mut bed, &ana, "529.982.247-25", "Maria Silva");
    let hook = bed.ok(
        &ana,
        "dunning_webhooks_create",
        json!({"url": "https://x.example.com", "events": ["*"]}),
    );
    let eid = id(&bed.ok(
        &ana,
        "dunning_exports_create",
        json!({"resource": "debtors"}),
    ));
    let tpl = "kobana://dunning/exports/{id}/download";
    assert!(
        read_resource(&bed, &ana, tpl, &[("id", &eid)]).is_err(),
        "not processed yet"
    );
    process(&bed, &ana);
    process(&bed, &ana);
    let (csv, _) = download(&mut bed, &ana, &eid);
    match &read_resource(&bed, &ana, tpl, &[("id", &eid)]).unwrap()[0] {
        dunning_core::Contents::Text { mime_type, text } => {
            assert_eq!(mime_type, "text/csv");
            assert_eq!(text, &csv);
        }
        other => panic!("{other:?}"),
    }
    assert!(read_resource(&bed, &carla, tpl, &[("id", &eid)]).is_err());

    let hid = id(&hook);
    let did = bed.ok(&ana, "dunning_webhook_deliveries_list", json!({"id": hid}))["data"][0]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let tpl = "kobana://dunning/webhooks/{id}/deliveries/{delivery_id}";
    let got = read_resource(&bed, &ana, tpl, &[("id", &hid), ("delivery_id", &did)]).unwrap();
    let dunning_core::Contents::Text { text, .. } = &got[0] else {
        panic!("json")
    };
    let v: Value = serde_json::from_str(text).unwrap();
    assert_eq!(v["event_code"], "export.processed");
    assert!(read_resource(&bed, &carla, tpl, &[("id", &hid), ("delivery_id", &did)]).is_err());
}

#[test]
fn export_csv_in_the_pt_br_dialect_opens_in_a_portuguese_spreadsheet() {
    let mut bed = Bed::new();
    let ana = bed.ana();
    let maria = debtor(&mut bed, &ana, "529.982.247-25", "Maria Silva");
    bed.ok(
        &ana,
        "dunning_charges_create",
        json!({"debtor_id": maria, "amount": 1234.5, "due_date": "2026-12-20",
               "payment_method": "boleto", "description": "Mensalidade; dezembro",
               "fine_percentage": 1.5}),
    );
    let e = bed.ok(
        &ana,
        "dunning_exports_create",
        json!({"resource": "charges", "dialect": "pt-BR"}),
    );
    assert_eq!(e["dialect"], "pt-BR");
    let default = bed.ok(
        &ana,
        "dunning_exports_create",
        json!({"resource": "charges"}),
    );
    assert_eq!(default["dialect"], "rfc4180");
    let err = bed.err(
        &ana,
        "dunning_exports_create",
        json!({"resource": "charges", "dialect": "excel"}),
    );
    assert_eq!(err.code, ToolErrorCode::Validation);
    assert_eq!(err.details[0].field, "dialect");
    process(&bed, &ana);
    process(&bed, &ana);

    let (csv, descriptor) = download(&mut bed, &ana, &id(&e));
    let body = csv
        .strip_prefix('\u{feff}')
        .expect("a UTF-8 byte-order mark");
    assert_eq!(descriptor["byte_size"], csv.len(), "{descriptor}");
    assert!(body.starts_with("id;"), "semicolons: {body}");
    let mut reader = csv::ReaderBuilder::new()
        .delimiter(b';')
        .from_reader(body.as_bytes());
    let header = reader.headers().unwrap().clone();
    let rows: Vec<csv::StringRecord> = reader.records().map(Result::unwrap).collect();
    assert_eq!(rows.len(), 1);
    let col = |name: &str| header.iter().position(|h| h == name).unwrap();
    assert_eq!(&rows[0][col("amount")], "1234,50", "decimal comma");
    assert_eq!(&rows[0][col("fine_percentage")], "1,5");
    assert_eq!(&rows[0][col("due_date")], "2026-12-20", "ISO dates stay");
    assert_eq!(&rows[0][col("description")], "Mensalidade; dezembro");

    let (plain, _) = download(&mut bed, &ana, &id(&default));
    assert!(plain.starts_with("id,"), "the default has no BOM");
}
