# A cubic fitted to sin(x) by gradient descent, gradients worked out by hand.
import math

import torch

x = torch.linspace(-math.pi, math.pi, 200)
y = torch.sin(x)
a, b, c, d = (torch.tensor(v) for v in (0.1, -0.2, 0.05, 0.3))
rate = 1e-5
for step in range(300):
    guess = a + b * x + c * x**2 + d * x**3
    loss = (guess - y).pow(2).sum()
    if step % 100 == 99:
        print(step, loss.item())
    g = 2.0 * (guess - y)
    a -= rate * g.sum()
    b -= rate * (g * x).sum()
    c -= rate * (g * x**2).sum()
    d -= rate * (g * x**3).sum()
print(f"y = {a.item():.5f} + {b.item():.5f} x + {c.item():.5f} x^2 + {d.item():.5f} x^3")
