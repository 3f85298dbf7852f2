"""keras-io snippets that use the functional API, with only the import changed
(`import kerasish as keras`); data shrunk to keep the suite fast."""

import numpy as np

import kerasish as keras
from kerasish import layers


def test_sequential_guide_feature_extraction():
    initial_model = keras.Sequential(
        [
            keras.Input(shape=(250, 250, 3)),
            layers.Conv2D(32, 5, strides=2, activation="relu"),
            layers.Conv2D(32, 3, activation="relu", name="my_intermediate_layer"),
            layers.Conv2D(32, 3, activation="relu"),
        ]
    )
    feature_extractor = keras.Model(
        inputs=initial_model.inputs,
        outputs=[layer.output for layer in initial_model.layers],
    )
    x = np.ones((1, 250, 250, 3))
    features = feature_extractor(x)
    assert [f.shape for f in features] == [(1, 123, 123, 32), (1, 121, 121, 32),
                                           (1, 119, 119, 32)]
    feature_extractor = keras.Model(
        inputs=initial_model.inputs,
        outputs=initial_model.get_layer(name="my_intermediate_layer").output,
    )
    np.testing.assert_array_equal(feature_extractor(x), features[1])


def test_sequential_guide_transfer_learning(tmp_path):
    model = keras.Sequential([
        keras.Input(shape=(784)),
        layers.Dense(32, activation='relu'),
        layers.Dense(32, activation='relu'),
        layers.Dense(32, activation='relu'),
        layers.Dense(10),
    ])
    model.save_weights(tmp_path / "pretrained.weights.h5")
    # Presumably you would want to first load pre-trained weights.
    model.load_weights(tmp_path / "pretrained.weights.h5")
    # Freeze all layers except the last one.
    for layer in model.layers[:-1]:
        layer.trainable = False
    frozen = [w.copy() for layer in model.layers[:-1] for w in layer.get_weights()]
    # Recompile and train (this will only update the weights of the last layer).
    model.compile(optimizer="adam", loss=keras.losses.SparseCategoricalCrossentropy(
        from_logits=True))
    model.fit(np.random.rand(64, 784), np.random.randint(0, 10, 64), epochs=1, verbose=0)
    after = [w for layer in model.layers[:-1] for w in layer.get_weights()]
    assert all(np.array_equal(a, b) for a, b in zip(frozen, after))

    # A pretrained base as the first layer of a new model (keras-io uses Xception).
    base_model = keras.Sequential([keras.Input((28, 28, 1)), layers.Conv2D(8, 3),
                                   layers.GlobalAveragePooling2D()], name="base")
    base_model.trainable = False
    model = keras.Sequential([base_model, layers.Dense(10)])
    model.compile(optimizer="adam", loss="mean_squared_error")
    model.fit(np.random.rand(16, 28, 28, 1), np.random.rand(16, 10), epochs=1, verbose=0)
    assert len(model.trainable_weights) == 2


def test_training_guide_multi_input_multi_output_model():
    num_tags = 12  # Number of unique issue tags
    num_words = 10000  # Size of vocabulary obtained when preprocessing text data
    num_departments = 4  # Number of departments for predictions

    title_input = keras.Input(shape=(None,), name="title")  # Variable-length sequence of ints
    body_input = keras.Input(shape=(None,), name="body")  # Variable-length sequence of ints
    tags_input = keras.Input(shape=(num_tags,), name="tags")  # Binary vectors of size num_tags

    # Embed each word in the title into a 64-dimensional vector
    title_features = layers.Embedding(num_words, 64)(title_input)
    # Embed each word in the text into a 64-dimensional vector
    body_features = layers.Embedding(num_words, 64)(body_input)

    # Reduce sequence of embedded words in the title into a single 128-dimensional vector
    title_features = layers.LSTM(128)(title_features)
    # Reduce sequence of embedded words in the body into a single 32-dimensional vector
    body_features = layers.LSTM(32)(body_features)

    # Merge all available features into a single large vector via concatenation
    x = layers.concatenate([title_features, body_features, tags_input])

    # Stick a logistic regression for priority prediction on top of the features
    priority_pred = layers.Dense(1, name="priority")(x)
    # Stick a department classifier on top of the features
    department_pred = layers.Dense(num_departments, name="department")(x)

    # Instantiate an end-to-end model predicting both priority and department
    model = keras.Model(
        inputs=[title_input, body_input, tags_input],
        outputs={"priority": priority_pred, "department": department_pred},
    )
    model.compile(
        optimizer=keras.optimizers.RMSprop(1e-3),
        loss={
            "priority": keras.losses.BinaryCrossentropy(from_logits=True),
            "department": keras.losses.CategoricalCrossentropy(from_logits=True),
        },
        loss_weights={"priority": 1.0, "department": 0.2},
    )

    # Dummy input data
    title_data = np.random.randint(num_words, size=(64, 10))
    body_data = np.random.randint(num_words, size=(64, 30))
    tags_data = np.random.randint(2, size=(64, num_tags)).astype("float32")

    # Dummy target data
    priority_targets = np.random.random(size=(64, 1))
    dept_targets = np.random.randint(2, size=(64, num_departments))

    history = model.fit(
        {"title": title_data, "body": body_data, "tags": tags_data},
        {"priority": priority_targets, "department": dept_targets},
        epochs=2,
        batch_size=32,
        verbose=0,
    )
    assert sorted(history.history) == ["department_loss", "loss", "priority_loss"]
    # other sequence lengths get their own plan
    out = model.predict({"title": title_data[:3, :4], "body": body_data[:3, :7],
                         "tags": tags_data[:3]}, verbose=0)
    assert out["department"].shape == (3, 4) and out["priority"].shape == (3, 1)


def test_structured_data_model_with_several_inputs():
    keras.utils.set_random_seed(0)  # initial weights, dropout and shuffling
    names = ["age", "trestbps", "chol", "thalach", "oldpeak", "slope", "ca"]
    rng = np.random.default_rng(0)
    data = {name: rng.normal(size=(96, 1)).astype("float32") for name in names}
    target = (data["age"][:, 0] + data["chol"][:, 0] > 0).astype("float32")

    all_inputs = [keras.Input(shape=(1,), name=name) for name in names]
    all_features = layers.concatenate(all_inputs)
    x = layers.Dense(32, activation="relu")(all_features)
    x = layers.Dropout(0.5)(x)
    output = layers.Dense(1, activation="sigmoid")(x)
    model = keras.Model(all_inputs, output)
    model.compile("adam", "binary_crossentropy", metrics=["accuracy"])
    history = model.fit(data, target, epochs=30, batch_size=32, verbose=0,
                        validation_split=0.25)
    assert history.history["accuracy"][-1] > 0.7
    sample = {name: np.array([[0.5]], dtype="float32") for name in names}
    assert model.predict(sample, verbose=0).shape == (1, 1)
