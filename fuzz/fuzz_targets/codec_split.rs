#![no_main]
// The same bytes whole, split at fuzzer-chosen points, and one byte at a time: the codec
// must yield identical requests, responses and closes (transports/http1/src/fuzzing.rs).
libfuzzer_sys::fuzz_target!(|data: &[u8]| dunning_http1::fuzzing::split(data));
