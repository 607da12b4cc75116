#!/usr/bin/env python3
"""inca beside PyTorch Geometric and DGL, on this machine, in one command (issues 14, 31).

    python3 bench/compare_peers.py [--peers pyg,dgl] [--cases cora,csbm,cluster] [--models gcn,sage]
                                   [--ogb DIR ...] [--threads T] [--seeds N] [--seed-start S] [--json]
                                   [--inca build/inca]

Each case is one dataset, one model and one method, run by inca and every peer on the same arrays
(inca ingests or generates a store, `inca export --format npz` writes it, the peers' workers load
that .npz), with the same hyper-parameters and thread count, one process per run, the tools
alternating seed by seed. For each tool: the per-epoch time of the training step alone and with
the evaluation (mean over epochs after the first, the warm-up), the test accuracy at the best
validation epoch (mean and std over seeds; the same selection rule: highest validation accuracy,
ties to the lower validation loss, then the earlier epoch), the peak resident memory of the
run's process, and each peer's time / inca's time.

Cases:
  cora     full-batch on the bundled Cora (row-normalised features, weight decay on the first
           layer as PyG's example gcn.py), 2x16, 200 epochs, 10 seeds.
  csbm     full-batch on a 200k-node contextual SBM (avg degree 20, 128 features, 8 classes,
           homophily 0.4: a graph where methods differ), 3x256, 30 epochs (--csbm-epochs),
           lr 0.005, 2 seeds; plus inca IncAgg's time to each peer's full-batch accuracy.
  cluster  Cluster-GCN on the same csbm: inca `--method cluster --parts K --batch-parts B` against
           DGL's ClusterGCNSampler with the same K and B (each partitions with its own METIS;
           batches renormalised on themselves in both, evaluation on the whole graph), 3x256,
           30 epochs. PyG's ClusterData needs METIS from pyg-lib or torch-sparse, which have no
           wheels on the package registry: the output says so.
  --ogb DIR  full-batch on any OGB raw-layout folder, 2x16, 200 epochs, 5 seeds.
--models gcn,sage runs each full-batch case with both backbones (GCNConv / GraphConv(norm='both')
with self-loops; SAGEConv with the mean aggregator, inca's --model sage).

Every peer runs in its own virtual environment made on first use from the package registry and
reused after (nothing is downloaded at run time besides that one-time installation):
  pyg  ~/.cache/inca/pyg-venv: the newest torch and torch_geometric (CPU-capable wheels).
  dgl  ~/.cache/inca/dgl-venv: dgl 2.1.0, the newest DGL with CPU wheels on the registry, which
       needs torch 2.1.x (2.1.2 pinned) and torchdata 0.7.1, with numpy < 2 and pandas < 2.3
       (imported by dgl.graphbolt), pydantic, pyyaml, scipy, psutil, requests, tqdm.
  torch  no GNN library: GCN and SAGE written from their formulas on torch alone (Â built from
       edge_index, CSR products), full-batch cases only; a third opinion where two tools
       disagree about "the same" model. Runs on PyG's venv; --python-torch names another torch
       (the DGL venv's torch 2.1.2 separates the torch version from DGL itself).
With --device cuda the same cases run on a GPU through the peers' CUDA builds (the machine's own
python3 when it already has torch and the peer: --python-pyg / --python-dgl name it).
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
CACHE = os.path.join(os.environ.get("XDG_CACHE_HOME", os.path.expanduser("~/.cache")), "inca")
PEERS = {
    "pyg": {"name": "PyG", "venv": os.path.join(CACHE, "pyg-venv"), "probe": "import torch, torch_geometric, numpy",
            "packages": [["torch", "torch_geometric", "numpy"]]},
    "dgl": {"name": "DGL", "venv": os.path.join(CACHE, "dgl-venv"), "probe": "import torch, dgl, numpy, dgl.nn",
            "packages": [["torch==2.1.2", "torchdata==0.7.1", "numpy<2", "pandas<2.3", "pydantic", "pyyaml", "scipy",
                          "psutil", "requests", "tqdm"], ["dgl==2.1.0"]]},
    # No GNN library: the layers written from their formulas on torch alone, a third opinion when
    # two tools disagree on "the same" model. PyG's venv by default; --python-torch picks another
    # torch (the DGL venv's 2.1.2 separates a torch version's effect from DGL's own).
    "torch": {"name": "PyTorch", "venv": os.path.join(CACHE, "pyg-venv"), "probe": "import torch, numpy",
              "packages": [["torch", "numpy"]]},
}

# Shared by both workers: arguments, arrays, the epoch loop, the result line.
COMMON = r'''
import json, resource, sys, time
import numpy as np
import torch
import torch.nn.functional as F
a = json.loads(sys.argv[1])
torch.set_num_threads(a["threads"])
torch.manual_seed(a["seed"])
dev = torch.device(a.get("device", "cpu"))
z = np.load(a["npz"])
x = torch.from_numpy(z["x"]).float()
if a["feature_norm"] == "row":   # NormalizeFeatures: each row divided by its sum (zero rows stay zero)
    s = x.sum(1, keepdim=True)
    x = torch.where(s > 0, x / torch.where(s > 0, s, torch.ones_like(s)), x)
y = torch.from_numpy(z["y"]).long()
ei = torch.from_numpy(z["edge_index"]).long()
idx = {k: torch.from_numpy(z[k + "_idx"]).long() for k in ("train", "valid", "test")}
C = int(y.max()) + 1
N = x.shape[0]

class Net(torch.nn.Module):
    """PyG's and the torch worker's stack: dropout before every layer, ReLU between; conv(i, o)
    makes a layer, called as layer(h, *graph). (DGL's layers take the graph first: its own.)"""
    def __init__(self, conv, fin, out):
        super().__init__()
        dims = [fin] + [a["hidden"]] * (a["layers"] - 1) + [out]
        self.convs = torch.nn.ModuleList(conv(dims[i], dims[i + 1]) for i in range(a["layers"]))
    def forward(self, h, *graph):
        for i, c in enumerate(self.convs):
            h = c(F.dropout(h, p=a["dropout"], training=self.training), *graph)
            if i + 1 < len(self.convs):
                h = F.relu(h)
        return h

def sync():
    if dev.type == "cuda":
        torch.cuda.synchronize()

def optimiser(m, first):
    if a["wd_first_layer"]:
        groups = [dict(params=first.parameters(), weight_decay=a["weight_decay"]),
                  dict(params=[p for n, p in m.named_parameters() if not n.startswith("convs.0.")], weight_decay=0.0)]
    else:
        groups = [dict(params=m.parameters(), weight_decay=a["weight_decay"])]
    return torch.optim.Adam(groups, lr=a["lr"])

def run(m, train_epoch, evaluate, extra):
    best, curve, t_step, t_epoch = None, [], 0.0, 0.0
    for ep in range(a["epochs"]):
        sync()
        t0 = time.perf_counter()
        m.train()
        train_epoch()
        sync()
        t1 = time.perf_counter()
        m.eval()
        with torch.no_grad():
            va, vl, te = evaluate()
        sync()
        t2 = time.perf_counter()
        if ep > 0 or a["epochs"] == 1:   # the first epoch warms up (allocations, caches)
            t_step += t1 - t0
            t_epoch += t2 - t0
        curve.append([t2 - t0, va, te])
        if best is None or va > best[1] or (va == best[1] and vl < best[2]):
            best = (ep, va, vl, te)
    timed = max(a["epochs"] - 1, 1)
    peak = (torch.cuda.max_memory_allocated() / 2**20) if dev.type == "cuda" else None
    print(json.dumps(dict({"test_acc": best[3], "val_acc": best[1], "best_epoch": best[0], "step_time_s": t_step / timed,
                           "epoch_time_s": t_epoch / timed,
                           "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0,
                           "peak_device_mb": peak, "curve": curve, "torch": torch.__version__}, **extra)))

def full_eval(out):
    vl = float(F.cross_entropy(out[idx["valid"]], y[idx["valid"]]))
    pred = out.argmax(1)
    return (float((pred[idx["valid"]] == y[idx["valid"]]).float().mean()), vl,
            float((pred[idx["test"]] == y[idx["test"]]).float().mean()))
'''

PYG_WORKER = COMMON + r'''
import torch_geometric
from torch_geometric.nn import GCNConv, SAGEConv
x, y, ei = x.to(dev), y.to(dev), ei.to(dev)
idx = {k: v.to(dev) for k, v in idx.items()}

conv = (lambda i, o: GCNConv(i, o, cached=True)) if a["model"] == "gcn" else (lambda i, o: SAGEConv(i, o, aggr="mean"))
m = Net(conv, x.shape[1], C).to(dev)
opt = optimiser(m, m.convs[0])
def train_epoch():
    opt.zero_grad()
    out = m(x, ei)
    F.cross_entropy(out[idx["train"]], y[idx["train"]]).backward()
    opt.step()
run(m, train_epoch, lambda: full_eval(m(x, ei)), {"peer_version": torch_geometric.__version__})
'''

DGL_WORKER = COMMON + r'''
import os
os.environ.setdefault("DGLBACKEND", "pytorch")
import dgl
from dgl.nn import GraphConv, SAGEConv
g = dgl.graph((ei[0], ei[1]), num_nodes=N)
g = dgl.remove_self_loop(g)
if a["model"] == "gcn":
    g = dgl.add_self_loop(g)   # Â = D^-1/2 (A + I) D^-1/2, as GCNConv's
g = g.to(dev)
x, y = x.to(dev), y.to(dev)
idx = {k: v.to(dev) for k, v in idx.items()}

class Net(torch.nn.Module):
    def __init__(self, fin, hid, out, layers, p, kind):
        super().__init__()
        dims = [fin] + [hid] * (layers - 1) + [out]
        conv = (lambda i, o: GraphConv(i, o, norm="both")) if kind == "gcn" else (lambda i, o: SAGEConv(i, o, "mean"))
        self.convs = torch.nn.ModuleList(conv(dims[i], dims[i + 1]) for i in range(layers))
        self.p = p
    def forward(self, g, x):
        for i, c in enumerate(self.convs):
            x = c(g, F.dropout(x, p=self.p, training=self.training))
            if i + 1 < len(self.convs):
                x = F.relu(x)
        return x

m = Net(x.shape[1], a["hidden"], C, a["layers"], a["dropout"], a["model"]).to(dev)
opt = optimiser(m, m.convs[0])
extra = {"peer_version": dgl.__version__}
if a["method"] == "full":
    def train_epoch():
        opt.zero_grad()
        out = m(g, x)
        F.cross_entropy(out[idx["train"]], y[idx["train"]]).backward()
        opt.step()
else:   # Cluster-GCN: K METIS parts, B a batch, the batch subgraph renormalised on itself
    mask = torch.zeros(N, dtype=torch.bool, device=dev)
    mask[idx["train"]] = True
    g.ndata["feat"], g.ndata["label"], g.ndata["train"] = x, y, mask
    t0 = time.perf_counter()
    sampler = dgl.dataloading.ClusterGCNSampler(g, a["parts"], cache_path=a["cache"],
                                                prefetch_ndata=["feat", "label", "train"])
    extra["partition_s"] = time.perf_counter() - t0
    loader = dgl.dataloading.DataLoader(g, torch.arange(a["parts"]), sampler, batch_size=a["batch_parts"],
                                        shuffle=True, drop_last=False, num_workers=0)
    def train_epoch():
        for sg in loader:
            sg = dgl.add_self_loop(dgl.remove_self_loop(sg))
            tm = sg.ndata["train"]
            if not bool(tm.any()):
                continue
            opt.zero_grad()
            out = m(sg, sg.ndata["feat"])
            F.cross_entropy(out[tm], sg.ndata["label"][tm]).backward()
            opt.step()
run(m, train_epoch, lambda: full_eval(m(g, x)), extra)
'''

TORCH_WORKER = COMMON + r'''
# Â from edge_index as the formulas say: GCN D^-1/2 (A + I) D^-1/2 with in-degrees (duplicate edges
# counted, as PyG's gcn_norm and DGL's GraphConv count them), SAGE the mean over in-neighbours.
ei = ei[:, ei[0] != ei[1]]
if a["model"] == "gcn":
    loops = torch.arange(N)
    ei = torch.cat([ei, torch.stack([loops, loops])], 1)
deg = torch.zeros(N).index_add_(0, ei[1], torch.ones(ei.shape[1]))
w = deg[ei[0]].rsqrt() * deg[ei[1]].rsqrt() if a["model"] == "gcn" else 1.0 / deg[ei[1]]
A = torch.sparse_coo_tensor(torch.stack([ei[1], ei[0]]), w, (N, N)).coalesce()
At = A.t().coalesce().to_sparse_csr().to(dev)
A = A.to_sparse_csr().to(dev)

class Spmm(torch.autograd.Function):   # CSR products both ways (torch's COO path is many times slower)
    @staticmethod
    def forward(ctx, h):
        return A @ h
    @staticmethod
    def backward(ctx, g):
        return At @ g
x, y = x.to(dev), y.to(dev)
idx = {k: v.to(dev) for k, v in idx.items()}

class Gcn(torch.nn.Module):   # Glorot weight, zero bias: GCNConv's and GraphConv's
    def __init__(self, i, o):
        super().__init__()
        self.weight = torch.nn.Parameter(torch.empty(i, o))
        self.bias = torch.nn.Parameter(torch.zeros(o))
        torch.nn.init.xavier_uniform_(self.weight)
    def forward(self, h):
        return Spmm.apply(h @ self.weight) + self.bias

class Sage(torch.nn.Module):  # PyG's SAGEConv: lin_l (bias) on the mean, lin_r (no bias) on the root
    def __init__(self, i, o):
        super().__init__()
        self.lin_l, self.lin_r = torch.nn.Linear(i, o), torch.nn.Linear(i, o, bias=False)
    def forward(self, h):
        return self.lin_l(Spmm.apply(h)) + self.lin_r(h)

m = Net(Gcn if a["model"] == "gcn" else Sage, x.shape[1], C).to(dev)
opt = optimiser(m, m.convs[0])
def train_epoch():
    opt.zero_grad()
    out = m(x)
    F.cross_entropy(out[idx["train"]], y[idx["train"]]).backward()
    opt.step()
run(m, train_epoch, lambda: full_eval(m(x)), {"peer_version": torch.__version__})
'''

CLUSTER_PROBE = r'''
import importlib
ok = []
for mod in ("pyg_lib", "torch_sparse"):
    try:
        importlib.import_module(mod)
        ok.append(mod)
    except Exception:
        pass
print(",".join(ok))
'''


def log(msg):
    print(msg, file=sys.stderr, flush=True)


def ensure_venv(peer, install, python=None):
    """The peer's python: the one given, else its venv, made once when missing."""
    spec = PEERS[peer]
    py = python or os.path.join(spec["venv"], "bin", "python")
    if os.path.exists(py) and subprocess.run([py, "-c", spec["probe"]], capture_output=True).returncode == 0:
        return py
    if python or not install:
        sys.exit(f"compare_peers: no usable {spec['name']} environment at {py} "
                 f"({'it does not import: ' + spec['probe'] if python else 'run without --no-install to make it'})")
    log(f"compare_peers: making {spec['venv']} for {spec['name']} from the package registry (once; several GB)")
    t0 = time.time()
    subprocess.run([sys.executable, "-m", "venv", spec["venv"]], check=True)
    subprocess.run([py, "-m", "pip", "install", "-q", "--upgrade", "pip"], check=True)
    for group in spec["packages"]:
        subprocess.run([py, "-m", "pip", "install", "-q", *group], check=True)
    if subprocess.run([py, "-c", spec["probe"]], capture_output=True).returncode != 0:
        sys.exit(f"compare_peers: {spec['venv']} was made but does not import: {spec['probe']}")
    log(f"compare_peers: {spec['name']} environment ready in {time.time() - t0:.0f} s")
    return py


def inca(binary, *args):
    r = subprocess.run([binary, *args], capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"compare_peers: inca {' '.join(args)} failed ({r.returncode}): {r.stderr.strip()}")
    return r.stdout


def last_json(text):
    return json.loads(text.strip().splitlines()[-1])


def mean_std(v):
    return (statistics.mean(v), statistics.stdev(v) if len(v) > 1 else 0.0)


def inca_args(a, store, case, s, metrics):
    m = case["model"]
    args = ["train", store, "--model", case["kind"], "--method", case["method"], "--layers", str(m["layers"]), "--hidden",
            str(m["hidden"]), "--epochs", str(m["epochs"]), "--lr", str(m["lr"]), "--dropout", str(m["dropout"]),
            "--weight-decay", str(m["weight_decay"]), "--feature-norm", m["feature_norm"], "--seed", str(s), "--threads",
            str(a.threads), "--device", a.device, "--metrics", metrics, "--json", "--quiet"]
    if m["wd_first_layer"]:
        args.append("--wd-first-layer")
    if case["method"] == "cluster":
        args += ["--parts", str(case["parts"]), "--batch-parts", str(case["batch_parts"])]
    return args


def inca_run(a, store, case, s, work):
    """One inca run; its per-epoch times from --metrics, the first epoch left out as the peers'."""
    metrics = os.path.join(work, "inca-metrics.jsonl")
    j = last_json(inca(a.inca, *inca_args(a, store, case, s, metrics)))
    with open(metrics) as f:
        ep = [json.loads(line) for line in f]
    later = ep[1:] or ep
    epoch = statistics.mean(e["epoch_time_s"] for e in later)
    # the step's share of an epoch as the run's means give it (the metrics lines hold whole epochs)
    share = j["train_time_per_epoch_s"] / j["epoch_time_s"] if j["epoch_time_s"] > 0 else 1.0
    return {"test_acc": j["test_acc"], "step_time_s": epoch * share, "epoch_time_s": epoch,
            "peak_rss_mb": j["peak_rss_mb"], "peak_device_mb": j.get("peak_device_mb"),
            "curve": [[e["epoch_time_s"], e["val_acc"], e["test_acc"]] for e in ep]}


def peer_run(a, peer, py, npz, case, s, work):
    wa = dict(case["model"], model=case["kind"], method=case["method"], npz=npz, seed=s, threads=a.threads, device=a.device,
              parts=case.get("parts", 0), batch_parts=case.get("batch_parts", 0),
              cache=os.path.join(work, f"dgl-cluster-{case.get('parts', 0)}.pkl"))
    env = dict(os.environ, OMP_NUM_THREADS=str(a.threads), DGLBACKEND="pytorch")
    worker = {"pyg": PYG_WORKER, "dgl": DGL_WORKER, "torch": TORCH_WORKER}[peer]
    r = subprocess.run([py, "-c", worker, json.dumps(wa)], capture_output=True, text=True, env=env)
    if r.returncode != 0:
        sys.exit(f"compare_peers: the {PEERS[peer]['name']} run failed: {r.stderr.strip()[-2000:]}")
    return last_json(r.stdout)


def run_case(a, pys, case, store, npz, work):
    """inca and every peer that runs this case, alternating seed by seed."""
    tools = ["inca"] + [p for p in pys if case["method"] == "full" or p == "dgl"]
    rows = {t: [] for t in tools}
    for s in range(a.seed_start, a.seed_start + case["seeds"]):
        for t in tools:
            rows[t].append(inca_run(a, store, case, s, work) if t == "inca" else peer_run(a, t, pys[t], npz, case, s, work))
        log(f"compare_peers: {case['name']} seed {s}: " + ", ".join(
            f"{PEERS[t]['name'] if t in PEERS else t} {rows[t][-1]['test_acc']:.4f} "
            f"({rows[t][-1]['epoch_time_s'] * 1e3:.1f} ms/epoch)" for t in tools))
    m = case["model"]
    out = {"case": case["name"], "model": f"{case['kind'].upper()} {m['layers']}x{m['hidden']}",
           "method": "full-batch" if case["method"] == "full" else
           f"Cluster-GCN, {case['parts']} parts, {case['batch_parts']} a batch",
           "epochs": m["epochs"], "seeds": case["seeds"], "seed_start": a.seed_start, "threads": a.threads,
           "device": a.device, "tools": tools}
    for t in tools:
        for k in ("test_acc", "step_time_s", "epoch_time_s", "peak_rss_mb"):
            mu, sd = mean_std([r[k] for r in rows[t]])
            out[f"{t}_{k}"] = mu
            if k == "test_acc":
                out[f"{t}_test_acc_std"] = sd
                out[f"{t}_test_accs"] = [r[k] for r in rows[t]]  # per seed: runs of other seeds pool with them
        if t != "inca":
            out[f"{t}_version"] = rows[t][0]["peer_version"]
            out[f"{t}_torch_version"] = rows[t][0]["torch"]
            out[f"{t}_step_ratio"] = out[f"{t}_step_time_s"] / out["inca_step_time_s"]
            out[f"{t}_epoch_ratio"] = out[f"{t}_epoch_time_s"] / out["inca_epoch_time_s"]
            out[f"{t}_acc_diff_points"] = 100 * (out["inca_test_acc"] - out[f"{t}_test_acc"])
            out[f"{t}_memory_ratio"] = out[f"{t}_peak_rss_mb"] / out["inca_peak_rss_mb"]
    out["_curves"] = {t: [r["curve"] for r in rows[t]] for t in tools}
    return out


def time_to_accuracy(a, store, res, work):
    """inca IncAgg's time to each peer's full-batch test accuracy (its mean at the best validation
    epoch, less 0.5 points), against the peer's own full-batch time to it (first epoch at or above
    it, per seed; the epoch times summed from the first)."""
    out = {"incagg_config": "--method incagg --parts 64 --batch-parts 8 (recompute, one refresh per epoch)"}
    metrics = os.path.join(work, "incagg.jsonl")
    inca(a.inca, "partition", store, "--parts", "64", "--quiet")
    inca(a.inca, "train", store, "--model", "gcn", "--method", "incagg", "--layers", "3", "--hidden", "256", "--epochs",
         str(a.csbm_epochs), "--lr", "0.005", "--parts", "64", "--batch-parts", "8", "--seed", "0", "--threads", str(a.threads),
         "--device", a.device, "--metrics", metrics, "--json", "--quiet")
    with open(metrics) as f:
        inc = [json.loads(line) for line in f]
    for t in res["tools"]:
        if t == "inca":
            continue
        target = res[f"{t}_test_acc"] - 0.005
        peer_t = []
        for c in res["_curves"][t]:
            acc_t, hit = 0.0, None
            for dt, _, te in c:
                acc_t += dt
                if hit is None and te >= target:
                    hit = acc_t
            peer_t.append(hit)
        acc_t, inc_t = 0.0, None
        for m in inc:
            acc_t += m["epoch_time_s"]
            if inc_t is None and m["test_acc"] >= target:
                inc_t = acc_t
        out[t] = {"target_test_acc": target, "peer_full_seconds": peer_t, "incagg_seconds": inc_t}
    return out


def table(r, f):
    def p(*x):
        print(*x, file=f)
    peers = [t for t in r["tools"] if t != "inca"]
    p(f"\n{r['case']}: {r['model']} {r['method']}, {r['epochs']} epochs, {r['seeds']} seeds, {r['threads']} threads, "
      f"{r['device']}; " + ", ".join(f"{PEERS[t]['name']} {r[t + '_version']} (torch {r[t + '_torch_version']})" for t in peers))
    head = f"  {'':22s} {'inca':>16s}" + "".join(f" {PEERS[t]['name']:>16s} {PEERS[t]['name'] + ' / inca':>11s}" for t in peers)
    p(head)
    for label, k, scale, unit in (("training step /epoch", "step_time_s", 1e3, "ms"), ("with evaluation", "epoch_time_s", 1e3, "ms"),
                                  ("peak memory", "peak_rss_mb", 1, "MB")):
        ratio = "memory_ratio" if k == "peak_rss_mb" else ("step_ratio" if k == "step_time_s" else "epoch_ratio")
        p(f"  {label:22s} {r['inca_' + k] * scale:13.2f} {unit}" +
          "".join(f" {r[t + '_' + k] * scale:13.2f} {unit} {r[t + '_' + ratio]:10.2f}x" for t in peers))
    p(f"  {'test accuracy (%)':22s} {100 * r['inca_test_acc']:8.2f} ± {100 * r['inca_test_acc_std']:4.2f}" +
      "".join(f" {100 * r[t + '_test_acc']:8.2f} ± {100 * r[t + '_test_acc_std']:4.2f} {-r[t + '_acc_diff_points']:+9.2f}pt"
              for t in peers))
    for t, v in r.get("time_to_accuracy", {}).items():
        if t in PEERS:
            pt = ", ".join("never" if x is None else f"{x:.1f} s" for x in v["peer_full_seconds"])
            it = "never" if v["incagg_seconds"] is None else f"{v['incagg_seconds']:.1f} s"
            p(f"  time to {100 * v['target_test_acc']:.2f}% ({PEERS[t]['name']}'s accuracy): inca IncAgg {it}, "
              f"{PEERS[t]['name']} full-batch {pt}")
    if "pyg_cluster_gcn" in r:
        p(f"  PyG Cluster-GCN: {r['pyg_cluster_gcn']}")


def jobs_of(a):
    small = dict(layers=2, hidden=16, epochs=200, lr=0.01, dropout=0.5, weight_decay=5e-4, wd_first_layer=True, feature_norm="row")
    big = dict(layers=3, hidden=256, epochs=a.csbm_epochs, lr=0.005, dropout=0.5, weight_decay=5e-4, wd_first_layer=False,
               feature_norm="none")
    cases = [c for c in a.cases.split(",") if c]
    kinds = [k for k in a.models.split(",") if k]
    jobs = []   # (data name, source, case)
    for k in kinds:
        if "cora" in cases:
            jobs.append(("cora", "ogb", os.path.join(ROOT, "data", "cora"),
                         dict(name=f"cora-{k}", kind=k, method="full", model=small, seeds=a.seeds or 10)))
        for d in a.ogb:
            nm = os.path.basename(os.path.normpath(d))
            jobs.append((nm, "ogb", d, dict(name=f"{nm}-{k}", kind=k, method="full", model=small, seeds=a.seeds or 5)))
        if "csbm" in cases:
            jobs.append(("csbm", "csbm", None, dict(name=f"csbm-{k}", kind=k, method="full", model=big, seeds=a.seeds or 2)))
    if "cluster" in cases:
        jobs.append(("csbm", "csbm", None, dict(name="csbm-cluster", kind="gcn", method="cluster", model=big,
                                                 seeds=a.seeds or 2, parts=a.cluster_parts, batch_parts=a.cluster_batch)))
    return jobs


def prepare(a, work, name, kind, src):
    store, npz = os.path.join(work, name + ".lmdb"), os.path.join(work, name + ".npz")
    if os.path.exists(npz):
        return store, npz
    if kind == "ogb":
        inca(a.inca, "ingest", "--format", "ogb", src, "--out", store, "--quiet")
    else:
        inca(a.inca, "gen", "--kind", "csbm", "--nodes", str(a.csbm_nodes), "--avg-degree", "20", "--features", "128",
             "--classes", "8", "--homophily", "0.4", "--seed", "0", "--out", store, "--quiet")
    inca(a.inca, "export", store, npz, "--format", "npz")
    log(f"compare_peers: {name}: the same arrays for every tool ({npz})")
    return store, npz


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--inca", default=os.path.join(ROOT, "build", "inca"))
    p.add_argument("--peers", default="pyg,dgl", help="comma-separated: pyg, dgl, torch (default pyg,dgl)")
    p.add_argument("--cases", default="cora,csbm,cluster", help="comma-separated: cora, csbm, cluster (default all)")
    p.add_argument("--models", default="gcn", help="full-batch backbones, comma-separated: gcn, sage (default gcn)")
    p.add_argument("--ogb", action="append", default=[], help="an OGB raw-layout folder (2x16), repeatable")
    p.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    p.add_argument("--seeds", type=int, default=0, help="seeds per case (default: cora 10, csbm 2, cluster 2, --ogb 5)")
    p.add_argument("--seed-start", type=int, default=0, help="the first seed (default 0): seeds S .. S+N-1")
    p.add_argument("--csbm-nodes", type=int, default=200000)
    p.add_argument("--csbm-epochs", type=int, default=30)
    p.add_argument("--cluster-parts", type=int, default=64)
    p.add_argument("--cluster-batch", type=int, default=8)
    p.add_argument("--device", default="cpu", help="cpu (default) or cuda")
    p.add_argument("--python-pyg", default=None, help="a python that has torch and torch_geometric (instead of the venv)")
    p.add_argument("--python-dgl", default=None, help="a python that has torch and dgl (instead of the venv)")
    p.add_argument("--python-torch", default=None, help="a python that has torch, for --peers torch (default: PyG's venv)")
    p.add_argument("--no-install", action="store_true", help="fail instead of making a peer's environment")
    p.add_argument("--json", action="store_true", help="one JSON line per case on stdout")
    a = p.parse_args()
    peers = [x for x in a.peers.split(",") if x]
    for x in peers:
        if x not in PEERS:
            sys.exit(f"compare_peers: --peers: unknown peer '{x}' (expected pyg, dgl, torch)")
    pys = {x: ensure_venv(x, not a.no_install, getattr(a, "python_" + x)) for x in peers}
    cluster_note = None
    if "pyg" in pys:
        have = subprocess.run([pys["pyg"], "-c", CLUSTER_PROBE], capture_output=True, text=True).stdout.strip()
        cluster_note = (f"available ({have}), not wired here" if have else
                        "not run: ClusterData needs METIS from pyg-lib or torch-sparse, and neither installs from the "
                        "package registry's wheels (both publish theirs at data.pyg.org only)")
    results = []
    with tempfile.TemporaryDirectory(prefix="compare-peers-") as work:
        for data, kind, src, case in jobs_of(a):
            store, npz = prepare(a, work, data, kind, src)
            if case["method"] == "cluster" and "dgl" not in pys:
                log("compare_peers: cluster: needs --peers dgl (PyG's Cluster-GCN does not install from wheels); skipped")
                continue
            res = run_case(a, pys, case, store, npz, work)
            if case["method"] == "cluster" and cluster_note:
                res["pyg_cluster_gcn"] = cluster_note
            if data == "csbm" and case["method"] == "full" and case["kind"] == "gcn" and len(res["tools"]) > 1:
                res["time_to_accuracy"] = time_to_accuracy(a, store, res, work)
            del res["_curves"]
            results.append(res)
            table(res, sys.stderr if a.json else sys.stdout)
    if a.json:
        for r in results:
            print(json.dumps(r))


if __name__ == "__main__":
    main()
