#![no_main]
// Arbitrary text as a sealed `requestState`: nothing forged may open.
libfuzzer_sys::fuzz_target!(|data: &[u8]| dunning_core::fuzzing::request_state(data));
