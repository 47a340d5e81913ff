# A small convolutional classifier on a fixed synthetic image set, on the chosen device.
import torch
import torch.nn as nn
import torch.nn.functional as F

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 4, 3, padding=1)
        self.conv2 = nn.Conv2d(4, 8, 3)
        self.fc1 = nn.Linear(8, 16)
        self.fc2 = nn.Linear(16, 3)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv1(x)), 2)
        x = F.max_pool2d(F.relu(self.conv2(x)), (2, 2))
        x = torch.flatten(x, 1)
        x = F.relu(self.fc1(x))
        return self.fc2(x)


def images(count):
    grid = torch.arange(64.0).reshape(8, 8) / 64
    rows = []
    for k in range(count):
        pattern = torch.sin(grid * (k % 3 + 1) * 3.0 + k * 0.1)
        rows.append(pattern.unsqueeze(0))
    return torch.stack(rows), torch.tensor([k % 3 for k in range(count)])


net = Net().to(device)
with torch.no_grad():
    for name, p in net.named_parameters():
        p.copy_(0.4 * torch.sin(torch.arange(p.numel()) * 1.7).reshape(p.shape))
inputs, labels = images(24)
inputs, labels = inputs.to(device), labels.to(device)
criterion = nn.CrossEntropyLoss()
optimizer = torch.optim.SGD(net.parameters(), lr=0.05, momentum=0.9)
for epoch in range(6):
    running = 0.0
    for start in range(0, 24, 8):
        optimizer.zero_grad()
        outputs = net(inputs[start : start + 8])
        loss = criterion(outputs, labels[start : start + 8])
        loss.backward()
        optimizer.step()
        running += loss.item()
    print(f"epoch {epoch}: loss {running / 3:.6f}")
with torch.no_grad():
    predicted = net(inputs).argmax(dim=1)
    correct = (predicted == labels).sum().item()
print(f"accuracy {correct}/{labels.size(0)}")
print("shape", list(net(inputs[:2]).shape), "device", inputs.device.type)
