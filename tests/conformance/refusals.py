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
    "guide_refuse_mixed_precision": ("mixed precision", "received dtype='mixed_float16'"),
    "guide_refuse_use_ema": ("`use_ema`", "use_ema=True"),
    "guide_refuse_weighted_metrics": ("weighted_metrics", "weighted_metrics is not supported"),
    "guide_refuse_keras_directory": ("unzipped `.keras` directories", "it is a directory"),
    "guide_refuse_orthogonal_regularizer": ("OrthogonalRegularizer",
                                            "OrthogonalRegularizer is not supported"),
    "guide_refuse_stateful_rnn": ("`stateful`/`unroll` RNNs", "stateful=True is not supported"),
    "guide_refuse_unroll_rnn": ("`stateful`/`unroll` RNNs", "unroll=True is not supported"),
    "guide_optimizer_adam_amsgrad": ("`amsgrad`", "amsgrad=True is not supported"),
}
