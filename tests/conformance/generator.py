"""Generated conformance cases: small models drawn by Hypothesis, emitted as case source text.

    python tests/conformance/generator.py [N]         # print example N's source

Each drawn spec (a family of input and layers, then a model form: Sequential, functional with
two branches and a merge, a shared layer, a nested model, two inputs, or two outputs in a dict) is rendered as an
ordinary case program, so it goes through the same two-sided runner and cache as the files in
cases/: fixed weights from a NumPy rng (by layer name, so both sides fill the same layer with
the same numbers), the forward pass, get_config/from_config round trip, one SGD step (the weights
after it prove the gradients), and for every fourth example `.keras` crossing both ways.

The list is deterministic (example i is drawn under hypothesis.seed(i), no database), and a
longer list starts with the shorter one: CI runs CI_EXAMPLES of them, `CONFORMANCE_EXAMPLES=N`
runs more by hand. A failure found becomes a
regression case cases/gen_<what>.py (the rendered source, trimmed by hand).
"""

import os
import re
import sys

from hypothesis import HealthCheck, Phase, given, seed, settings
from hypothesis import strategies as st

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import CI_EXAMPLES, GENERATED_PREFIX  # noqa: E402
ACTIVATIONS = [None, "relu", "tanh", "sigmoid", "elu", "softplus", "linear"]


def _dense(draw, name):
    return ("Dense", {"units": draw(st.integers(1, 5)), "activation": draw(st.sampled_from(ACTIVATIONS)),
                      "use_bias": draw(st.booleans()), "name": name})


@st.composite
def vector_chain(draw, names):
    d = draw(st.integers(1, 6))
    chain = []
    for _ in range(draw(st.integers(0, 3))):
        kind = draw(st.sampled_from(["Dense", "Dense", "LayerNormalization", "BatchNormalization",
                                     "Activation", "LeakyReLU", "ReLU", "Softmax"]))
        name = next(names)
        if kind == "Dense":
            chain.append(_dense(draw, name))
        elif kind == "Activation":
            chain.append(("Activation", {"activation": draw(st.sampled_from(ACTIVATIONS[1:])),
                                         "name": name}))
        elif kind == "LeakyReLU":
            chain.append(("LeakyReLU", {"negative_slope": draw(st.sampled_from([0.1, 0.3])),
                                        "name": name}))
        else:
            chain.append((kind, {"name": name}))
    return {"family": "vector", "shape": (d,), "chain": chain}


@st.composite
def image_chain(draw, names):
    h, w, c = draw(st.integers(4, 7)), draw(st.integers(4, 7)), draw(st.integers(1, 3))
    size = min(h, w)
    chain = []
    for _ in range(draw(st.integers(1, 3))):
        kind = draw(st.sampled_from(["Conv2D", "Conv2D", "MaxPooling2D", "AveragePooling2D",
                                     "BatchNormalization"]))
        name = next(names)
        if kind == "Conv2D":
            k = draw(st.integers(1, 3))
            padding = draw(st.sampled_from(["valid", "same"]))
            strides = draw(st.sampled_from([1, 2]))
            out = (size - k) // strides + 1 if padding == "valid" else -(-size // strides)
            if out < 1:
                continue
            size = out
            chain.append(("Conv2D", {"filters": draw(st.integers(1, 3)), "kernel_size": k,
                                     "strides": strides, "padding": padding,
                                     "activation": draw(st.sampled_from(ACTIVATIONS)), "name": name}))
        elif kind in ("MaxPooling2D", "AveragePooling2D"):
            if size < 2:
                continue
            size //= 2
            chain.append((kind, {"pool_size": 2, "name": name}))
        else:
            chain.append((kind, {"name": name}))
    chain.append((draw(st.sampled_from(["Flatten", "GlobalAveragePooling2D", "GlobalMaxPooling2D"])),
                  {"name": next(names)}))
    return {"family": "image", "shape": (h, w, c), "chain": chain}


@st.composite
def sequence_chain(draw, names):
    t, f = draw(st.integers(3, 6)), draw(st.integers(1, 4))
    chain = []
    for _ in range(draw(st.integers(0, 2))):
        kind = draw(st.sampled_from(["Conv1D", "SimpleRNN", "LSTM", "GRU"]))
        name = next(names)
        if kind == "Conv1D":
            padding = draw(st.sampled_from(["same", "causal"]))
            chain.append(("Conv1D", {"filters": draw(st.integers(1, 3)),
                                     "kernel_size": draw(st.integers(1, 3)), "padding": padding,
                                     "activation": draw(st.sampled_from(ACTIVATIONS)), "name": name}))
        else:
            chain.append((kind, {"units": draw(st.integers(1, 4)), "return_sequences": True,
                                 "name": name}))
    end = draw(st.sampled_from(["SimpleRNN", "LSTM", "GRU", "GlobalAveragePooling1D", "Flatten"]))
    if end in ("SimpleRNN", "LSTM", "GRU"):
        chain.append((end, {"units": draw(st.integers(1, 4)), "name": next(names)}))
    else:
        chain.append((end, {"name": next(names)}))
    return {"family": "sequence", "shape": (t, f), "chain": chain}


def _names():
    i = 0
    while True:
        yield f"l{i}"
        i += 1


@st.composite
def model_spec(draw):
    names = _names()
    family = draw(st.sampled_from([vector_chain, image_chain, sequence_chain]))
    spec = draw(family(names))
    form = draw(st.sampled_from(["sequential", "branches", "shared", "nested", "two_inputs",
                                 "dict_outputs"]))
    spec["form"] = form
    if form == "branches":
        width = draw(st.integers(1, 4))
        spec["branches"] = [[("Dense", {"units": width, "activation": draw(st.sampled_from(ACTIVATIONS)),
                                        "name": next(names)})] for _ in range(2)]
        spec["merge"] = draw(st.sampled_from(["Add", "Subtract", "Multiply", "Average", "Maximum",
                                              "Minimum", "Concatenate"]))
    elif form == "shared":
        spec["shared"] = ("Dense", {"units": draw(st.integers(1, 4)), "activation": "tanh",
                                    "name": next(names)})
        width = draw(st.integers(1, 4))
        spec["pre"] = [("Dense", {"units": width, "name": next(names)}) for _ in range(2)]
    elif form == "two_inputs":
        spec["second"] = draw(st.integers(1, 3))
    elif form == "dict_outputs":  # keys in either order: Keras sorts them
        keys = draw(st.permutations(["alpha", "beta"]))
        spec["extra_head"] = (keys[1], _dense(draw, next(names)))
        spec["head_key"] = keys[0]
    spec["head"] = _dense(draw, next(names))
    spec["batch"] = draw(st.integers(1, 5))
    spec["seed"] = draw(st.integers(0, 2**16))
    return spec


def draw_spec(index):
    """Example `index`: Hypothesis's third draw under seed(index), the same on every run and
    machine, and independent of how many examples a run asks for (a run of N draws 0..N-1)."""
    got = []

    @seed(index)
    @settings(max_examples=3, database=None, phases=[Phase.generate], deadline=None,
              suppress_health_check=list(HealthCheck))
    @given(model_spec())
    def collect(spec):
        got.append(spec)

    collect()
    return got[-1]


def draw_specs(n):
    return [draw_spec(i) for i in range(n)]


def _call(layer):
    kind, kwargs = layer
    args = ", ".join(f"{k}={v!r}" for k, v in kwargs.items())
    return f"layers.{kind}({args})"


def _builder(spec):
    """The source lines of build(): returns the model the spec describes."""
    lines = ["def build():"]
    shape = tuple(spec["shape"])
    chain, form = spec["chain"], spec["form"]
    if form == "sequential":
        items = [f"keras.Input(shape={shape!r})"] + [_call(layer) for layer in chain]
        items.append(_call(spec["head"]))
        lines.append("    return keras.Sequential([")
        lines += [f"        {item}," for item in items]
        lines.append('    ], name="generated")')
        return lines
    lines.append(f"    inp = keras.Input(shape={shape!r}, name='x')")
    if form == "nested":
        lines.append("    inner = keras.Sequential([")
        lines.append(f"        keras.Input(shape={shape!r}),")
        lines += [f"        {_call(layer)}," for layer in chain]
        lines.append('    ], name="inner")')
        lines.append("    x = inner(inp)")
    else:
        lines.append("    x = inp")
        lines += [f"    x = {_call(layer)}(x)" for layer in chain]
    inputs = "inp"
    if form == "branches":
        for i, branch in enumerate(spec["branches"]):
            lines.append(f"    b{i} = x")
            lines += [f"    b{i} = {_call(layer)}(b{i})" for layer in branch]
        lines.append(f"    x = layers.{spec['merge']}(name='merge')([b0, b1])")
    elif form == "shared":
        lines.append(f"    shared = {_call(spec['shared'])}")
        lines.append(f"    a = {_call(spec['pre'][0])}(x)")
        lines.append(f"    b = {_call(spec['pre'][1])}(x)")
        lines.append("    x = layers.Concatenate(name='join')([shared(a), shared(b)])")
    elif form == "two_inputs":
        lines.append(f"    aux = keras.Input(shape=({spec['second']},), name='aux')")
        if spec["family"] != "vector":
            lines.append("    x = layers.Flatten(name='flat')(x)")
        lines.append("    x = layers.Concatenate(name='join')([x, aux])")
        inputs = "[inp, aux]"
    lines.append(f"    out = {_call(spec['head'])}(x)")
    if form == "dict_outputs":
        key, extra = spec["extra_head"]
        lines.append(f"    out = {{{spec['head_key']!r}: out, {key!r}: {_call(extra)}(x)}}")
    lines.append(f"    return keras.Model({inputs}, out, name='generated')")
    return lines


PRELUDE = '''
import numpy as np

import kerasish as keras
from kerasish import layers


def leaves(layer):
    """Every layer holding weights, nested models opened, sorted by (given) name."""
    out = []
    for sub in getattr(layer, "layers", None) or []:
        out += leaves(sub) if getattr(sub, "layers", None) is not None else [sub]
    return sorted(out, key=lambda sub: sub.name)


def fill(model, rng):
    for layer in leaves(model):
        values = [rng.uniform(-0.6, 0.6, w.shape).astype("float32") for w in layer.get_weights()]
        if isinstance(layer, layers.BatchNormalization):
            values[-1] = rng.uniform(0.5, 1.5, values[-1].shape).astype("float32")
        if values:
            layer.set_weights(values)


def weights_by_name(model):
    return {layer.name: layer.get_weights() for layer in leaves(model) if layer.get_weights()}

'''


def render(spec, index):
    """The case source text for one spec."""
    shape = tuple(spec["shape"])
    batch, seed = spec["batch"], spec["seed"]
    crossing = index % 4 == 3
    form = spec["form"]
    head_units = spec["head"][1]["units"]
    x_expr = f"rng.standard_normal(({batch},) + {shape!r}).astype('float32')"
    if form == "two_inputs":
        x_expr = (f"[{x_expr}, rng.standard_normal(({batch}, {spec['second']})).astype('float32')]")
    cls = "keras.Sequential" if form == "sequential" else "keras.Model"
    doc = (f'"""Generated by tests/conformance/generator.py (example {index}): {spec["family"]} '
           f'family, {form} form."""')
    out = [doc, PRELUDE, *_builder(spec), "", ""]
    if crossing:
        out.append("CROSSING = True")
    y_expr = f"rng.standard_normal(({batch}, {head_units})).astype('float32')"
    if form == "dict_outputs":
        key, extra = spec["extra_head"]
        y_expr = (f"{{{spec['head_key']!r}: {y_expr}, {key!r}: rng.standard_normal(({batch}, "
                  f"{extra[1]['units']})).astype('float32')}}")
    out += [
        f"rng = np.random.default_rng({seed})",
        f"x = {x_expr}",
        f"y = {y_expr}",
        "model = build()",
        "fill(model, rng)",
    ]
    checks = [
        "forward = model.predict(x, verbose=0)",
        f"clone = {cls}.from_config(model.get_config())",
        "clone.set_weights(model.get_weights())",
        "model.compile(optimizer=keras.optimizers.SGD(0.1), loss='mse')",
        "loss = model.train_on_batch(x, y)",
        "RESULT = {'forward': forward, 'clone_forward': clone.predict(x, verbose=0),",
        "          'config_names': [layer.name for layer in clone.layers],",
        "          'loss': float(np.asarray(loss).reshape(-1)[0]), 'after': weights_by_name(model),",
        "          'params': model.count_params()}",
    ]
    if crossing:
        out.append("if PHASE == 'save':")
        out += ["    " + line for line in checks]
        out += ["    model.save(CROSSDIR + '/model.keras')",
                "else:",
                "    loaded = keras.saving.load_model(CROSSDIR + '/model.keras')",
                "    RESULT = {'forward': loaded.predict(x, verbose=0), 'weights': weights_by_name(loaded),",
                "              'names': sorted(layer.name for layer in leaves(loaded) if layer.get_weights())}"]
    else:
        out += checks
    out.append("TOLERANCE = {'rtol': 1e-4, 'atol': 1e-5}")
    return "\n".join(out) + "\n"


# Specs of a form that finds a known kerasish difference: their tests report as xfail with this.
# (form, a pattern the source matches) -> reason
KNOWN_FORMS = {
    ("nested", r"keras\.Input\(shape=[^\n]*\),\n    \], name=\"inner\"\)"): (
        "an empty Sequential used as a layer (only its Input): kerasish refuses it, 'Model "
        "'inner' has no layers to build'; Keras passes the input through "
        "(cases/gen_empty_nested_sequential.py)"),
    ("dict_outputs", r"out = \{'beta': out, 'alpha':"): (
        "dict outputs not in sorted key order: Keras sorts a functional model's outputs by key, "
        "and so model.layers, get_weights and the .keras file's layer order; kerasish keeps the "
        "dict's order (cases/gen_dict_outputs_*.py)"),
}


def known_failures(pairs):
    """{case name: reason} for the generated cases of a KNOWN_FORMS form."""
    out = {}
    for name, source in pairs:
        for (form, text), reason in KNOWN_FORMS.items():
            if f", {form} form." in source.split("\n", 1)[0] and re.search(text, source):
                out[name] = reason
    return out


def generated_cases(n=None):
    """(name, source) pairs: CONFORMANCE_EXAMPLES (default CI_EXAMPLES) generated cases."""
    if n is None:
        n = int(os.environ.get("CONFORMANCE_EXAMPLES", CI_EXAMPLES))
    return [(f"{GENERATED_PREFIX}{i:03d}", render(spec, i)) for i, spec in enumerate(draw_specs(n))]


if __name__ == "__main__":
    index = int(sys.argv[1]) if len(sys.argv) > 1 else 0
    print(dict(generated_cases(index + 1))[f"{GENERATED_PREFIX}{index:03d}"])
