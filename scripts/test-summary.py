#!/usr/bin/env python3
"""Count the test cases in meson's logs and print one line:
"N passed, N failed" (", N skipped" when some were skipped).

Arguments: meson log directories (BUILD/meson-logs). Every TAP subtest
is a case (testlog.junit.xml), as is every non-TAP test. A test program
that fails although each of its cases passed (a sanitizer's report at
exit, a crash after the last case) counts as one more failure, from
testlog.json. Exits 1 if anything failed or a log is missing."""
import json
import os
import sys
import xml.etree.ElementTree as ET

BAD = {"FAIL", "ERROR", "TIMEOUT", "UNEXPECTEDPASS"}

passed = failed = skipped = 0
missing = False
for logdir in sys.argv[1:]:
    junit = os.path.join(logdir, "testlog.junit.xml")
    try:
        root = ET.parse(junit).getroot()
    except (OSError, ET.ParseError) as e:
        print(f"test-summary: cannot read {junit}: {e}", file=sys.stderr)
        missing = True
        continue
    failing_suites = set()
    for suite in root.iter("testsuite"):
        for case in suite.iter("testcase"):
            if case.find("failure") is not None or case.find("error") is not None:
                failed += 1
                failing_suites.add(suite.get("name"))
            elif case.find("skipped") is not None:
                skipped += 1
            else:
                passed += 1
    try:
        with open(os.path.join(logdir, "testlog.json")) as f:
            for line in f:
                t = json.loads(line)
                if t.get("result") in BAD and t.get("name") not in failing_suites \
                        and not any(t.get("name", "").endswith(n) for n in failing_suites):
                    print(f"test-summary: {t.get('name')} failed: {t.get('result')}",
                          file=sys.stderr)
                    failed += 1
    except (OSError, ValueError) as e:
        print(f"test-summary: cannot read {logdir}/testlog.json: {e}", file=sys.stderr)
        missing = True

line = f"{passed} passed, {failed + (1 if missing else 0)} failed"
if skipped:
    line += f", {skipped} skipped"
print(line)
sys.exit(1 if failed or missing else 0)
