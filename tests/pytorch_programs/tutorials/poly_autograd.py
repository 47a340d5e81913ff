# The same cubic, with autograd computing the gradients.
import math

import torch

x = torch.linspace(-math.pi, math.pi, 200)
y = torch.sin(x)
coefficients = torch.tensor([0.1, -0.2, 0.05, 0.3], requires_grad=True)
powers = torch.stack([x**0, x, x**2, x**3], dim=1)
for step in range(300):
    loss = (powers @ coefficients - y).square().sum()
    if step % 100 == 99:
        print(step, loss.item())
    loss.backward()
    with torch.no_grad():
        coefficients -= 1e-5 * coefficients.grad
        coefficients.grad = None
print("coefficients", coefficients.detach().tolist())
