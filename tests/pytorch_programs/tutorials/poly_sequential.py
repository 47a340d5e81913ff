# The cubic as a model: x -> (x, x^2, x^3) -> Linear(3, 1), trained with plain updates.
import math

import torch
from torch import nn

x = torch.linspace(-math.pi, math.pi, 200)
y = torch.sin(x)
features = x.unsqueeze(-1).pow(torch.tensor([1, 2, 3]))
model = nn.Sequential(nn.Linear(3, 1), nn.Flatten(0, 1))
with torch.no_grad():
    model[0].weight.copy_(torch.tensor([[0.5, -0.1, 0.02]]))
    model[0].bias.fill_(0.1)
loss_fn = nn.MSELoss(reduction="sum")
for step in range(300):
    loss = loss_fn(model(features), y)
    if step % 100 == 99:
        print(step, loss.item())
    model.zero_grad()
    loss.backward()
    with torch.no_grad():
        for p in model.parameters():
            p -= 1e-5 * p.grad
layer = model[0]
print(
    "bias",
    layer.bias.item(),
    "weights",
    layer.weight[:, 0].item(),
    layer.weight[:, 1].item(),
    layer.weight[:, 2].item(),
)
