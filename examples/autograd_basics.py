"""The autograd basics from PyTorch's tutorials, one short section each.

requires_grad, grad_fn, is_leaf, a vector-Jacobian product with y.backward(gradient=v),
gradients accumulating over two backward calls, retain_grad, register_hook, detach, and the
grad modes (no_grad, enable_grad, set_grad_enabled).

    python examples/autograd_basics.py
"""

import tracegrad as torch


def leaves_and_grad_fn():
    x = torch.ones(2, 2, requires_grad=True)
    y = x + 2
    z = y * y * 3
    out = z.mean()
    out.backward()
    return {"x_is_leaf": x.is_leaf, "y_is_leaf": y.is_leaf, "y_grad_fn": y.grad_fn.name(),
            "out_grad_fn": out.grad_fn.name(), "x_grad": x.grad,
            "sum_grad_fn": x.sum().grad_fn.name()}


def requires_grad_switch():
    a = torch.randn(2, 2)
    a = (a * 3) / (a - 1)
    before = a.requires_grad
    a.requires_grad_(True)
    b = (a * a).sum()
    return {"before": before, "after": a.requires_grad, "b_grad_fn": b.grad_fn.name()}


def vector_jacobian_product():
    x = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = x * 2
    v = torch.tensor([0.1, 1.0, 0.0001])
    y.backward(gradient=v)  # y is not a scalar: backward needs the vector v
    return {"x_grad": x.grad}


def accumulation():
    w = torch.tensor([1.0, 2.0], requires_grad=True)
    (w * 3).sum().backward()
    first = w.grad.clone()
    (w * 3).sum().backward()  # .grad accumulates: 3 + 3
    second = w.grad.clone()
    w.grad.zero_()
    return {"first": first, "second": second, "after_zero": w.grad}


def retain_grad_and_hooks():
    x = torch.tensor([1.0, -2.0, 3.0], requires_grad=True)
    h = x * 2
    h.retain_grad()  # intermediate tensors drop .grad unless asked to keep it
    seen = []
    handle = h.register_hook(lambda grad: seen.append(grad.clone()))
    doubled = x.register_hook(lambda grad: grad * 2)  # a hook may replace the gradient
    (h * h).sum().backward()
    handle.remove()
    doubled.remove()
    return {"h_grad": h.grad, "hook_saw": seen[0], "x_grad": x.grad}


def detach_and_grad_modes():
    x = torch.ones(3, requires_grad=True)
    y = x * 2
    detached = y.detach()
    with torch.no_grad():
        inside_no_grad = (x * 2).requires_grad
        with torch.enable_grad():
            inside_enable = (x * 2).requires_grad
    with torch.set_grad_enabled(False):
        inside_set_false = (x * 2).requires_grad
    return {"detached_requires_grad": detached.requires_grad,
            "detached_shares_data": detached.data is y.data or
            bool((detached == y).all()),
            "no_grad": inside_no_grad, "enable_grad": inside_enable,
            "set_grad_enabled_false": inside_set_false}


SECTIONS = (leaves_and_grad_fn, requires_grad_switch, vector_jacobian_product, accumulation,
            retain_grad_and_hooks, detach_and_grad_modes)


def main():
    torch.manual_seed(0)
    results = {}
    for section in SECTIONS:
        results[section.__name__] = section()
        print(f"{section.__name__}:")
        for key, value in results[section.__name__].items():
            print(f"  {key}: {value}")
    return results


if __name__ == "__main__":
    main()
