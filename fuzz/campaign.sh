#!/usr/bin/env bash
# One fuzzing campaign, bounded by CPU time rather than wall time (the machine is shared,
# so wall time says little): `fuzz/campaign.sh <target> <cpu-seconds> [libFuzzer flags...]`.
#
# Builds the target (`cargo +nightly fuzz build`), then runs its binary at nice $NICE (19) on the
# committed corpus (fuzz/corpus/<target>/, which grows) with a 2 GB RSS limit and
# libFuzzer's final stats. The script polls the fuzzer's user+system CPU time in
# /proc/<pid>/stat and sends SIGINT once it reaches <cpu-seconds>; libFuzzer then prints
# its final stats and exits. Logs to fuzz/logs/<target>-<UTC time>.log (git-ignored); the
# last lines of the log say the CPU seconds really used.
set -euo pipefail
cd "$(dirname "$0")"
target=$1 budget=$2
shift 2
mkdir -p logs "corpus/$target" "artifacts/$target"
log="logs/$target-$(date -u +%Y%m%dT%H%M%SZ).log"
cargo +nightly fuzz build "$target" >/dev/null 2>&1
bin=target/x86_64-unknown-linux-gnu/release/$target
echo "corpus before: $(ls "corpus/$target" | wc -l) inputs" | tee "$log"
nice -n "${NICE:-19}" "$bin" "corpus/$target" -artifact_prefix="artifacts/$target/" \
  -rss_limit_mb=2048 -print_final_stats=1 "$@" >>"$log" 2>&1 &
pid=$!
tick=$(getconf CLK_TCK)
cpu=0
while kill -0 "$pid" 2>/dev/null; do
  if stat=$(cat "/proc/$pid/stat" 2>/dev/null); then
    # Fields 14 and 15 (utime, stime) after the parenthesised command name.
    read -r utime stime < <(echo "${stat##*) }" | awk '{print $12, $13}')
    cpu=$(( (utime + stime) / tick ))
    if (( cpu >= budget )); then kill -INT "$pid"; fi
  fi
  sleep 5
done
wait "$pid" || echo "exit $?" >>"$log"
echo "cpu seconds: $cpu" >>"$log"
echo "corpus after: $(ls "corpus/$target" | wc -l) inputs" | tee -a "$log"
grep -E "stat::number_of_executed_units|stat::new_units_added|stat::peak_rss|^exit|cpu seconds|SUMMARY|panicked|deadly signal" "$log" || true
grep -E "^#[0-9]+" "$log" | tail -1
