"""The conformance stage's session fixture: each side runs once for every selected case.

Test modules here expose CONFORMANCE_CASES (name -> harness.Case) and parametrize over
`test_id`; the fixture gathers the selected items' cases (so `-k` runs only those) and runs
one harness.Session for all of them, outside the pytest process.
"""

import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from harness import CI_EXAMPLES, GENERATED_PREFIX, Session, file_cases  # noqa: E402


def _kept(names):
    """What the rewritten cache keeps: every case file's entry and the CI budget's generated
    ones (a larger budget run by hand adds none to the committed file)."""
    def keep(name):
        if name.startswith(GENERATED_PREFIX):
            index = name[len(GENERATED_PREFIX):]
            return index.isdigit() and int(index) < CI_EXAMPLES
        return name in names
    return keep


@pytest.fixture(scope="session")
def conformance(request):
    cases = {}
    for item in request.session.items:
        module_cases = getattr(item.module, "CONFORMANCE_CASES", None)
        callspec = getattr(item, "callspec", None)
        if module_cases and callspec and "test_id" in callspec.params:
            name = callspec.params["test_id"].split(":")[0]
            cases[name] = module_cases[name]
    return Session(cases.values(), keep=_kept({c.name for c in file_cases()})).run()
