"""Expected refusals: cases whose kerasish run must fail with an error naming the feature.

REFUSALS = {"<case name>": ("<feature, as the README's 'not (yet)' row names it>",
                            "<fragment of kerasish's error message>")}

A listed case passes when kerasish raises an error containing the fragment (and real Keras runs
it); a listed case that starts running on kerasish fails the harness: take it off the list. Each
feature must appear in the README's "not (yet)" row (tests/conformance/test_harness.py checks).
Blocks by owner (prefix), merged by the lead.
"""

REFUSALS = {
    # layer_ (F2)
    "layer_rnn_stateful": ("`stateful`/`unroll` RNNs", "stateful=True is not supported"),
    "layer_rnn_explicit_mask": ("explicit `mask=` in a layer call",
                                "explicit masks are not supported"),
    "layer_custom_mask_producer": ("custom layers computing a mask (`compute_mask`)",
                                   "compute_mask override that computes a new mask"),
    "layer_custom_call_reads_mask": ("reading the mask in a custom layer's `call(mask=)`",
                                     "reading the mask inside a custom layer's call(mask=)"),
    "layer_rnn_custom_cell_mask": ("a mask with a custom cell in `keras.layers.RNN`",
                                   "a mask with a custom cell in keras.layers.RNN"),
}
