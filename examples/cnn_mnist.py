"""A LeNet-style CNN on synthetic MNIST-shaped digits: Conv2d, BatchNorm2d, MaxPool2d,
Dropout, CrossEntropyLoss and Adam, fed by a DataLoader.

The "digits" are ten fixed 28x28 stroke patterns, shifted by a pixel or two and covered in
noise: a classifier has something real to learn, and the data is made in a blink. The
weights are drawn with NumPy, so the same program gives the same numbers on tracegrad
and on PyTorch (change the import to ``import torch``).

    .venv/bin/python examples/cnn_mnist.py
"""

from __future__ import annotations

import math

import numpy as np

import tracegrad as torch
import tracegrad.nn as nn  # noqa: PLR0402 - the line the tests swap for torch.nn

CLASSES = 10


def make_data(count: int = 512, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """``count`` noisy 1x28x28 images of ten stroke patterns, and their labels."""
    rng = np.random.default_rng(seed)
    templates = np.zeros((CLASSES, 28, 28), dtype=np.float32)
    for label in range(CLASSES):
        pattern = np.random.default_rng(100 + label)
        for _ in range(4):  # four strokes per digit
            row, col = pattern.integers(4, 20, size=2)
            if pattern.random() < 0.5:
                templates[label, row, col:col + 8] = 1.0
            else:
                templates[label, row:row + 8, col] = 1.0
    labels = rng.integers(0, CLASSES, size=count)
    shifts = rng.integers(-2, 3, size=(count, 2))
    images = np.stack([np.roll(templates[label], tuple(shift), axis=(0, 1))
                       for label, shift in zip(labels, shifts)])
    images += rng.normal(0.0, 0.3, size=images.shape).astype(np.float32)
    return images[:, None].astype(np.float32), labels.astype(np.int64)


class LeNet(nn.Module):
    def __init__(self, dropout: float = 0.25) -> None:
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(1, 6, 5), nn.BatchNorm2d(6), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(6, 16, 5), nn.ReLU(), nn.MaxPool2d(2))
        self.classifier = nn.Sequential(
            nn.Flatten(), nn.Linear(16 * 4 * 4, 120), nn.ReLU(), nn.Dropout(dropout),
            nn.Linear(120, 84), nn.ReLU(), nn.Linear(84, CLASSES))

    def forward(self, x):
        return self.classifier(self.features(x))


def init_from_numpy(model: nn.Module, seed: int = 0) -> nn.Module:
    """torch's default bounds (uniform in +-1/sqrt(fan_in)), drawn with NumPy."""
    rng = np.random.default_rng(seed)
    with torch.no_grad():
        for name, param in model.named_parameters():
            if name.startswith("features.1."):  # batch norm: ones and zeros, as torch's
                continue
            fan_in = param.shape[1] * math.prod(param.shape[2:]) if param.ndim > 1 else \
                model.get_parameter(name.replace("bias", "weight")).shape[1] * math.prod(
                    model.get_parameter(name.replace("bias", "weight")).shape[2:])
            bound = 1 / math.sqrt(fan_in)
            values = rng.uniform(-bound, bound, tuple(param.shape)).astype(np.float32)
            param.copy_(torch.from_numpy(values))
    return model


def train(epochs: int = 2, batch_size: int = 32, dropout: float = 0.25, shuffle: bool = True,
          data=None, seed: int = 0):
    """Train; returns (per-step losses, test accuracy before, test accuracy after)."""
    torch.manual_seed(seed)
    images, labels = data if data is not None else make_data(512, seed)
    test_images, test_labels = make_data(256, seed + 1)
    dataset = torch.utils.data.TensorDataset(torch.from_numpy(images),
                                             torch.from_numpy(labels))
    loader = torch.utils.data.DataLoader(dataset, batch_size=batch_size, shuffle=shuffle)
    model = init_from_numpy(LeNet(dropout), seed)
    optimizer = torch.optim.Adam(model.parameters(), lr=2e-3)
    loss_fn = nn.CrossEntropyLoss()
    before = accuracy(model, test_images, test_labels)
    losses = []
    for _ in range(epochs):
        model.train()
        for batch, targets in loader:
            optimizer.zero_grad()
            loss = loss_fn(model(batch), targets)
            loss.backward()
            optimizer.step()
            losses.append(loss.item())
    return losses, before, accuracy(model, test_images, test_labels)


def accuracy(model: nn.Module, images: np.ndarray, labels: np.ndarray) -> float:
    model.eval()
    with torch.no_grad():
        predicted = model(torch.from_numpy(images)).argmax(dim=1)
    return float((predicted == torch.from_numpy(labels)).float().mean())


def main() -> dict:
    losses, before, after = train()
    print(f"loss {losses[0]:.3f} -> {losses[-1]:.3f} over {len(losses)} steps")
    print(f"test accuracy {before:.2f} -> {after:.2f}")
    return {"losses": losses, "before": before, "after": after}


if __name__ == "__main__":
    main()
