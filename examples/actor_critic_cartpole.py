"""Actor-critic on CartPole (keras-io's "Actor Critic Method", on kerasish).

The model (shared Dense(128) -> action probabilities and a state value) acts one state
at a time (model(state) on arrays), then learns once per episode with a GradientTape
over the whole episode as one batch: the actor's loss -log pi(a|s) (G - V(s)) with the
advantage held constant, the critic's Huber loss to the normalized returns G. The same
loss and gradient as keras-io's per-step recording (the weights do not change within
an episode), as one plan.

    PYTHONPATH=. python examples/actor_critic_cartpole.py
"""

import os
import sys

import numpy as np

import kerasish as keras
from kerasish import layers, ops

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cartpole import CartPole  # noqa: E402

GAMMA, EPS = 0.99, np.finfo(np.float32).eps.item()


def make_model(num_hidden=128):
    inputs = layers.Input(shape=(4,))
    common = layers.Dense(num_hidden, activation="relu")(inputs)
    action = layers.Dense(2, activation="softmax")(common)
    critic = layers.Dense(1)(common)
    return keras.Model(inputs=inputs, outputs=[action, critic])


def discounted_returns(rewards):
    out, total = [], 0.0
    for r in reversed(rewards):
        total = r + GAMMA * total
        out.append(total)
    out = np.array(out[::-1], np.float32)
    return (out - out.mean()) / (out.std() + EPS)


def train(seed=0, max_episodes=500, target=150.0, window=20, verbose=False):
    """Episode lengths until the average of the last `window` reaches `target` (or
    max_episodes). Seeds: keras.utils.set_random_seed(seed), CartPole(seed), actions
    drawn from numpy's default_rng(seed + 1)."""
    keras.utils.set_random_seed(seed)
    env, rng = CartPole(seed), np.random.default_rng(seed + 1)
    model = make_model()
    optimizer = keras.optimizers.Adam(learning_rate=0.01)
    huber = keras.losses.Huber(reduction="sum")
    lengths = []
    for episode in range(max_episodes):
        state, states, actions, rewards, done = env.reset(), [], [], [], False
        while not done:
            probs, _ = model(state[None])
            p = np.asarray(probs, np.float64)[0]
            action = int(rng.choice(2, p=p / p.sum()))
            states.append(state)
            actions.append(action)
            state, reward, done = env.step(action)
            rewards.append(reward)
        lengths.append(len(rewards))
        xs = np.stack(states)
        returns = discounted_returns(rewards)
        taken = np.eye(2, dtype=np.float32)[actions]
        with keras.GradientTape() as tape:
            probs, values = model(xs, training=True)
            log_probs = ops.log(ops.sum(probs * taken, axis=1))
            advantage = returns - np.asarray(values)[:, 0]  # a constant: no gradient
            actor = -ops.sum(log_probs * advantage)
            critic = huber(returns[:, None], values)
            loss = actor + critic
        grads = tape.gradient(loss, model.trainable_weights)
        optimizer.apply_gradients(zip(grads, model.trainable_weights))
        running = float(np.mean(lengths[-window:]))
        if verbose and episode % 10 == 0:
            print(f"episode {episode}: length {lengths[-1]}, average {running:.1f}")
        if len(lengths) >= window and running >= target:
            break
    return lengths


if __name__ == "__main__":
    found = train(verbose=True)
    print(f"{len(found)} episodes; last 20 average {np.mean(found[-20:]):.1f}")
