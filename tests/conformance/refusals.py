"""Expected refusals: cases whose kerasish run must fail with an error naming the feature.

REFUSALS = {"<case name>": ("<feature, as the README's 'not (yet)' row names it>",
                            "<fragment of kerasish's error message>")}

A listed case passes when kerasish raises an error containing the fragment (and real Keras runs
it); a listed case that starts running on kerasish fails the harness: take it off the list. Each
feature must appear in the README's "not (yet)" row (tests/conformance/test_harness.py checks).
Blocks by owner (prefix), merged by the lead.
"""

REFUSALS = {
    # guide_ (D)
}
