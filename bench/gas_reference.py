#!/usr/bin/env python3
"""An independent GAS (GNNAutoScale, Fey et al. 2021) in PyTorch, to check inca's GAS (issue 33).

    python3 bench/gas_reference.py DATA.npz [--layers 3 --hidden 256 --lr 0.005 --dropout 0.5
        --weight-decay 5e-4 --batch-parts 4 --epochs 30 --seed 0 --threads 2 --clip 0
        --halo-dropout --eval-push --diag --metrics FILE.jsonl --json]

Written from the paper's equations, not from inca's code. DATA.npz is `inca export STORE DATA.npz
--format npz --partition NAME`: x, y, edge_index (both directions), train_idx / valid_idx /
test_idx and part (each node's METIS part in the store's partitioning), so both tools train on
the same arrays and the same parts.

The model is GCN: H^{l+1} = relu(Â drop(H^l) W_l + b_l), Â = D^-1/2 (A + I) D^-1/2, logits at the
last layer. Each epoch the parts are shuffled and taken --batch-parts at a time; a batch B
aggregates, at every layer l, its own rows (current, with gradient) and its 1-hop halo's rows:
exact features at l = 0, else the history table Hist^l (no gradient), which then receives the
batch's new rows of H^l (pushed, detached). Histories start at zero. The loss is the mean cross
entropy over B's training nodes, one Adam step a batch (L2 weight decay on every parameter, as
torch.optim.Adam's weight_decay). Evaluation is exact full-graph inference in eval mode after
every epoch; the result is the test accuracy at the best validation epoch.

Options that name choices the paper leaves open:
  --halo-dropout  dropout on the halo's history rows too (PyGAS drops the concatenated
                  [B; halo] input); default: the batch's own rows only (as inca).
  --eval-push     the evaluation's exact rows refresh every history (PyGAS's layer-wise
                  inference pushes them); default off (as inca's GAS).
  --clip C        clip the gradient's global norm at C (PyGAS's examples clip); 0: off.
  --diag          per epoch, on the first batch: per layer, the relative error of the halo's
                  history rows against the same rows computed exactly with the current weights
                  (eval mode), and the cosine and norm ratio of the batch's gradient against the
                  exact gradient of the same batch loss (full-graph forward, dropout off).
  --beta1 B       Adam's first-moment decay (0.9 as torch; inca's history methods default to 0,
                  README "Histories and momentum"); --optimizer sgd: SGD with momentum 0.9.
  --no-push       histories change only at --eval-push (IncAgg's recompute source, period 1 epoch).
  --relax W       --eval-push moves every history a fraction W of the way to the exact rows, the
                  first push excepted (IncAgg's --refresh-relax; default 1: replaced).
  --push-weights average|last  with --ema and --eval-push: the exact rows come from the weights
                  evaluated (the average; default) or from a second pass with the training weights
                  (IncAgg's --refresh-weights).
  --push-eval, --extrapolate C, --mean-drift: history policies tried and ruled out (README).
  --method cluster|full: the same batches without the halo (Â restricted, not renormalised) or
                  full-batch training, as sanity checks of the script.
The model's hyper-parameters are inca train's defaults unless given. Needs torch, numpy and scipy
(bench/compare_peers.py's DGL venv has them: ~/.cache/inca/dgl-venv/bin/python).
"""
import argparse
import json
import sys
import time

import numpy as np
import scipy.sparse as sp
import torch
import torch.nn.functional as F


def gcn_norm(ei, n):
    """D^-1/2 (A + I) D^-1/2 as scipy CSR (A's duplicate entries counted once)."""
    a = sp.coo_matrix((np.ones(ei.shape[1], np.float64), (ei[0], ei[1])), shape=(n, n)).tocsr()
    a.data[:] = 1.0
    a.setdiag(0)
    a.eliminate_zeros()
    a = a + sp.identity(n, format="csr")
    d = np.asarray(a.sum(1)).ravel() ** -0.5
    return (sp.diags(d) @ a @ sp.diags(d)).tocsr().astype(np.float32)


def to_torch(m):
    m = m.tocoo()
    idx = torch.from_numpy(np.vstack([m.row, m.col]).astype(np.int64))
    return torch.sparse_coo_tensor(idx, torch.from_numpy(m.data), m.shape).coalesce().to_sparse_csr()


class GCN(torch.nn.Module):
    def __init__(self, fin, hidden, classes, layers):
        super().__init__()
        dims = [fin] + [hidden] * (layers - 1) + [classes]
        self.lins = torch.nn.ModuleList(torch.nn.Linear(dims[i], dims[i + 1]) for i in range(layers))
        for lin in self.lins:   # Glorot uniform weights, zero biases
            torch.nn.init.xavier_uniform_(lin.weight)
            torch.nn.init.zeros_(lin.bias)

    def full(self, a, x, p=0.0, train=False):
        """Exact full-graph forward; returns the logits and every layer's input."""
        hs, h = [], x
        for l, lin in enumerate(self.lins):
            hs.append(h)
            h = lin(torch.sparse.mm(a, F.dropout(h, p, train)))
            if l + 1 < len(self.lins):
                h = F.relu(h)
        return h, hs


def batch_ops(A, nodes):
    """Â's rows of B split into the columns of B and of its halo."""
    rows = A[nodes]
    inb = np.zeros(A.shape[0], bool)
    inb[nodes] = True
    cols = np.unique(rows.indices)
    halo = cols[~inb[cols]]
    pos = np.full(A.shape[0], -1, np.int64)
    pos[nodes] = np.arange(len(nodes))
    hpos = np.full(A.shape[0], -1, np.int64)
    hpos[halo] = np.arange(len(halo))
    r = rows.tocoo()
    m_in = inb[r.col]
    bb = sp.csr_matrix((r.data[m_in], (r.row[m_in], pos[r.col[m_in]])), shape=(len(nodes), len(nodes)))
    bh = sp.csr_matrix((r.data[~m_in], (r.row[~m_in], hpos[r.col[~m_in]])), shape=(len(nodes), len(halo)))
    return to_torch(bb), to_torch(bh), torch.from_numpy(halo)


def gas_forward(model, x, hist, nodes, halo, bb, bh, p, halo_dropout, push=True, rscale=None, outmass=None):
    """One batch's forward: B's rows current, the halo's from exact x (l = 0) or the histories."""
    h, hh = x[nodes], x[halo]
    L = len(model.lins)
    old = [hist[l][nodes].clone() for l in range(L)]   # B's history rows before this batch's pushes
    for l, lin in enumerate(model.lins):
        hd = F.dropout(h, p, True)
        agg = torch.sparse.mm(bb, hd)
        if rscale is not None and l > 0:
            agg = agg + (rscale - 1) * torch.sparse.mm(bb, hd - old[l])
        if outmass is not None and l > 0:   # the batch's mean drift since its rows were pushed, for the halo
            agg = agg + outmass * (hd - old[l]).mean(0, keepdim=True)
        if hh.shape[0] > 0:
            agg = agg + torch.sparse.mm(bh, F.dropout(hh, p, True) if halo_dropout else hh)
        h = lin(agg)
        if l + 1 < L:
            h = F.relu(h)
            if push:
                hist[l + 1][nodes] = h.detach()   # push
            hh = hist[l + 1][halo]                # pull (halo rows are never in B)
    return h


def flat_grad(model):
    return torch.cat([q.grad.reshape(-1) for q in model.parameters()])


def diagnose(model, a_full, x, y, hist, nodes, halo, bb, bh, train_mask_b):
    """Staleness of the halo's histories and the batch gradient against the exact one."""
    out = {}
    with torch.no_grad():
        _, hs = model.full(a_full, x)
    for l in range(1, len(model.lins)):
        ex = hs[l][halo]
        out["hist_rel_err_l%d" % l] = float((hist[l][halo] - ex).norm() / ex.norm().clamp_min(1e-30))
        out["hist_norm_ratio_l%d" % l] = float(hist[l][halo].norm() / ex.norm().clamp_min(1e-30))
        out["act_norm_l%d" % l] = float(ex.norm() / max(1, ex.shape[0]) ** 0.5)
    tb = nodes[train_mask_b]
    saved = [t.clone() for t in hist]
    model.zero_grad()
    logits = gas_forward(model, x, hist, nodes, halo, bb, bh, 0.0, False)
    F.cross_entropy(logits[train_mask_b], y[tb]).backward()
    g_mb = flat_grad(model).clone()
    for l in range(len(hist)):   # the diagnostic's forward must not push
        hist[l].copy_(saved[l])
    model.zero_grad()
    logits, _ = model.full(a_full, x)
    F.cross_entropy(logits[tb], y[tb]).backward()
    g_ex = flat_grad(model)
    model.zero_grad()
    out["grad_cos"] = float(F.cosine_similarity(g_mb, g_ex, dim=0))
    out["grad_norm_ratio"] = float(g_mb.norm() / g_ex.norm().clamp_min(1e-30))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("npz")
    ap.add_argument("--layers", type=int, default=3)
    ap.add_argument("--hidden", type=int, default=256)
    ap.add_argument("--lr", type=float, default=0.005)
    ap.add_argument("--dropout", type=float, default=0.5)
    ap.add_argument("--weight-decay", type=float, default=5e-4)
    ap.add_argument("--batch-parts", type=int, default=4)
    ap.add_argument("--epochs", type=int, default=30)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--clip", type=float, default=0.0)
    ap.add_argument("--method", choices=["gas", "cluster", "full"], default="gas",
                    help="gas; cluster: the halo dropped (Â restricted to B, not renormalised); full: full-batch")
    ap.add_argument("--halo-dropout", action="store_true")
    ap.add_argument("--eval-push", action="store_true")
    ap.add_argument("--no-push", action="store_true",
                    help="no pushes in training: the histories change only at --eval-push (IncAgg's recompute)")
    ap.add_argument("--relax", type=float, default=1.0,
                    help="--eval-push moves each history a fraction W of the way to the exact rows")
    ap.add_argument("--ema", type=float, default=0.0,
                    help="evaluate an exponential moving average of the weights, decay D per step")
    ap.add_argument("--push-weights", choices=["average", "last"], default="average",
                    help="with --ema and --eval-push: the rows pushed come from the averaged weights or the training ones")
    ap.add_argument("--diag", action="store_true")
    ap.add_argument("--extrapolate", type=float, default=0,
                    help="scale the batch's drift from its histories by min(cap, row mass / in-batch mass); 0: off")
    ap.add_argument("--mean-drift", action="store_true")
    ap.add_argument("--optimizer", choices=["adam", "sgd"], default="adam")
    ap.add_argument("--beta1", type=float, default=0.9)
    ap.add_argument("--push-eval", action="store_true",
                    help="push the batch's rows from a second, eval-mode (dropout-free) forward instead")
    ap.add_argument("--metrics")
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    torch.manual_seed(a.seed)
    rng = np.random.default_rng(a.seed)
    z = np.load(a.npz)
    if "part" not in z:
        sys.exit("gas_reference.py: %s has no 'part' member: export it with inca export --partition NAME" % a.npz)
    x = torch.from_numpy(z["x"]).float()
    y = torch.from_numpy(z["y"]).long()
    n = x.shape[0]
    part = z["part"].astype(np.int64)
    K = int(part.max()) + 1
    A = gcn_norm(z["edge_index"], n)
    a_full = to_torch(A)
    idx = {k: torch.from_numpy(z[k + "_idx"]).long() for k in ("train", "valid", "test")}
    is_train = np.zeros(n, bool)
    is_train[z["train_idx"]] = True
    C = int(y.max()) + 1
    model = GCN(x.shape[1], a.hidden, C, a.layers)
    if a.optimizer == "sgd":
        opt = torch.optim.SGD(model.parameters(), lr=a.lr, momentum=0.9, weight_decay=a.weight_decay)
    else:
        opt = torch.optim.Adam(model.parameters(), lr=a.lr, betas=(a.beta1, 0.999), weight_decay=a.weight_decay)
    hist = [torch.zeros(n, a.hidden) for _ in range(a.layers)]   # hist[0] unused (exact x)
    ema = [p.detach().clone() for p in model.parameters()] if a.ema > 0 else None

    def ema_update():
        if ema is not None:
            with torch.no_grad():
                for e, p in zip(ema, model.parameters()):
                    e.mul_(a.ema).add_(p, alpha=1 - a.ema)
    members = [np.flatnonzero(part == k) for k in range(K)]
    mf = open(a.metrics, "w") if a.metrics else None
    best = (-1.0, 0.0, 0.0, -1)   # val_acc, -val_loss, test_acc, epoch
    t_train = 0.0
    for ep in range(a.epochs):
        model.train()
        t0 = time.perf_counter()
        losses, diag = [], None
        if a.method == "full":
            opt.zero_grad()
            logits, _ = model.full(a_full, x, a.dropout, True)
            loss = F.cross_entropy(logits[idx["train"]], y[idx["train"]])
            loss.backward()
            if a.clip > 0:
                torch.nn.utils.clip_grad_norm_(model.parameters(), a.clip)
            opt.step()
            ema_update()
            losses.append(float(loss))
        else:
            order = rng.permutation(K)
            for s in range(0, K, a.batch_parts):
                nodes = np.sort(np.concatenate([members[k] for k in order[s:s + a.batch_parts]]))
                bb, bh, halo = batch_ops(A, nodes)
                if a.method == "cluster":
                    halo = halo[:0]
                    bh = to_torch(sp.csr_matrix((len(nodes), 0), dtype=np.float32))
                tm = torch.from_numpy(is_train[nodes])
                rs = None
                om = None
                if a.mean_drift:
                    om = torch.from_numpy((np.asarray(A[nodes].sum(1)).ravel() -
                                           np.asarray(A[nodes][:, nodes].sum(1)).ravel()).astype(np.float32))[:, None]
                if a.extrapolate > 0:
                    mass_b = np.asarray(A[nodes][:, nodes].sum(1)).ravel()
                    mass = np.asarray(A[nodes].sum(1)).ravel()
                    rs = torch.from_numpy(np.minimum(a.extrapolate, mass / np.maximum(mass_b, 1e-12)).astype(np.float32))[:, None]
                nodes_t = torch.from_numpy(nodes)
                if a.diag and diag is None and a.method == "gas":
                    diag = diagnose(model, a_full, x, y, hist, nodes_t, halo, bb, bh, tm)
                if not bool(tm.any()):
                    if not a.no_push:
                        gas_forward(model, x, hist, nodes_t, halo, bb, bh, a.dropout, a.halo_dropout)
                    continue
                opt.zero_grad()
                logits = gas_forward(model, x, hist, nodes_t, halo, bb, bh, a.dropout, a.halo_dropout, not (a.push_eval or a.no_push), rs, om)
                if a.push_eval and not a.no_push:
                    with torch.no_grad():
                        gas_forward(model, x, hist, nodes_t, halo, bb, bh, 0.0, False)
                loss = F.cross_entropy(logits[tm], y[nodes_t[tm]])
                loss.backward()
                if a.clip > 0:
                    torch.nn.utils.clip_grad_norm_(model.parameters(), a.clip)
                opt.step()
                ema_update()
                losses.append(float(loss))
        t_train += time.perf_counter() - t0
        model.eval()
        with torch.no_grad():
            if ema is not None:   # evaluate the averaged weights, train on with the current ones
                cur = [p.detach().clone() for p in model.parameters()]
                for e, p in zip(ema, model.parameters()):
                    p.copy_(e)
            logits, hs = model.full(a_full, x)
            if ema is not None:
                for c_, p in zip(cur, model.parameters()):
                    p.copy_(c_)
                if a.eval_push and a.push_weights == "last":   # the rows of the training weights
                    _, hs = model.full(a_full, x)
            if a.eval_push and a.method == "gas":
                w = a.relax if ep > 0 else 1.0   # the first push replaces the zero histories
                for l in range(1, a.layers):
                    hist[l].add_(hs[l] - hist[l], alpha=w)
            lp = F.log_softmax(logits, 1)
            acc = {k: float((lp[v].argmax(1) == y[v]).float().mean()) for k, v in idx.items()}
            vloss = float(F.nll_loss(lp[idx["valid"]], y[idx["valid"]]))
        rec = {"epoch": ep, "train_loss": float(np.mean(losses)) if losses else 0.0, "val_acc": acc["valid"],
               "val_loss": vloss, "test_acc": acc["test"]}
        if diag:
            rec.update(diag)
        if mf:
            mf.write(json.dumps(rec) + "\n")
        key = (acc["valid"], -vloss)
        if key > best[:2]:
            best = (acc["valid"], -vloss, acc["test"], ep)
    if mf:
        mf.close()
    res = {"tool": "gas_reference.py", "method": a.method, "test_acc": best[2], "val_acc": best[0],
           "best_epoch": best[3], "epochs": a.epochs, "epoch_time_s": t_train / max(1, a.epochs),
           "seed": a.seed, "clip": a.clip, "halo_dropout": a.halo_dropout, "eval_push": a.eval_push, "relax": a.relax,
           "push_weights": a.push_weights,
           "lr": a.lr, "layers": a.layers, "hidden": a.hidden, "dropout": a.dropout, "batch_parts": a.batch_parts,
           "parts": K}
    print(json.dumps(res) if a.json else
          "%s: test %.4f at the best validation epoch %d (val %.4f), %.2f s/epoch" %
          (a.method, best[2], best[3], best[0], res["epoch_time_s"]))


if __name__ == "__main__":
    main()
