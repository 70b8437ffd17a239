"""A small Wasserstein GAN with gradient penalty (WGAN-GP) on 2-d points drawn from a ring
of eight Gaussians.

The critic's penalty is ``(||d critic(x_hat) / d x_hat|| - 1)**2`` at points between real
and fake samples: ``autograd.grad(..., create_graph=True)`` gives the gradient as part of
the graph, so the critic's optimizer differentiates through it (a second derivative).
Noise and mixing weights come from NumPy, so the same program gives the same numbers on
tracegrad and on PyTorch (change the import to ``import torch``).

    .venv/bin/python examples/wgan_gp.py
"""

from __future__ import annotations

import math

import numpy as np

import tracegrad as torch
import tracegrad.nn as nn  # noqa: PLR0402 - the line the tests swap for torch.nn

NOISE = 4


def real_points(rng, count: int) -> np.ndarray:
    centres = np.array([(math.cos(a), math.sin(a)) for a in np.linspace(0, 2 * math.pi, 9)[:8]])
    picked = centres[rng.integers(0, 8, size=count)] * 2.0
    return (picked + rng.normal(0, 0.05, size=(count, 2))).astype(np.float32)


def mlp(inputs: int, outputs: int, width: int = 32) -> nn.Module:
    return nn.Sequential(nn.Linear(inputs, width), nn.LeakyReLU(0.2), nn.Linear(width, width),
                         nn.LeakyReLU(0.2), nn.Linear(width, outputs))


def init_from_numpy(model: nn.Module, rng) -> nn.Module:
    with torch.no_grad():
        for param in model.parameters():
            fan_in = param.shape[1] if param.ndim > 1 else param.shape[0]
            bound = 1 / math.sqrt(fan_in)
            param.copy_(torch.from_numpy(rng.uniform(-bound, bound,
                                                     tuple(param.shape)).astype(np.float32)))
    return model


def gradient_penalty(critic: nn.Module, real, fake, mix):
    """mean((||grad critic(x_hat)||_2 - 1)^2) at x_hat = mix * real + (1 - mix) * fake."""
    points = (mix * real + (1 - mix) * fake).requires_grad_(True)
    scores = critic(points)
    (grads,) = torch.autograd.grad(scores, points, grad_outputs=torch.ones_like(scores),
                                   create_graph=True)
    return ((grads.norm(2, dim=1) - 1) ** 2).mean()


def train(steps: int = 40, critic_steps: int = 3, batch: int = 64, penalty: float = 10.0,
          seed: int = 0):
    """Returns (critic losses, generator losses, the generator)."""
    rng = np.random.default_rng(seed)
    generator = init_from_numpy(mlp(NOISE, 2), rng)
    critic = init_from_numpy(mlp(2, 1), rng)
    generator_opt = torch.optim.Adam(generator.parameters(), lr=1e-3, betas=(0.5, 0.9))
    critic_opt = torch.optim.Adam(critic.parameters(), lr=1e-3, betas=(0.5, 0.9))
    critic_losses, generator_losses = [], []
    for _ in range(steps):
        for _ in range(critic_steps):
            real = torch.from_numpy(real_points(rng, batch))
            noise = torch.from_numpy(rng.standard_normal((batch, NOISE)).astype(np.float32))
            mix = torch.from_numpy(rng.random((batch, 1)).astype(np.float32))
            fake = generator(noise).detach()
            critic_opt.zero_grad()
            loss = (critic(fake).mean() - critic(real).mean()
                    + penalty * gradient_penalty(critic, real, fake, mix))
            loss.backward()
            critic_opt.step()
            critic_losses.append(loss.item())
        noise = torch.from_numpy(rng.standard_normal((batch, NOISE)).astype(np.float32))
        generator_opt.zero_grad()
        loss = -critic(generator(noise)).mean()
        loss.backward()
        generator_opt.step()
        generator_losses.append(loss.item())
    return critic_losses, generator_losses, generator


def main() -> dict:
    critic_losses, generator_losses, generator = train()
    with torch.no_grad():
        radius = generator(torch.from_numpy(np.random.default_rng(9).standard_normal(
            (256, NOISE)).astype(np.float32))).norm(2, dim=1).mean().item()
    print(f"critic loss {critic_losses[0]:.3f} -> {critic_losses[-1]:.3f}, generator loss "
          f"{generator_losses[0]:.3f} -> {generator_losses[-1]:.3f}")
    print(f"mean radius of generated points {radius:.2f} (the ring's is 2)")
    return {"critic": critic_losses, "generator": generator_losses, "radius": radius}


if __name__ == "__main__":
    main()
