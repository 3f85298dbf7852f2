"""The case corpus (tests/conformance/cases/*.py) run on real Keras 3 and on kerasish.

One test per case (three for a file-crossing case); both sides run once per session in
subprocesses (conftest.py), real Keras only for cases keras_results.json has no current result for.
"""

import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from harness import check, file_cases  # noqa: E402

pytestmark = pytest.mark.conformance

CONFORMANCE_CASES = {case.name: case for case in file_cases()}
TEST_IDS = [tid for case in CONFORMANCE_CASES.values() for tid in case.test_ids()]


@pytest.mark.parametrize("test_id", TEST_IDS)
def test_case(test_id, conformance):
    check(conformance, test_id)
