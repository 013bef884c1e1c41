//! Running a case through a transport: the harness today, socket adapters later.

use dunning_core::Load;
use dunning_core::dispatch::Dispatch;
use dunning_harness::{Harness, Split};
use serde_json::Value;

use crate::expect::HttpResponse;
use crate::fixture::{Case, build_request};

/// Something that carries one request's bytes to a server and brings the answer back.
pub trait Transport {
    /// Sends `raw` on a new connection; returns every byte the server wrote back.
    fn send(&mut self, raw: &[u8]) -> Vec<u8>;

    /// Moves the server's clock forward; `Err` when this transport cannot.
    fn advance(&mut self, ms: u64) -> Result<(), String> {
        let _ = ms;
        Err("this transport has no controllable clock".into())
    }

    /// Sets the load reported with the next requests; `Err` when this transport cannot.
    fn set_load(&mut self, load: Load) -> Result<(), String> {
        match load {
            Load::Normal => Ok(()),
            _ => Err("this transport cannot simulate load".into()),
        }
    }
}

/// A plain function as a transport (e.g. a loopback socket client); no clock control.
pub struct FnTransport<F>(pub F);

impl<F: FnMut(&[u8]) -> Vec<u8>> Transport for FnTransport<F> {
    fn send(&mut self, raw: &[u8]) -> Vec<u8> {
        (self.0)(raw)
    }
}

/// The in-memory harness, delivering the bytes as `split` says.
pub struct HarnessTransport<D: Dispatch> {
    /// The harness.
    pub harness: Harness<D>,
    /// How the bytes are delivered.
    pub split: Split,
}

impl<D: Dispatch> Transport for HarnessTransport<D> {
    fn send(&mut self, raw: &[u8]) -> Vec<u8> {
        self.harness.send_split(raw, self.split)
    }

    fn advance(&mut self, ms: u64) -> Result<(), String> {
        self.harness.advance(ms);
        Ok(())
    }

    fn set_load(&mut self, load: Load) -> Result<(), String> {
        self.harness.set_load(load);
        Ok(())
    }
}

/// Whether a case needs more than bytes in, bytes out (a clock or a simulated load).
pub fn needs_control(case: &Case) -> bool {
    case.steps
        .iter()
        .any(|s| s.advance_ms > 0 || s.load != Load::Normal)
}

/// Runs every step of `case` and its checks; returns the raw response bytes of each step,
/// or what failed.
pub fn run_case(case: &Case, transport: &mut dyn Transport) -> Result<Vec<Vec<u8>>, String> {
    run(case, transport, true)
}

/// Sends every step of `case` (filling in each template from the previous answer) without
/// checking the answers; returns the raw response bytes of each step.
pub fn replay(case: &Case, transport: &mut dyn Transport) -> Result<Vec<Vec<u8>>, String> {
    run(case, transport, false)
}

fn run(case: &Case, transport: &mut dyn Transport, check: bool) -> Result<Vec<Vec<u8>>, String> {
    let mut earlier: Vec<Option<Value>> = Vec::new();
    let mut raws = Vec::new();
    for (i, step) in case.steps.iter().enumerate() {
        let n = i + 1;
        if step.advance_ms > 0 {
            transport
                .advance(step.advance_ms)
                .map_err(|e| format!("step {n}: {e}"))?;
        }
        transport
            .set_load(step.load)
            .map_err(|e| format!("step {n}: {e}"))?;
        let req = build_request(step, &earlier).map_err(|e| format!("step {n}: {e}"))?;
        let raw = transport.send(&req);
        let resp = match HttpResponse::parse(&raw) {
            Ok(r) => r,
            Err(_) if !check => {
                raws.push(raw);
                earlier.push(None);
                continue;
            }
            Err(e) => {
                return Err(format!(
                    "step {n}: {e}\n--- response ---\n{}",
                    excerpt(&raw)
                ));
            }
        };
        let json = resp.json();
        let failures: Vec<String> = step
            .checks
            .iter()
            .filter(|_| check)
            .filter_map(|c| resp.check(c, json.as_ref()).err())
            .collect();
        if !failures.is_empty() {
            return Err(format!(
                "step {n}:\n  - {}\n--- response ---\n{}",
                failures.join("\n  - "),
                excerpt(&raw)
            ));
        }
        earlier.push(json);
        raws.push(raw);
    }
    Ok(raws)
}

/// The response for a failure message, cut at 4 KB.
fn excerpt(raw: &[u8]) -> String {
    let text = String::from_utf8_lossy(&raw[..raw.len().min(4096)]).into_owned();
    if raw.len() > 4096 {
        format!("{text}\n[... {} more bytes]", raw.len() - 4096)
    } else {
        text
    }
}
