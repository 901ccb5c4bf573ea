"""Runs the operator-reference tests of python/tests (every test*.py except the
rule tests, which have their own ctest) and exits non-zero on failure."""
import os
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def reference_suite():
    loader = unittest.TestLoader()
    suite = unittest.TestSuite()
    for name in sorted(os.listdir(HERE)):
        if name.startswith("test") and name.endswith(".py") and not name.startswith("test_rules"):
            suite.addTests(loader.loadTestsFromName(f"tests.{name[:-3]}"))
    return suite


if __name__ == "__main__":
    sys.path.insert(0, ROOT)
    result = unittest.TextTestRunner(verbosity=1).run(reference_suite())
    sys.exit(0 if result.wasSuccessful() else 1)
