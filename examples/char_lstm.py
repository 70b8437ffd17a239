"""A character-level language model: Embedding -> LSTM -> Linear, trained with Adam and
gradient clipping to predict the next character of a short text, then sampled.

The weights are drawn with NumPy, so the same program gives the same numbers on tracegrad
and on PyTorch (change the import to ``import torch``).

    .venv/bin/python examples/char_lstm.py
"""

from __future__ import annotations

import math

import numpy as np

import tracegrad as torch
import tracegrad.nn as nn  # noqa: PLR0402 - the line the tests swap for torch.nn

TEXT = ("twinkle twinkle little star, how I wonder what you are. up above the world so high, "
        "like a diamond in the sky. twinkle twinkle little star, how I wonder what you are. ")


class CharModel(nn.Module):
    def __init__(self, vocabulary: int, embedding: int = 16, hidden: int = 64) -> None:
        super().__init__()
        self.embed = nn.Embedding(vocabulary, embedding)
        self.lstm = nn.LSTM(embedding, hidden, batch_first=True)
        self.head = nn.Linear(hidden, vocabulary)

    def forward(self, tokens, state=None):
        output, state = self.lstm(self.embed(tokens), state)
        return self.head(output), state


def encode(text: str = TEXT) -> tuple[list[str], np.ndarray]:
    alphabet = sorted(set(text))
    return alphabet, np.array([alphabet.index(c) for c in text], dtype=np.int64)


def init_from_numpy(model: nn.Module, seed: int = 0) -> nn.Module:
    rng = np.random.default_rng(seed)
    with torch.no_grad():
        for name, param in model.named_parameters():
            if name == "embed.weight":
                values = rng.standard_normal(tuple(param.shape))
            else:
                bound = 1 / math.sqrt(param.shape[-1] if param.ndim > 1 else param.shape[0])
                values = rng.uniform(-bound, bound, tuple(param.shape))
            param.copy_(torch.from_numpy(values.astype(np.float32)))
    return model


def batches(codes: np.ndarray, length: int, batch_size: int, rng):
    """Random windows of ``length + 1`` characters: inputs and next-character targets."""
    starts = rng.integers(0, len(codes) - length - 1, size=batch_size)
    windows = np.stack([codes[s:s + length + 1] for s in starts])
    return torch.from_numpy(windows[:, :-1].copy()), torch.from_numpy(windows[:, 1:].copy())


def train(steps: int = 60, length: int = 24, batch_size: int = 16, seed: int = 0):
    """Train; returns (losses, the model, the alphabet)."""
    alphabet, codes = encode()
    model = init_from_numpy(CharModel(len(alphabet)), seed)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    loss_fn = nn.CrossEntropyLoss()
    rng = np.random.default_rng(seed)
    losses = []
    for _ in range(steps):
        inputs, targets = batches(codes, length, batch_size, rng)
        optimizer.zero_grad()
        logits, _ = model(inputs)
        loss = loss_fn(logits.reshape(-1, len(alphabet)), targets.reshape(-1))
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        losses.append(loss.item())
    return losses, model, alphabet


def sample(model: nn.Module, alphabet: list[str], start: str = "tw", count: int = 40) -> str:
    """Greedy continuation of ``start``, one character at a time, carrying the state."""
    model.eval()
    text = start
    with torch.no_grad():
        logits, state = model(torch.tensor([[alphabet.index(c) for c in start]]))
        for _ in range(count):
            code = int(logits[0, -1].argmax())
            text += alphabet[code]
            logits, state = model(torch.tensor([[code]]), state)
    return text


def main() -> dict:
    losses, model, alphabet = train()
    text = sample(model, alphabet)
    print(f"loss {losses[0]:.3f} -> {losses[-1]:.3f} over {len(losses)} steps")
    print(f"sample: {text!r}")
    return {"losses": losses, "sample": text}


if __name__ == "__main__":
    main()
