# The cubic as a custom Module with its own Parameters, trained by SGD with momentum.
import math

import torch


class Cubic(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.a = torch.nn.Parameter(torch.tensor(0.1))
        self.b = torch.nn.Parameter(torch.tensor(0.5))
        self.c = torch.nn.Parameter(torch.tensor(-0.05))
        self.d = torch.nn.Parameter(torch.tensor(0.0))

    def forward(self, x):
        return self.a + self.b * x + self.c * x**2 + self.d * x**3

    def string(self):
        return f"y = {self.a.item():.4f} + {self.b.item():.4f} x + {self.c.item():.4f} x^2 + {self.d.item():.4f} x^3"


x = torch.linspace(-math.pi, math.pi, 200)
y = torch.sin(x)
model = Cubic()
criterion = torch.nn.MSELoss(reduction="sum")
optimizer = torch.optim.SGD(model.parameters(), lr=1e-6, momentum=0.9)
for step in range(300):
    loss = criterion(model(x), y)
    if step % 100 == 99:
        print(step, loss.item())
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
print(model.string())
