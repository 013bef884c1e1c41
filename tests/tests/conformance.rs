//! One test per conformance case (`<section>/<case>`), run through the in-memory harness;
//! each case runs again with the bytes delivered in seeded random chunks (`<case>#split`),
//! which must not change a byte of the answers.

use dunning_harness::{Harness, Split};
use dunning_tests::fixture::{Case, load_dir};
use dunning_tests::runner::{HarnessTransport, replay, run_case};
use dunning_tests::{conformance_dir, test_server};
use libtest_mimic::{Arguments, Failed, Trial};

/// The suite must keep at least this many cases.
const MIN_CASES: usize = 120;

fn harness(split: Split) -> HarnessTransport<dunning_tests::TestDomain> {
    HarnessTransport {
        harness: Harness::new(test_server()),
        split,
    }
}

fn seed(name: &str) -> u64 {
    name.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3)
    })
}

fn trials(cases: Vec<Case>) -> Vec<Trial> {
    let count = cases.len();
    let mut out = vec![Trial::test("count/at_least_120_cases", move || {
        if count >= MIN_CASES {
            Ok(())
        } else {
            Err(format!("{count} cases, want at least {MIN_CASES}").into())
        }
    })];
    for case in cases {
        let split_case = case.clone();
        out.push(Trial::test(case.name.clone(), move || {
            run_case(&case, &mut harness(Split::Whole))
                .map(drop)
                .map_err(Failed::from)
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
    let cases = match load_dir(&conformance_dir()) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("cannot load the conformance cases: {e}");
            std::process::exit(2);
        }
    };
    libtest_mimic::run(&args, trials(cases)).exit();
}
