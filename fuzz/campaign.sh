#!/usr/bin/env bash
# One fuzzing campaign: `fuzz/campaign.sh <target> <seconds> [libFuzzer flags...]`.
# Runs the target at nice 19 on its committed corpus (fuzz/corpus/<target>/, which grows),
# with a 2 GB RSS limit and libFuzzer's final stats, under /usr/bin/time so the log ends
# with the CPU time really used. Logs to fuzz/logs/<target>-<UTC time>.log (git-ignored).
set -euo pipefail
cd "$(dirname "$0")"
target=$1 secs=$2
shift 2
mkdir -p logs "corpus/$target"
log="logs/$target-$(date -u +%Y%m%dT%H%M%SZ).log"
echo "corpus before: $(ls "corpus/$target" | wc -l) inputs" | tee "$log"
/usr/bin/time -v nice -n 19 cargo +nightly fuzz run "$target" "corpus/$target" -- \
  -max_total_time="$secs" -rss_limit_mb=2048 -print_final_stats=1 "$@" >>"$log" 2>&1 || echo "exit $?" >>"$log"
echo "corpus after: $(ls "corpus/$target" | wc -l) inputs" | tee -a "$log"
grep -E "stat::number_of_executed_units|stat::new_units_added|User time|System time|Elapsed|^exit|Done|SUMMARY|panicked" "$log" || true
grep -E "^#[0-9]+" "$log" | tail -1
