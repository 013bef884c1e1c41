#![no_main]
// Bytes as a compact JWT (raw, or JSON the harness signs) through `jwt::verify` with a fixed
// key set (see core/src/fuzzing/jwt.rs): nothing verifies unless the harness signed it.
libfuzzer_sys::fuzz_target!(|data: &[u8]| dunning_core::fuzzing::jwt_verify(data));
