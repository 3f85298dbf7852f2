"""The generated corpus (generator.py): Hypothesis-drawn models run on real Keras 3 and kerasish.

Same runner and cache as the case files; CI runs generator.CI_EXAMPLES examples,
`CONFORMANCE_EXAMPLES=N` more by hand (their Keras results are not kept in the committed cache).
A drawn model that real Keras itself cannot run (e.g. torch's "slow_conv2d: grad_weight must be
contiguous" on some strided convolutions) skips, saying so.
"""

import atexit
import os
import shutil
import sys
import tempfile

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

pytest.importorskip("hypothesis", reason="the generated corpus needs Hypothesis (test extras)")

from generator import generated_cases, known_failures  # noqa: E402
from harness import check, source_cases  # noqa: E402

pytestmark = pytest.mark.conformance

_FOLDER = tempfile.mkdtemp(prefix="conformance-generated-")
atexit.register(shutil.rmtree, _FOLDER, True)
_PAIRS = generated_cases()
CONFORMANCE_CASES = {case.name: case for case in source_cases(_PAIRS, _FOLDER)}
KNOWN = known_failures(_PAIRS)
TEST_IDS = [tid for case in CONFORMANCE_CASES.values() for tid in case.test_ids()]


@pytest.mark.parametrize("test_id", TEST_IDS)
def test_generated(test_id, conformance):
    check(conformance, test_id, known=KNOWN, skip_keras_errors=True)
