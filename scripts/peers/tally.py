#!/usr/bin/env python3
"""Counts one conformance-suite run (the `checks.json` files of its `-o` directory)
against a checked-in expected-failures baseline, and prints `LABEL: N passed, M failed`.

A check passes on SUCCESS. A FAILURE or WARNING is *expected* when the baseline names its
scenario or `scenario:check-id`, else it *fails*. A baseline entry of a scenario that ran
and no longer fails anywhere it names is *stale* and fails too (as the suite says). With
--requirements, only the scenarios that file scores count (the suite runs the others,
e.g. the `tasks-*` extension, for visibility only).

Every baseline entry must be preceded by a `#` comment saying why; an entry without one
is refused. Standard library only (runs on the machine's python3).
"""

import argparse
import glob
import json
import os
import re
import sys

DIR_RE = re.compile(r"^server-(.+)-\d{4}-\d{2}-\d{2}T[\d-]+Z$")


def read_list(path, section):
    """(entry, reason) pairs of the `section:` list of a small YAML file."""
    out, reason, inside = [], [], False
    with open(path, encoding="utf-8") as f:
        for raw in f:
            line = raw.rstrip("\n")
            if not line.strip():
                continue
            if re.match(r"^[A-Za-z_]+:", line):
                inside = line.split(":")[0] == section and line.split(":", 1)[1].strip() in ("", "[]")
                reason = []
                continue
            if not inside:
                continue
            stripped = line.strip()
            if stripped.startswith("#"):
                reason.append(stripped.lstrip("#").strip())
                continue
            m = re.match(r"^-\s*(?:scenario:\s*)?([^\s#]+)", stripped)
            if m:
                out.append((m.group(1), " ".join(reason)))
                reason = []
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dir", required=True)
    ap.add_argument("--baseline", required=True)
    ap.add_argument("--label", required=True)
    ap.add_argument("--requirements")
    a = ap.parse_args()

    baseline = read_list(a.baseline, "server")
    unexplained = [e for e, why in baseline if not why]
    scored = None
    if a.requirements:
        scored = {e for e, _ in read_list(a.requirements, "server")}

    results = {}
    for path in sorted(glob.glob(os.path.join(a.dir, "*", "checks.json"))):
        m = DIR_RE.match(os.path.basename(os.path.dirname(path)))
        if not m:
            continue
        with open(path, encoding="utf-8") as f:
            results.setdefault(m.group(1), []).extend(json.load(f))

    whole = {e for e, _ in baseline if ":" not in e}
    checks = {tuple(e.split(":", 1)) for e, _ in baseline if ":" in e}
    passed, failed, expected, skipped = 0, [], [], 0
    used = set()
    for scenario, items in sorted(results.items()):
        if scored is not None and scenario not in scored:
            continue
        for c in items:
            status = c.get("status")
            if status == "SUCCESS":
                passed += 1
            elif status in ("FAILURE", "WARNING"):
                key = (scenario, c.get("id", ""))
                line = f"{scenario}:{c.get('id')} {status}: {(c.get('errorMessage') or '').strip()[:300]}"
                if scenario in whole:
                    used.add(scenario)
                    expected.append(line)
                elif key in checks:
                    used.add(f"{scenario}:{c.get('id')}")
                    expected.append(line)
                else:
                    failed.append(line)
            else:
                skipped += 1
    ran = set(results)
    stale = [e for e, _ in baseline if e.split(":", 1)[0] in ran and e not in used]

    reasons = dict(baseline)
    for line in expected:
        key = line.split(" ", 1)[0]
        why = reasons.get(key) or reasons.get(key.split(":", 1)[0], "")
        print(f"  ~ expected: {line}\n      why: {why}")
    for e in stale:
        print(f"  ! stale baseline entry (passes now; remove it): {e}")
    for e in unexplained:
        print(f"  ! baseline entry without a reason: {e}")
    for line in failed:
        print(f"  x FAILED: {line}")
    if not results:
        print("  x no results were written")
    bad = len(failed) + len(stale) + len(unexplained) + (0 if results else 1)
    print(
        f"{a.label}: {passed} passed, {bad} failed"
        f" ({len(expected)} expected failures in the baseline, {skipped} skipped or informational)"
    )
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
