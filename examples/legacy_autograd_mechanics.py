"""The pre-0.4 "Autograd mechanics" note, on tracegrad: ``requires_grad`` and ``volatile``.

Source: PyTorch's docs/source/notes/autograd.rst as of PyTorch 0.3, section "Excluding
subgraphs from backward" (as reproduced in that era's copies of the note, e.g. the
doctest listings quoted in several translations). The ``>>>`` listings became statements,
with ``print()`` around the lines that showed a value. Two substitutions: the import lines
(``import tracegrad as torch``, ``from tracegrad.autograd import Variable``, and
``tracegrad.nn``/``tracegrad.optim``), and ``torchvision.models.resnet18(pretrained=True)``,
which would download a network, became a small ``nn.Sequential`` with an ``fc`` layer of the
same 512 inputs.

Since torch 0.4 ``volatile`` has no effect and warns: a volatile input's output requires
grad like any other, and ``.volatile`` is always False. The printed values are torch
2.13's, which tracegrad gives too; ``torch.no_grad()`` is what excludes a subgraph now.

    python examples/legacy_autograd_mechanics.py
"""
# ruff: noqa: PLR0402 - the program's own style, kept verbatim

import tracegrad as torch
import tracegrad.nn as nn
import tracegrad.optim as optim
from tracegrad.autograd import Variable

# requires_grad
x = Variable(torch.randn(5, 5))
y = Variable(torch.randn(5, 5))
z = Variable(torch.randn(5, 5), requires_grad=True)
a = x + y
print(a.requires_grad)
b = a + z
print(b.requires_grad)


def resnet18(pretrained=True):
    """Stands in for torchvision.models.resnet18: some layers, then ``fc``."""
    model = nn.Sequential()
    model.body = nn.Linear(227, 512)
    model.fc = nn.Linear(512, 1000)
    return model


model = resnet18(pretrained=True)
for param in model.parameters():
    param.requires_grad = False
# Replace the last fully-connected layer
# Parameters of newly constructed modules have requires_grad=True by default
model.fc = nn.Linear(512, 100)

# Optimize only the classifier
optimizer = optim.SGD(model.fc.parameters(), lr=1e-2, momentum=0.9)
print(model(Variable(torch.randn(1, 3, 227, 227))).requires_grad)
print(model.body.weight.requires_grad, model.fc.weight.requires_grad)

# volatile
regular_input = Variable(torch.randn(1, 3, 227, 227))
volatile_input = Variable(torch.randn(1, 3, 227, 227), volatile=True)
model = resnet18(pretrained=True)
print(model(regular_input).requires_grad)
print(model(volatile_input).requires_grad)
print(model(volatile_input).volatile)
print(model(volatile_input).grad_fn is None)
