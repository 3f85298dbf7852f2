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
    # -- E (api_*) --
    "api_refuse_adafactor_clipping": ("gradient clipping with Adafactor",
                                      "Adafactor: gradient clipping is not supported"),
    "api_refuse_random_integers_traced": ("integer keras.random draws inside call()",
                                          "keras.random.randint inside a traced call()"),
    # model_* (F1, model/training findings)
    "model_compute_loss_two_outputs": (
        "a `compute_loss` override in a model with several outputs",
        "a compute_loss override with several outputs is not supported yet"),
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
