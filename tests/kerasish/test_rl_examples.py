"""The reinforcement-learning examples on the NumPy CartPole: the environment's
dynamics, the actor-critic learning to an average episode length >= 150 (seed 0, within
400 episodes), and the DQN's machinery (replay, target network by set_weights, Huber
loss through a GradientTape) over a short run."""

import os
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "examples"))

import actor_critic_cartpole  # noqa: E402
import dqn_cartpole  # noqa: E402
from cartpole import CartPole  # noqa: E402


def test_cartpole_dynamics_and_limits():
    env = CartPole(0)
    state = env.reset()
    assert state.shape == (4,) and np.all(np.abs(state) <= 0.05)
    steps, done = 0, False
    while not done:
        state, reward, done = env.step(1)  # always right: falls over soon
        steps += 1
        assert reward == 1.0
    assert 5 < steps < 60 and (abs(state[0]) > 2.4 or abs(state[2]) > 12 * np.pi / 180)
    with pytest.raises(ValueError, match="expected action 0 or 1"):
        env.step(2)


def test_actor_critic_learns_to_150():
    lengths = actor_critic_cartpole.train(seed=0, max_episodes=400)
    assert len(lengths) < 400, f"no average >= 150 within 400 episodes: {lengths[-20:]}"
    assert np.mean(lengths[-20:]) >= 150


def test_dqn_runs_and_fits_its_targets():
    lengths, losses = dqn_cartpole.train(seed=0, frames=800, warmup=100)
    assert lengths and all(1 <= n <= 500 for n in lengths)
    assert len(losses) == len(range(100, 800, 4)) and np.all(np.isfinite(losses))
