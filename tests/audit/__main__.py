"""``python -m tests.audit``: run every audit case, print a table and the counts.

Options: ``-k TEXT`` runs the cases whose id contains TEXT; ``--failures`` prints only the
failing rows. Exit status 1 when any case fails.
"""

from __future__ import annotations

import argparse
import collections
import sys

from tests.audit.catalogue import all_cases
from tests.audit.runner import run_case, warm_up


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.audit", description=__doc__)
    parser.add_argument("-k", default="", help="only cases whose id contains this text")
    parser.add_argument("--failures", action="store_true", help="print only failing cases")
    args = parser.parse_args(argv)
    cases = [c for c in all_cases() if args.k in c.id]
    warm_up()
    counts: collections.Counter[str] = collections.Counter()
    failed_by_area: dict[str, list[str]] = collections.defaultdict(list)
    width = max((len(c.id) for c in cases), default=10)
    print(f"{'case':<{width}}  {'expected':<11}  {'result':<4}  {'seconds':>7}  observed")
    for case in cases:
        verdict = run_case(case)
        status = "pass" if verdict.passed else "FAIL"
        counts[status] += 1
        if not verdict.passed:
            failed_by_area[case.area].append(f"{case.id}: {verdict.observed}")
        if verdict.passed and args.failures:
            continue
        print(
            f"{case.id:<{width}}  {case.expect:<11}  {status:<4}  {verdict.seconds:7.2f}  "
            f"{verdict.observed}",
            flush=True,
        )
    print()
    print(f"{len(cases)} cases: {counts['pass']} passed, {counts['FAIL']} failed")
    for area, lines in sorted(failed_by_area.items()):
        print(f"\nfailing in {area} ({len(lines)}):")
        for line in lines:
            print(f"  {line}")
    return 1 if counts["FAIL"] else 0


if __name__ == "__main__":
    sys.exit(main())
