"""tinymodel.py — the small float64 model every real-PyTorch check trains
(train.py, corpus.py, fsdp.py): S residual tanh stages of width HIDDEN,
BATCH_PER_MB rows per microbatch, weights and data drawn from one seeded
generator, and the non-pipelined step they are compared with."""
import torch

HIDDEN, BATCH_PER_MB = 8, 2


class Block(torch.nn.Module):
    """One stage: a residual tanh layer (the last stage's output feeds the loss)."""

    def __init__(self, h=HIDDEN):
        super().__init__()
        self.lin = torch.nn.Linear(h, h, dtype=torch.float64)

    def forward(self, x):
        return x + torch.tanh(self.lin(x))


def loss_fn(out, target):
    return ((out - target) ** 2).mean()


def model_and_data(S, m, seed):
    g = torch.Generator().manual_seed(seed)
    blocks = []
    for _ in range(S):
        b = Block(HIDDEN)
        with torch.no_grad():
            b.lin.weight.copy_(torch.randn(HIDDEN, HIDDEN, generator=g, dtype=torch.float64) * 0.5)
            b.lin.bias.copy_(torch.randn(HIDDEN, generator=g, dtype=torch.float64) * 0.1)
        blocks.append(b)
    x = torch.randn(m * BATCH_PER_MB, HIDDEN, generator=g, dtype=torch.float64)
    y = torch.randn(m * BATCH_PER_MB, HIDDEN, generator=g, dtype=torch.float64)
    return blocks, x, y


def reference(blocks, x, y, m):
    """The same step without a pipeline: the mean of the microbatch losses,
    and each stage's parameter gradients."""
    for b in blocks:
        b.zero_grad()
    total = 0
    for xm, ym in zip(x.chunk(m), y.chunk(m)):
        h = xm
        for b in blocks:
            h = b(h)
        total = total + loss_fn(h, ym)
    loss = total / m
    loss.backward()
    return loss.item(), [[p.grad.clone() for p in b.parameters()] for b in blocks]
