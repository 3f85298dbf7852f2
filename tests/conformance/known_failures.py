"""Cases that find a real kerasish difference not fixed yet: case name (or test id) -> why.

A listed case that fails is reported as an expected failure with this reason and what differs;
one that passes fails the harness (take it off the list). The README counts these.
"""

KNOWN_FAILURES = {
    # guide_ (D): found by the guide corpus, left to the lead / E / F1 / F2
    "guide_functional_multi_io_dict_losses": (
        "dict outputs: Keras orders a functional model's outputs by sorted key (output_names "
        "['department', 'priority']), and so model.layers and get_weights(); kerasish keeps the "
        "dict's order, so the same set_weights list fills other layers"),
    "guide_attention_mha_self": (
        "one MultiHeadAttention called again with other call options (return_attention_scores, "
        "then use_causal_mask, attention_mask) is refused: 'every call of one layer must pass "
        "the same kind of arguments'"),
    "guide_metrics_in_compile": (
        "model.metrics_names: Keras 3 gives ['loss', 'compile_metrics']; kerasish one per metric"),
    "guide_subclass_training_flag": "model(x, training=True) on arrays is refused",
    "guide_eager_training_true": "layer(x, training=True) on arrays (Dropout, BN, RandomCrop) is refused",
    "guide_ops_numpy_like": "ops.cast(x, 'int32') on arrays returns float32",
    "guide_preprocessing_normalization_adapt": (
        "Normalization.mean/variance after adapt have shape (1, 3); Keras's are (3,)"),
    "guide_saving_to_json": (
        "to_json's top-level keys: kerasish writes backend and keras_version, Keras 3 writes "
        "build_config and compile_config"),
    "guide_saving_compiled_loss_after_load": (
        "model.loss is a Loss object; Keras keeps what compile() was given ('mse')"),
    "guide_activations_get": ("activations.get(name) returns the name (a str), not Keras's function; "
                              "activations.serialize(function) returns the function, not its name"),
    "guide_relu_arguments": (
        "ReLU / activations.relu with max_value other than 6, negative_slope with max_value, or "
        "threshold are refused"),
    "guide_softmax_axis": "Softmax(axis=1) is refused (only axis=-1)",
    "guide_build_then_call": (
        "layer.build(shape) then a call builds the weights again (Conv2D, Conv2DTranspose, "
        "DepthwiseConv2D, LayerNormalization: 4 weights, the set ones unused): their build() "
        "does not set built, which Layer._build_once then repeats"),
    # gen_ (D): regressions of what the generator found
    "gen_dict_outputs_layer_order": (
        "dict outputs not in sorted key order: Keras orders outputs, model.layers and "
        "get_weights() by sorted key; kerasish by the dict's order"),
    "gen_dict_outputs_keras_crossing:keras->kerasish": (
        "a .keras file of a dict-outputs model: kerasish loads the heads' weights into each "
        "other's layers (same shapes) or refuses a shape mismatch (layer order differs)"),
    "gen_dict_outputs_keras_crossing:kerasish->keras": (
        "a .keras file of a dict-outputs model saved by kerasish: real Keras loads the heads' "
        "weights into each other's layers (kerasish writes the layers in the dict's order)"),
    "gen_empty_nested_sequential": (
        "a Sequential holding only its Input, used as a layer: kerasish refuses it ('has no "
        "layers to build'); Keras passes the input through"),
}
