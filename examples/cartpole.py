"""CartPole in NumPy (no gym): the classic cart-pole of Barto, Sutton and Anderson with
gym's CartPole-v1 constants, rewards and limits (500 steps, +1 per step, done when the
pole passes 12 degrees or the cart 2.4 units)."""

import math

import numpy as np


class CartPole:
    gravity, masscart, masspole, length, force_mag, tau = 9.8, 1.0, 0.1, 0.5, 10.0, 0.02
    theta_limit = 12 * 2 * math.pi / 360
    x_limit = 2.4
    max_steps = 500

    def __init__(self, seed=0):
        self.rng = np.random.default_rng(seed)
        self.state = None
        self.steps = 0

    def reset(self):
        self.state = self.rng.uniform(-0.05, 0.05, size=4)
        self.steps = 0
        return self.state.astype(np.float32)

    def step(self, action):
        """(observation, reward, done) after pushing left (0) or right (1)."""
        if action not in (0, 1):
            raise ValueError(f"CartPole.step: expected action 0 or 1; received {action!r}")
        x, x_dot, theta, theta_dot = self.state
        force = self.force_mag if action == 1 else -self.force_mag
        cos, sin = math.cos(theta), math.sin(theta)
        total = self.masspole + self.masscart
        pml = self.masspole * self.length
        temp = (force + pml * theta_dot ** 2 * sin) / total
        theta_acc = (self.gravity * sin - cos * temp) / (
            self.length * (4.0 / 3.0 - self.masspole * cos ** 2 / total))
        x_acc = temp - pml * theta_acc * cos / total
        x, x_dot = x + self.tau * x_dot, x_dot + self.tau * x_acc
        theta, theta_dot = theta + self.tau * theta_dot, theta_dot + self.tau * theta_acc
        self.state = np.array([x, x_dot, theta, theta_dot])
        self.steps += 1
        done = abs(x) > self.x_limit or abs(theta) > self.theta_limit or \
            self.steps >= self.max_steps
        return self.state.astype(np.float32), 1.0, bool(done)
