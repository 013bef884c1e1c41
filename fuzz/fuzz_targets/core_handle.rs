#![no_main]
// Raw-ish HTTP bytes through `Server::handle` of the test server (see core/src/fuzzing.rs).
libfuzzer_sys::fuzz_target!(|data: &[u8]| dunning_core::fuzzing::handle(data));
