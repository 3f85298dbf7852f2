"""keras-io's knowledge distillation: a Model subclass whose compile() takes extra
arguments and calls super().compile() without a loss, and whose compute_loss override
calls the teacher on x and mixes a student loss with a KL divergence. The teacher is
trained first; as in Keras 3, the distiller's steps update every weight compute_loss
touched (the teacher's too)."""

import numpy as np

import kerasish as keras
from kerasish import layers, ops


class Distiller(keras.Model):
    def __init__(self, student, teacher):
        super().__init__()
        self.teacher = teacher
        self.student = student

    def compile(self, optimizer, metrics, student_loss_fn, distillation_loss_fn, alpha=0.1,
                temperature=3):
        super().compile(optimizer=optimizer, metrics=metrics)
        self.student_loss_fn = student_loss_fn
        self.distillation_loss_fn = distillation_loss_fn
        self.alpha = alpha
        self.temperature = temperature

    def compute_loss(self, x=None, y=None, y_pred=None, sample_weight=None, allow_empty=False):
        teacher_pred = self.teacher(x, training=False)
        student_loss = self.student_loss_fn(y, y_pred)
        distillation_loss = self.distillation_loss_fn(
            ops.softmax(teacher_pred / self.temperature, axis=1),
            ops.softmax(y_pred / self.temperature, axis=1),
        ) * (self.temperature**2)
        return self.alpha * student_loss + (1 - self.alpha) * distillation_loss

    def call(self, x):
        return self.student(x)


rng = np.random.default_rng(0)
x = rng.standard_normal((12, 4)).astype("float32")
y = rng.integers(0, 3, 12)
teacher = keras.Sequential([keras.Input((4,)), layers.Dense(8, activation="relu"),
                            layers.Dense(3)], name="teacher")
student = keras.Sequential([keras.Input((4,)), layers.Dense(3)], name="student")
teacher.set_weights([rng.standard_normal(w.shape).astype("float32") for w in
                     teacher.get_weights()])
student.set_weights([rng.standard_normal(w.shape).astype("float32") for w in
                     student.get_weights()])

teacher.compile(optimizer=keras.optimizers.SGD(0.05),
                loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                metrics=[keras.metrics.SparseCategoricalAccuracy()])
teacher_history = teacher.fit(x, y, batch_size=4, epochs=1, shuffle=False, verbose=0)

distiller = Distiller(student=student, teacher=teacher)
distiller.compile(optimizer=keras.optimizers.SGD(0.1),
                  metrics=[keras.metrics.SparseCategoricalAccuracy()],
                  student_loss_fn=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                  distillation_loss_fn=keras.losses.KLDivergence(), alpha=0.1, temperature=3)
history = distiller.fit(x, y, batch_size=4, epochs=2, shuffle=False, verbose=0)

student.compile(optimizer="sgd",
                loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                metrics=[keras.metrics.SparseCategoricalAccuracy()])

RESULT = {
    "teacher_loss": teacher_history.history["loss"],
    "history": history.history,
    "evaluate": distiller.evaluate(x, y, verbose=0, return_dict=True),
    "student_weights": student.get_weights(),
    "teacher_weights": teacher.get_weights(),
    "student_evaluate": student.evaluate(x, y, verbose=0),
    "trainable_weights": len(distiller.trainable_weights),
}
TOLERANCE = {"rtol": 1e-4, "atol": 1e-5}
