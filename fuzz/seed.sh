#!/usr/bin/env bash
# Writes the seed corpora of the six fuzz targets:
#   fuzz/corpus/core_handle/         every request of tests/conformance/**/*.http (escapes
#                                    and substitutions decoded) + hand-made inputs
#   fuzz/corpus/request_state_open/  a real sealed state and near misses
#   fuzz/corpus/codec_decode/        the same fixture requests, as raw bytes (<= 16 KiB)
#   fuzz/corpus/codec_split/         the same, with a leading 0 (no split point)
#   fuzz/corpus/rest_handle/         dunning_core::fuzzing::rest::seeds()
#   fuzz/corpus/jwt_verify/          dunning_core::fuzzing::jwt::seeds()
# The committed corpus is these seeds plus what the campaigns found, minimized with
# `cargo +nightly fuzz cmin` (see fuzz/README.md); re-seeding only adds files.
# The conversion lives in dunning_core::fuzzing::fixture_requests; the writer is the
# ignored test `write_seed_corpus` of core/tests/fuzz_replay.rs.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo test -p dunning-core --test fuzz_replay -- --ignored --exact write_seed_corpus
for t in core_handle request_state_open codec_decode codec_split rest_handle jwt_verify; do
  echo "$t: $(ls fuzz/corpus/$t | wc -l) inputs"
done
