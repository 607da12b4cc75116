#!/usr/bin/env python3
"""inca's GCN against a plain-PyTorch GCN from the same initial weights (issue 31).

    python3 bench/torch_same_weights.py G.npz INIT [--epochs 30] [--dropout 0.5] [--seed S]
                                        [--layers 3] [--hidden 256] [--lr 0.005] [--weight-decay 5e-4]

G.npz is `inca export STORE G.npz --format npz`. INIT is one of
  FILE.npy  inca's initial parameters: `inca train STORE --model gcn --method full --layers L
            --hidden H --epochs 1 --lr 1e-30 --dropout 0 --seed S --save-params FILE.npy`
            (one step of lr 1e-30 leaves every weight as drawn; the order is W0 b0 W1 b1 ...,
            W row-major fan_in x fan_out, as inca's params are laid out)
  torch     torch's own Glorot draws on (fan_in, fan_out), as DGL's GraphConv makes its weight
  torchT    torch's draws on (fan_out, fan_in), used transposed, as PyG's Linear
The model is the formula, no GNN library: h <- Â dropout(h) W + b with Â = D^-1/2 (A + I) D^-1/2
(in-degrees), ReLU between layers, mean cross-entropy over the train split, Adam with L2 decay
on every parameter. One JSON line per epoch (training loss, validation and test accuracy):
compare them with `inca train ... --dropout D --metrics M.jsonl` from the same FILE.npy's seed.
With --dropout 0 the two agree to float rounding; with dropout the masks differ (torch's RNG).
Needs torch and numpy: run it with compare_peers.py's venv, ~/.cache/inca/pyg-venv/bin/python.
"""
import argparse
import json
import numpy as np
import torch
import torch.nn.functional as F

p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
p.add_argument("npz")
p.add_argument("init")
for k, v in (("epochs", 30), ("layers", 3), ("hidden", 256), ("seed", 0), ("threads", 2)):
    p.add_argument("--" + k, type=int, default=v)
for k, v in (("dropout", 0.5), ("lr", 0.005), ("weight-decay", 5e-4)):
    p.add_argument("--" + k, type=float, default=v)
a = p.parse_args()
torch.set_num_threads(a.threads)
torch.manual_seed(a.seed)
z = np.load(a.npz)
x, y = torch.from_numpy(z["x"]).float(), torch.from_numpy(z["y"]).long()
idx = {k: torch.from_numpy(z[k + "_idx"]).long() for k in ("train", "valid", "test")}
N = x.shape[0]
ei = torch.from_numpy(z["edge_index"]).long()
ei = ei[:, ei[0] != ei[1]]
ei = torch.cat([ei, torch.arange(N).repeat(2, 1)], 1)
deg = torch.zeros(N).index_add_(0, ei[1], torch.ones(ei.shape[1]))
A = torch.sparse_coo_tensor(torch.stack([ei[1], ei[0]]), deg[ei[0]].rsqrt() * deg[ei[1]].rsqrt(), (N, N)).coalesce()
At, A = A.t().coalesce().to_sparse_csr(), A.to_sparse_csr()


class Spmm(torch.autograd.Function):
    @staticmethod
    def forward(ctx, h):
        return A @ h

    @staticmethod
    def backward(ctx, g):
        return At @ g


dims = [x.shape[1]] + [a.hidden] * (a.layers - 1) + [int(y.max()) + 1]
ps = []
if a.init in ("torch", "torchT"):
    for i in range(a.layers):
        W = torch.empty(dims[i], dims[i + 1]) if a.init == "torch" else torch.empty(dims[i + 1], dims[i])
        torch.nn.init.xavier_uniform_(W)
        ps += [W if a.init == "torch" else W.t().contiguous(), torch.zeros(dims[i + 1])]
else:
    flat, o = np.load(a.init).reshape(-1), 0
    for i in range(a.layers):
        ps.append(torch.tensor(flat[o:o + dims[i] * dims[i + 1]].reshape(dims[i], dims[i + 1])))
        o += dims[i] * dims[i + 1]
        ps.append(torch.tensor(flat[o:o + dims[i + 1]]))
        o += dims[i + 1]
    if o != flat.size:
        raise SystemExit(f"torch_same_weights: {a.init}: {flat.size} parameters, a GCN {dims} has {o}")
ps = [torch.nn.Parameter(t) for t in ps]
opt = torch.optim.Adam(ps, lr=a.lr, weight_decay=a.weight_decay)


def forward(train):
    h = x
    for i in range(a.layers):
        h = Spmm.apply(F.dropout(h, a.dropout, training=train) @ ps[2 * i]) + ps[2 * i + 1]
        if i + 1 < a.layers:
            h = F.relu(h)
    return h


for ep in range(a.epochs):
    opt.zero_grad()
    loss = F.cross_entropy(forward(True)[idx["train"]], y[idx["train"]])
    loss.backward()
    opt.step()
    with torch.no_grad():
        pred = forward(False).argmax(1)
    acc = {k: float((pred[idx[k]] == y[idx[k]]).float().mean()) for k in ("valid", "test")}
    print(json.dumps({"epoch": ep, "train_loss": loss.item(), "val_acc": acc["valid"], "test_acc": acc["test"]}), flush=True)
