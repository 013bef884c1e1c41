#!/usr/bin/env bash
# Writes the seed corpora of both fuzz targets:
#   fuzz/corpus/core_handle/         every request of tests/conformance/**/*.http (escapes
#                                    and substitutions decoded) + hand-made inputs
#   fuzz/corpus/request_state_open/  a real sealed state and near misses
# The conversion lives in dunning_core::fuzzing::fixture_requests; the writer is the
# ignored test `write_seed_corpus` of core/tests/fuzz_replay.rs.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo test -p dunning-core --test fuzz_replay -- --ignored --exact write_seed_corpus
echo "core_handle seeds: $(ls fuzz/corpus/core_handle | wc -l)"
echo "request_state_open seeds: $(ls fuzz/corpus/request_state_open | wc -l)"
