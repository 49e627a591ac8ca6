#!/usr/bin/env python3
"""Count the test cases in meson's JUnit logs and print one line:
"N passed, N failed" (", N skipped" when some were skipped).

Every TAP subtest is a case, as is every non-TAP test. Exits 1 if any
case failed or a log is missing."""
import sys
import xml.etree.ElementTree as ET

passed = failed = skipped = 0
missing = False
for path in sys.argv[1:]:
    try:
        root = ET.parse(path).getroot()
    except (OSError, ET.ParseError) as e:
        print(f"test-summary: cannot read {path}: {e}", file=sys.stderr)
        missing = True
        continue
    for case in root.iter("testcase"):
        if case.find("failure") is not None or case.find("error") is not None:
            failed += 1
        elif case.find("skipped") is not None:
            skipped += 1
        else:
            passed += 1

line = f"{passed} passed, {failed + (1 if missing else 0)} failed"
if skipped:
    line += f", {skipped} skipped"
print(line)
sys.exit(1 if failed or missing else 0)
