# A custom autograd.Function: the Legendre polynomial P3 with a hand-written backward.
import math

import torch


class LegendreP3(torch.autograd.Function):
    @staticmethod
    def forward(ctx, t):
        ctx.save_for_backward(t)
        return 0.5 * (5 * t**3 - 3 * t)

    @staticmethod
    def backward(ctx, grad_output):
        (t,) = ctx.saved_tensors
        return grad_output * 1.5 * (5 * t**2 - 1)


x = torch.linspace(-math.pi, math.pi, 200)
y = torch.sin(x)
a = torch.full((), 0.0, requires_grad=True)
b = torch.full((), -1.0, requires_grad=True)
c = torch.full((), 0.0, requires_grad=True)
d = torch.full((), 0.3, requires_grad=True)
for step in range(200):
    guess = a + b * LegendreP3.apply(c + d * x)
    loss = (guess - y).pow(2).sum()
    if step % 50 == 49:
        print(step, loss.item())
    loss.backward()
    with torch.no_grad():
        for p in (a, b, c, d):
            p -= 5e-6 * p.grad
            p.grad = None
print("a b c d", a.item(), b.item(), c.item(), d.item())
