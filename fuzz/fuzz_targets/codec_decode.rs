#![no_main]
// Arbitrary bytes through the HTTP/1.1 codec, then EOF (see transports/http1/src/fuzzing.rs):
// never a panic, always one final Close, every error response followed by Close.
libfuzzer_sys::fuzz_target!(|data: &[u8]| dunning_http1::fuzzing::decode(data));
