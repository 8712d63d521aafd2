#!/usr/bin/env python3
"""The closing line of scripts/test.sh, from the JUnit file `ctest --output-junit` wrote:

    tests: 1130 passed, 0 failed, 159 skipped (157 because no CUDA GPU: ...; 2 because ...)

A test ctest skipped (a GoogleTest GTEST_SKIP, matched by gtest_discover_tests' skip pattern,
or a skip return code) or one disabled counts as skipped, with the reason the test printed
after GoogleTest's "Skipped" line; every other test that did not pass (a failure, a timeout,
a crash, an executable that was never built) counts as failed, and the first few are named.
Exits 1 when a test failed or the file holds no tests, else 0.

    scripts/test_summary.py JUNIT_FILE
"""
import collections
import sys
import xml.etree.ElementTree as ElementTree

NAMED_FAILURES = 3  # failed tests named on the line; ctest's own list above has them all


def skip_reason(testcase):
    """What the test said about why it skipped, or what ctest said."""
    lines = (testcase.findtext("system-out") or "").splitlines()
    for i, line in enumerate(lines[:-1]):
        if line.endswith(": Skipped") and lines[i + 1].strip():
            return lines[i + 1].strip()
    if testcase.get("status") == "disabled":
        return "disabled in CMake"
    message = testcase.find("skipped").get("message", "")
    if message.startswith("SKIP_RETURN_CODE="):
        return "the test exited with its skip code " + message.split("=", 1)[1]
    if message == "SKIP_REGULAR_EXPRESSION_MATCHED":
        return "the test skipped without saying why"
    return message or "no reason given"


def outcome(testcase):
    """'passed', 'failed' or 'skipped'."""
    status = testcase.get("status")
    if status == "run":
        return "passed"
    if status == "disabled":
        return "skipped"
    skipped = testcase.find("skipped")
    if status == "notrun" and skipped is not None and skipped.get("message", "").startswith("SKIP_"):
        return "skipped"
    return "failed"  # fail, or notrun for another reason (e.g. "Unable to find executable")


def closing_line(testcases):
    counts = collections.Counter()
    failed, reasons = [], collections.Counter()
    for testcase in testcases:
        result = outcome(testcase)
        counts[result] += 1
        if result == "failed":
            failed.append(testcase.get("name"))
        elif result == "skipped":
            reasons[skip_reason(testcase)] += 1
    line = f"tests: {counts['passed']} passed, {counts['failed']} failed"
    if failed:
        line += " (" + ", ".join(failed[:NAMED_FAILURES]) + (", ..." if len(failed) > NAMED_FAILURES else "") + ")"
    line += f", {counts['skipped']} skipped"
    if reasons:
        line += " (" + "; ".join(f"{n} because {reason}" for reason, n in reasons.most_common()) + ")"
    return line, counts["failed"] == 0 and sum(counts.values()) > 0


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: scripts/test_summary.py JUNIT_FILE")
    try:
        testcases = ElementTree.parse(sys.argv[1]).getroot().iter("testcase")
        line, ok = closing_line(testcases)
    except (OSError, ElementTree.ParseError) as error:
        print(f"tests: no results: ctest's JUnit file {sys.argv[1]} could not be read ({error})")
        return 1
    print(line)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
