"""A small deep Q-network on CartPole (keras-io's "Deep Q-Learning" recipe on kerasish).

Epsilon-greedy actions from the Q-network (model(state) on arrays), a replay buffer,
a target network refreshed with set_weights every `target_every` frames, and every
`train_every` frames one GradientTape step on a sampled batch: the Huber loss between
Q(s, a) and r + gamma * max_a' Q_target(s', a') (0 past a terminal state).

    PYTHONPATH=. python examples/dqn_cartpole.py

Seed 0 with frames=10000, train_every=1, target_every=500 (the __main__ run): the last
10 episodes averaged 292 steps (longest 500) on 2026-12-06; the test runs 800 frames.
"""

import os
import sys

import numpy as np

import kerasish as keras
from kerasish import layers, ops

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cartpole import CartPole  # noqa: E402


def make_q_network():
    return keras.Sequential([layers.Input((4,)), layers.Dense(64, activation="relu"),
                             layers.Dense(64, activation="relu"), layers.Dense(2)])


class ReplayBuffer:
    def __init__(self, capacity, rng):
        self.capacity, self.rng, self.items = capacity, rng, []

    def add(self, *transition):
        self.items.append(transition)
        if len(self.items) > self.capacity:
            self.items.pop(0)

    def sample(self, n):
        picks = self.rng.choice(len(self.items), size=n, replace=False)
        cols = zip(*(self.items[i] for i in picks))
        return [np.array(c, np.float32) for c in cols]

    def __len__(self):
        return len(self.items)


def train(seed=0, frames=3000, batch_size=32, gamma=0.99, train_every=4, target_every=200,
          warmup=200, verbose=False):
    """Episode lengths and losses over `frames` environment steps (seeded as stated:
    keras.utils.set_random_seed(seed), CartPole(seed), numpy default_rng(seed + 1))."""
    keras.utils.set_random_seed(seed)
    env, rng = CartPole(seed), np.random.default_rng(seed + 1)
    model, target = make_q_network(), make_q_network()
    target.set_weights(model.get_weights())
    optimizer = keras.optimizers.Adam(learning_rate=1e-3)
    huber = keras.losses.Huber()
    buffer = ReplayBuffer(10000, rng)
    lengths, losses, state, length = [], [], env.reset(), 0
    for frame in range(frames):
        epsilon = max(0.05, 1.0 - frame / (0.5 * frames))
        if rng.random() < epsilon:
            action = int(rng.integers(2))
        else:
            action = int(np.argmax(np.asarray(model(state[None]))[0]))
        nxt, reward, done = env.step(action)
        buffer.add(state, action, reward, nxt, float(done and length + 1 < env.max_steps))
        state, length = nxt, length + 1
        if done:
            lengths.append(length)
            state, length = env.reset(), 0
        if frame >= warmup and frame % train_every == 0:
            s, a, r, s2, terminal = buffer.sample(batch_size)
            future = np.asarray(target(s2)).max(axis=1)
            wanted = r + gamma * future * (1.0 - terminal)
            masks = np.eye(2, dtype=np.float32)[a.astype(int)]
            with keras.GradientTape() as tape:
                q_action = ops.sum(model(s, training=True) * masks, axis=1)
                loss = huber(wanted, q_action)
            grads = tape.gradient(loss, model.trainable_weights)
            optimizer.apply_gradients(zip(grads, model.trainable_weights))
            losses.append(float(loss))
        if frame % target_every == 0:
            target.set_weights(model.get_weights())
        if verbose and done and len(lengths) % 10 == 0:
            print(f"frame {frame}: episode {len(lengths)}, average length "
                  f"{np.mean(lengths[-10:]):.1f}")
    return lengths, losses


if __name__ == "__main__":
    found, _ = train(frames=10000, train_every=1, target_every=500, verbose=True)
    print(f"{len(found)} episodes; last 10 average {np.mean(found[-10:]):.1f}")
