//! One test per conformance case (`<section>/<case>`), run through the in-memory harness;
//! each case runs again with the bytes delivered in seeded random chunks (`<case>#split`),
//! which must not change a byte of the answers.
//!
//! Cases listed in `conformance/known-failures.txt` are expected to fail (the server does
//! not meet their spec-true expectation yet): such a case passes while it fails, and fails
//! once it passes, so the list cannot go stale. `DUNNING_STRICT_CONFORMANCE=1` ignores the
//! list and reports every case as it is.

use std::collections::BTreeMap;

use dunning_harness::{Harness, Split};
use dunning_tests::fixture::{Case, KNOWN_FAILURES, known_failures, load_dir};
use dunning_tests::runner::{HarnessTransport, replay, run_case};
use dunning_tests::{TestDomain, conformance_dir, test_server};
use libtest_mimic::{Arguments, Failed, Trial};

/// The suite must keep at least this many cases.
const MIN_CASES: usize = 120;

fn harness(split: Split) -> HarnessTransport<TestDomain> {
    HarnessTransport {
        harness: Harness::new(test_server()),
        split,
    }
}

/// FNV-1a of the case name: each case gets its own, stable, chunking.
fn seed(name: &str) -> u64 {
    name.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3)
    })
}

fn check(case: &Case, known: Option<&str>) -> Result<(), Failed> {
    match (run_case(case, &mut harness(Split::Whole)), known) {
        (Ok(_), None) => Ok(()),
        (Err(e), None) => Err(e.into()),
        (Err(_), Some(_)) => Ok(()),
        (Ok(_), Some(reason)) => Err(format!(
            "listed in {KNOWN_FAILURES} ({reason}) but passes now: remove its line"
        )
        .into()),
    }
}

fn trials(cases: Vec<Case>, known: BTreeMap<String, String>) -> Vec<Trial> {
    let count = cases.len();
    let mut out = vec![Trial::test("count/at_least_120_cases", move || {
        if count >= MIN_CASES {
            Ok(())
        } else {
            Err(format!("{count} cases, want at least {MIN_CASES}").into())
        }
    })];
    let names: Vec<String> = cases.iter().map(|c| c.name.clone()).collect();
    let listed: Vec<String> = known.keys().cloned().collect();
    out.push(Trial::test("count/known_failures_name_cases", move || {
        let unknown: Vec<&String> = listed.iter().filter(|k| !names.contains(k)).collect();
        if unknown.is_empty() {
            Ok(())
        } else {
            Err(format!("{KNOWN_FAILURES} lists no such case: {unknown:?}").into())
        }
    }));
    for case in cases {
        let reason = known.get(&case.name).cloned();
        let split_case = case.clone();
        out.push(Trial::test(case.name.clone(), move || {
            check(&case, reason.as_deref())
        }));
        out.push(Trial::test(
            format!("{}#split", split_case.name),
            move || {
                let case = split_case;
                let whole = replay(&case, &mut harness(Split::Whole))?;
                let split = replay(&case, &mut harness(Split::Random(seed(&case.name))))?;
                if whole == split {
                    Ok(())
                } else {
                    Err("answers differ when the request arrives in pieces".into())
                }
            },
        ));
    }
    out
}

fn main() {
    let args = Arguments::from_args();
    let root = conformance_dir();
    let strict = std::env::var_os("DUNNING_STRICT_CONFORMANCE").is_some_and(|v| v != "0");
    let loaded = load_dir(&root).and_then(|cases| {
        let known = if strict {
            BTreeMap::new()
        } else {
            known_failures(&root)?
        };
        Ok((cases, known))
    });
    let (cases, known) = match loaded {
        Ok(x) => x,
        Err(e) => {
            eprintln!("cannot load the conformance cases: {e}");
            std::process::exit(2);
        }
    };
    libtest_mimic::run(&args, trials(cases, known)).exit();
}
