"""One training run of a tiny CNN, in one process or under `mpirun -n N` (--mpi).

    python train_small_cnn.py --out DIR [--mpi] [--mode MODE] [--epochs E] [--bn]

Writes DIR/result_rank{r}.npz (final weights, history, iterations) on each rank.
MODE: train (plain fit), stop (rank 1 sets stop_training at batch 2), raise (rank 1
raises at batch 1), hang (rank 1 sleeps at batch 2; a 2 s collective timeout),
backup (BackupAndRestore + ModelCheckpoint, interrupted at --interrupt-epoch on every
rank when given).
"""

import argparse
import json
import os
import sys
import time

import numpy as np

from kerasish import callbacks, layers, models
from kerasish.utils import set_random_seed

SAMPLES, GLOBAL_BATCH = 51, 8  # 6 full global batches and a partial one of 3 rows


class Interrupt(Exception):
    pass


def data():
    rng = np.random.default_rng(7)
    x = rng.normal(size=(SAMPLES, 7, 7, 1)).astype(np.float32)
    y = rng.integers(0, 3, size=SAMPLES).astype(np.int32)
    return x, y


def build(bn):
    model = models.Sequential([layers.Input((7, 7, 1)), layers.Conv2D(3, 3, activation="relu")])
    if bn:
        model.add(layers.BatchNormalization(momentum=0.9))
    model.add(layers.MaxPooling2D(2))
    model.add(layers.Flatten())
    model.add(layers.Dense(3, activation="softmax"))
    model.compile(optimizer="adam", loss="sparse_categorical_crossentropy",
                  metrics=["accuracy"])
    return model


class Faults(callbacks.Callback):
    def __init__(self, mode, rank, strategy, out, interrupt_epoch):
        super().__init__()
        self.mode, self.rank, self.strategy, self.out = mode, rank, strategy, out
        self.interrupt_epoch = interrupt_epoch

    def on_epoch_begin(self, epoch, logs=None):
        if self.interrupt_epoch is not None and epoch == self.interrupt_epoch:
            raise Interrupt(f"interrupted at epoch {epoch}")

    def on_train_batch_begin(self, batch, logs=None):
        if self.mode == "raise" and self.rank == 1 and batch == 1:
            with open(os.path.join(self.out, "raised_at"), "w") as f:
                f.write(repr(time.time()))
            raise RuntimeError("boom on rank 1")
        if self.mode == "hang" and batch == 2:
            self.strategy.collectives.timeout = 2.0
            if self.rank == 1:
                with open(os.path.join(self.out, "hung_at"), "w") as f:
                    f.write(repr(time.time()))
                time.sleep(120)

    def on_train_batch_end(self, batch, logs=None):
        if self.mode == "stop" and self.rank == 1 and batch == 2:
            self.model.stop_training = True


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--out", required=True)
    p.add_argument("--mpi", action="store_true")
    p.add_argument("--mode", default="train")
    p.add_argument("--epochs", type=int, default=2)
    p.add_argument("--steps", type=int, default=None)
    p.add_argument("--bn", action="store_true")
    p.add_argument("--interrupt-epoch", type=int, default=None)
    p.add_argument("--verbose", type=int, default=0)
    args = p.parse_args()
    set_random_seed(3)
    x, y = data()
    strategy, rank = None, 0
    if args.mpi:
        from kerasish.distribute import MPIStrategy

        strategy = MPIStrategy()
        rank = strategy.rank
        with strategy.scope():
            model = build(args.bn)
    else:
        model = build(args.bn)
    cbs = [Faults(args.mode, rank, strategy, args.out, args.interrupt_epoch)]
    ckpt = None
    if args.mode == "backup":
        ckpt = callbacks.ModelCheckpoint(os.path.join(args.out, "ckpt-{epoch}.weights.h5"),
                                         save_weights_only=True)
        cbs += [callbacks.BackupAndRestore(os.path.join(args.out, "backup")), ckpt]
    history = {}
    try:
        model.fit(x, y, batch_size=GLOBAL_BATCH, epochs=args.epochs, shuffle=True,
                  steps_per_epoch=args.steps, verbose=args.verbose, callbacks=cbs)
        history = model.history.history
    except Interrupt as e:
        print(f"rank {rank}: {e}", flush=True)
        return 0
    stats = strategy.allreduce_stats(model) if strategy else {}
    weights = {f"w{k}": w for k, w in enumerate(model.get_weights())}
    np.savez(os.path.join(args.out, f"result_rank{rank}.npz"),
             iterations=model.optimizer.iterations, **weights)
    with open(os.path.join(args.out, f"result_rank{rank}.json"), "w") as f:
        json.dump({"history": history, "stats": stats, "epochs_seen": len(history.get("loss", [])),
                   "ckpt_epoch": None if ckpt is None else ckpt._current_epoch}, f)
    return 0


if __name__ == "__main__":
    sys.exit(main())
