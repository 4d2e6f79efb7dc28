"""Runs the tests of the Python client: `python3 tests/run.py --timewheeld PATH` (or the
environment variable TIMEWHEELD_BINARY). Why a runner and not `python3 -m unittest`: it finds
the binary, puts src/ and examples/ first on the path (the code of this tree, not an
installed copy), and exits 77 (ctest's skip) with a message only when the binary is missing;
the offline tests (test_signature.py, test_contract.py) run in any case first.
"""

import argparse
import os
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
REPO = os.path.dirname(os.path.dirname(ROOT))


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--timewheeld", default=os.environ.get("TIMEWHEELD_BINARY"))
    parser.add_argument("-v", "--verbose", action="store_true")
    parser.add_argument("pattern", nargs="*", help="only the tests whose name contains one of these")
    args = parser.parse_args()
    sys.path[:0] = [os.path.join(ROOT, "src"), os.path.join(ROOT, "examples"), HERE,
                    os.path.join(REPO, "test", "support")]
    loader = unittest.TestLoader()
    if args.pattern:
        loader.testNamePatterns = [f"*{p}*" for p in args.pattern]
    runner = unittest.TextTestRunner(verbosity=2 if args.verbose else 1)
    offline = runner.run(loader.loadTestsFromNames(["test_signature", "test_contract"]))
    binary = args.timewheeld
    if not binary or not os.access(binary, os.X_OK):
        print(f"SKIP: no timewheeld binary ({binary!r}): give --timewheeld PATH or TIMEWHEELD_BINARY")
        return 1 if not offline.wasSuccessful() else 77
    os.environ["TIMEWHEELD_BINARY"] = os.path.abspath(binary)
    online = runner.run(loader.loadTestsFromName("test_timewheeld"))
    return 0 if offline.wasSuccessful() and online.wasSuccessful() else 1


if __name__ == "__main__":
    sys.exit(main())
