# The same model trained by an optimizer (RMSprop) with a learning-rate schedule.
import math

import torch

x = torch.linspace(-math.pi, math.pi, 200)
y = torch.sin(x)
features = x.unsqueeze(-1).pow(torch.tensor([1, 2, 3]))
model = torch.nn.Sequential(torch.nn.Linear(3, 1), torch.nn.Flatten(0, 1))
torch.nn.init.constant_(model[0].weight, 0.05)
torch.nn.init.zeros_(model[0].bias)
loss_fn = torch.nn.MSELoss(reduction="sum")
optimizer = torch.optim.RMSprop(model.parameters(), lr=1e-3)
schedule = torch.optim.lr_scheduler.StepLR(optimizer, step_size=100, gamma=0.5)
for step in range(300):
    loss = loss_fn(model(features), y)
    if step % 100 == 99:
        print(step, loss.item(), schedule.get_last_lr()[0])
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    schedule.step()
print("parameters", [round(v, 6) for p in model.parameters() for v in p.flatten().tolist()])
