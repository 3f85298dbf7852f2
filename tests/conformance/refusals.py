"""Features kerasish refuses by name this round, each with the conformance case that
shows it: {case name: (feature, a fragment of kerasish's error message)}."""

REFUSALS = {
    # model_* (F1, model/training findings)
    "model_compute_loss_sample_weight": (
        "sample_weight/class_weight with a compute_loss override",
        "sample_weight and class_weight with a compute_loss override"),
}
