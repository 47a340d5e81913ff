# A dynamic graph: each forward reuses one parameter a different number of times.
import math

import torch


class GrowingPolynomial(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.coefficients = torch.nn.Parameter(torch.tensor([0.0, 0.8, 0.0, -0.1]))
        self.extra = torch.nn.Parameter(torch.tensor(0.01))

    def forward(self, x, extra_terms):
        a, b, c, d = self.coefficients
        y = a + b * x + c * x**2 + d * x**3
        for power in range(4, 4 + extra_terms):
            y = y + self.extra * x**power
        return y


x = torch.linspace(-math.pi, math.pi, 200)
y = torch.sin(x)
model = GrowingPolynomial()
optimizer = torch.optim.SGD(model.parameters(), lr=1e-8, momentum=0.9)
for step in range(300):
    prediction = model(x, step % 3)
    loss = (prediction - y).pow(2).sum()
    if step % 100 == 99:
        print(step, loss.item())
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
print("coefficients", model.coefficients.tolist(), "extra", model.extra.item())
