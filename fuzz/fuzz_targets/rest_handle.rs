#![no_main]
// Selector bytes and raw-ish HTTP made into a `/v1` request through `Server::handle` of the
// test server (see core/src/fuzzing/rest.rs): documented statuses and error shapes only.
libfuzzer_sys::fuzz_target!(|data: &[u8]| dunning_core::fuzzing::rest_handle(data));
