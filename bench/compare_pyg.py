#!/usr/bin/env python3
"""inca and PyTorch Geometric side by side, on this machine, in one command (issue 14).

    python3 bench/compare_pyg.py [--inca build/inca] [--cases cora,csbm] [--ogb DIR ...]
                                 [--threads T] [--seeds N] [--json] [--venv DIR]

Each case is one dataset and one model, run by both tools on the same arrays (inca ingests or
generates a store, `inca export --format npz` writes it, the PyG worker loads that .npz), with
the same hyper-parameters and thread count, one process per run, inca and PyG alternating seed
by seed. For each tool it prints the per-epoch time of the training step alone and with the
evaluation, the test accuracy at the best validation epoch (mean and std over seeds; the same
selection rule: highest validation accuracy, ties to the lower validation loss, then the
earlier epoch), the peak resident memory of the run's process, and the ratios. With --json,
one JSON line per case. PyG's Cluster-GCN needs METIS from pyg-lib or torch-sparse; when
neither imports (neither has wheels on the Python package registry) the output says so.

Cases:
  cora   GCN 2x16 full-batch on the bundled Cora (row-normalised features, weight decay on the
         first layer as PyG's example gcn.py), 200 epochs, 10 seeds.
  csbm   GCN 3x256 full-batch on a 200k-node contextual SBM (homophily 0.4, where methods
         differ), 30 epochs (--csbm-epochs), lr 0.005, 2 seeds; plus IncAgg's time to PyG's
         full-batch accuracy.
  --ogb DIR  GCN 2x16 full-batch on any OGB raw-layout folder, 200 epochs.

The PyG side runs in a virtual environment with the CPU-capable torch and torch_geometric from
the Python package registry, made on first use in --venv (default ~/.cache/inca/pyg-venv) and
reused after. Nothing is downloaded at run time besides that one-time installation.
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
VENV = os.path.join(os.environ.get("XDG_CACHE_HOME", os.path.expanduser("~/.cache")), "inca", "pyg-venv")

# The PyG side: one run, in the venv's python. Prints one JSON object.
WORKER = r'''
import json, resource, sys, time
import numpy as np
import torch
import torch.nn.functional as F
from torch_geometric.nn import GCNConv
a = json.loads(sys.argv[1])
torch.set_num_threads(a["threads"])
torch.manual_seed(a["seed"])
z = np.load(a["npz"])
x = torch.from_numpy(z["x"]).float()
if a["feature_norm"] == "row":   # NormalizeFeatures: each row divided by its sum (zero rows stay zero)
    s = x.sum(1, keepdim=True)
    x = torch.where(s > 0, x / torch.where(s > 0, s, torch.ones_like(s)), x)
y = torch.from_numpy(z["y"]).long()
ei = torch.from_numpy(z["edge_index"]).long()
idx = {k: torch.from_numpy(z[k + "_idx"]).long() for k in ("train", "valid", "test")}
C = int(y.max()) + 1

class GCN(torch.nn.Module):
    def __init__(self, fin, hid, out, layers, p):
        super().__init__()
        dims = [fin] + [hid] * (layers - 1) + [out]
        self.convs = torch.nn.ModuleList(GCNConv(dims[i], dims[i + 1], cached=True) for i in range(layers))
        self.p = p
    def forward(self, x, ei):
        for i, c in enumerate(self.convs):
            x = F.dropout(x, p=self.p, training=self.training)
            x = c(x, ei)
            if i + 1 < len(self.convs):
                x = F.relu(x)
        return x

m = GCN(x.shape[1], a["hidden"], C, a["layers"], a["dropout"])
if a["wd_first_layer"]:
    groups = [dict(params=m.convs[0].parameters(), weight_decay=a["weight_decay"]),
              dict(params=[p for c in m.convs[1:] for p in c.parameters()], weight_decay=0.0)]
else:
    groups = [dict(params=m.parameters(), weight_decay=a["weight_decay"])]
opt = torch.optim.Adam(groups, lr=a["lr"])
best = None
t_step = t_epoch = 0.0
curve = []
for ep in range(a["epochs"]):
    t0 = time.perf_counter()
    m.train()
    opt.zero_grad()
    out = m(x, ei)
    loss = F.cross_entropy(out[idx["train"]], y[idx["train"]])
    loss.backward()
    opt.step()
    t1 = time.perf_counter()
    m.eval()
    with torch.no_grad():
        out = m(x, ei)
        vl = float(F.cross_entropy(out[idx["valid"]], y[idx["valid"]]))
        pred = out.argmax(1)
        va = float((pred[idx["valid"]] == y[idx["valid"]]).float().mean())
        te = float((pred[idx["test"]] == y[idx["test"]]).float().mean())
    t2 = time.perf_counter()
    t_step += t1 - t0
    t_epoch += t2 - t0
    curve.append([t_epoch, va, te])
    if best is None or va > best[1] or (va == best[1] and vl < best[2]):
        best = (ep, va, vl, te)
print(json.dumps({"test_acc": best[3], "val_acc": best[1], "best_epoch": best[0], "step_time_s": t_step / a["epochs"],
                  "epoch_time_s": t_epoch / a["epochs"], "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0,
                  "curve": curve, "torch": torch.__version__,
                  "pyg": __import__("torch_geometric").__version__}))
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


def ensure_venv(path, install):
    py = os.path.join(path, "bin", "python")
    probe = [py, "-c", "import torch, torch_geometric, numpy"]
    if os.path.exists(py) and subprocess.run(probe, capture_output=True).returncode == 0:
        return py
    if not install:
        sys.exit(f"compare_pyg: no usable PyG environment in {path} (run without --no-install to make it)")
    log(f"compare_pyg: making {path} with torch and torch_geometric from the package registry (once; several GB)")
    t0 = time.time()
    subprocess.run([sys.executable, "-m", "venv", path], check=True)
    subprocess.run([py, "-m", "pip", "install", "-q", "--upgrade", "pip"], check=True)
    subprocess.run([py, "-m", "pip", "install", "-q", "torch", "torch_geometric", "numpy"], check=True)
    log(f"compare_pyg: environment ready in {time.time() - t0:.0f} s")
    return py


def inca(binary, *args):
    r = subprocess.run([binary, *args], capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"compare_pyg: inca {' '.join(args)} failed ({r.returncode}): {r.stderr.strip()}")
    return r.stdout


def last_json(text):
    return json.loads(text.strip().splitlines()[-1])


def mean_std(v):
    return (statistics.mean(v), statistics.stdev(v) if len(v) > 1 else 0.0)


def run_case(a, py, name, store, npz, model, seeds, work):
    """Both tools, alternating seeds. model: layers, hidden, epochs, lr, dropout, weight_decay,
    wd_first_layer, feature_norm."""
    rows = {"inca": [], "pyg": []}
    for s in range(seeds):
        args = ["train", store, "--model", "gcn", "--method", "full", "--layers", str(model["layers"]), "--hidden",
                str(model["hidden"]), "--epochs", str(model["epochs"]), "--lr", str(model["lr"]), "--dropout",
                str(model["dropout"]), "--weight-decay", str(model["weight_decay"]), "--feature-norm",
                model["feature_norm"], "--seed", str(s), "--threads", str(a.threads), "--json", "--quiet"]
        if model["wd_first_layer"]:
            args.append("--wd-first-layer")
        j = last_json(inca(a.inca, *args))
        rows["inca"].append({"test_acc": j["test_acc"], "step_time_s": j["train_time_per_epoch_s"],
                             "epoch_time_s": j["epoch_time_s"], "peak_rss_mb": j["peak_rss_mb"]})
        wa = dict(model, npz=npz, seed=s, threads=a.threads)
        env = dict(os.environ, OMP_NUM_THREADS=str(a.threads))
        r = subprocess.run([py, "-c", WORKER, json.dumps(wa)], capture_output=True, text=True, env=env)
        if r.returncode != 0:
            sys.exit(f"compare_pyg: the PyG run failed: {r.stderr.strip()[-2000:]}")
        rows["pyg"].append(last_json(r.stdout))
        log(f"compare_pyg: {name} seed {s}: inca {rows['inca'][-1]['test_acc']:.4f} "
            f"({rows['inca'][-1]['epoch_time_s'] * 1e3:.1f} ms/epoch), PyG {rows['pyg'][-1]['test_acc']:.4f} "
            f"({rows['pyg'][-1]['epoch_time_s'] * 1e3:.1f} ms/epoch)")
    out = {"case": name, "model": f"GCN {model['layers']}x{model['hidden']}", "method": "full-batch",
           "epochs": model["epochs"], "seeds": seeds, "threads": a.threads,
           "pyg_version": rows["pyg"][0]["pyg"], "torch_version": rows["pyg"][0]["torch"]}
    for tool in ("inca", "pyg"):
        for k in ("test_acc", "step_time_s", "epoch_time_s", "peak_rss_mb"):
            m, sd = mean_std([r[k] for r in rows[tool]])
            out[f"{tool}_{k}"] = m
            if k == "test_acc":
                out[f"{tool}_test_acc_std"] = sd
    out["step_speedup"] = out["pyg_step_time_s"] / out["inca_step_time_s"]
    out["epoch_speedup"] = out["pyg_epoch_time_s"] / out["inca_epoch_time_s"]
    out["acc_diff_points"] = 100 * (out["inca_test_acc"] - out["pyg_test_acc"])
    out["memory_ratio"] = out["pyg_peak_rss_mb"] / out["inca_peak_rss_mb"]
    out["_pyg_curves"] = [r["curve"] for r in rows["pyg"]]
    return out


def time_to_accuracy(a, store, res, work):
    """IncAgg's time to PyG's full-batch test accuracy (its mean at the best validation epoch,
    less 0.5 points), against PyG full-batch's own time to it (first epoch at or above it, mean
    over seeds)."""
    target = res["pyg_test_acc"] - 0.005
    pyg_t = []
    for c in res["_pyg_curves"]:
        hit = next((t for t, _, te in c if te >= target), None)
        pyg_t.append(hit)
    metrics = os.path.join(work, "incagg.jsonl")
    inca(a.inca, "partition", store, "--parts", "64", "--quiet")
    inca(a.inca, "train", store, "--model", "gcn", "--method", "incagg", "--layers", "3", "--hidden", "256", "--epochs",
         str(a.csbm_epochs), "--lr", "0.005", "--parts", "64", "--batch-parts", "8", "--seed", "0", "--threads", str(a.threads),
         "--metrics", metrics, "--json", "--quiet")
    t, inc_t = 0.0, None
    with open(metrics) as f:
        for line in f:
            m = json.loads(line)
            t += m["epoch_time_s"]
            if inc_t is None and m["test_acc"] >= target:
                inc_t = t
    return {"target_test_acc": target, "pyg_full_seconds": pyg_t, "incagg_seconds": inc_t,
            "incagg_config": "--method incagg --parts 64 --batch-parts 8 (recompute, one refresh per epoch)"}


def table(res, f):
    r = res
    def print_(*x): print(*x, file=f)
    print_(f"\n{r['case']}: {r['model']} {r['method']}, {r['epochs']} epochs, {r['seeds']} seeds, {r['threads']} threads; "
          f"PyG {r['pyg_version']} (torch {r['torch_version']})")
    print_(f"  {'':22s} {'inca':>14s} {'PyG':>14s} {'PyG / inca':>11s}")
    print_(f"  {'training step /epoch':22s} {r['inca_step_time_s'] * 1e3:11.2f} ms {r['pyg_step_time_s'] * 1e3:11.2f} ms "
          f"{r['step_speedup']:10.2f}x")
    print_(f"  {'with evaluation':22s} {r['inca_epoch_time_s'] * 1e3:11.2f} ms {r['pyg_epoch_time_s'] * 1e3:11.2f} ms "
          f"{r['epoch_speedup']:10.2f}x")
    print_(f"  {'test accuracy (%)':22s} {100 * r['inca_test_acc']:7.2f} ± {100 * r['inca_test_acc_std']:4.2f} "
          f"{100 * r['pyg_test_acc']:7.2f} ± {100 * r['pyg_test_acc_std']:4.2f} {r['acc_diff_points']:+9.2f} pt")
    print_(f"  {'peak memory':22s} {r['inca_peak_rss_mb']:11.0f} MB {r['pyg_peak_rss_mb']:11.0f} MB {r['memory_ratio']:10.2f}x")
    if "time_to_accuracy" in r:
        t = r["time_to_accuracy"]
        pt = ", ".join("never" if x is None else f"{x:.1f} s" for x in t["pyg_full_seconds"])
        it = "never" if t["incagg_seconds"] is None else f"{t['incagg_seconds']:.1f} s"
        print_(f"  time to {100 * t['target_test_acc']:.2f}% test accuracy: inca IncAgg {it}, PyG full-batch {pt}")
    print_(f"  PyG Cluster-GCN: {r['cluster_gcn']}")


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--inca", default=os.path.join(ROOT, "build", "inca"))
    p.add_argument("--cases", default="cora,csbm", help="comma-separated: cora, csbm (default both)")
    p.add_argument("--ogb", action="append", default=[], help="an OGB raw-layout folder (GCN 2x16), repeatable")
    p.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    p.add_argument("--seeds", type=int, default=0, help="seeds per case (default: cora 10, csbm 2, --ogb 5)")
    p.add_argument("--csbm-nodes", type=int, default=200000)
    p.add_argument("--csbm-epochs", type=int, default=30)
    p.add_argument("--venv", default=VENV)
    p.add_argument("--no-install", action="store_true", help="fail instead of making the PyG environment")
    p.add_argument("--json", action="store_true", help="one JSON line per case on stdout")
    a = p.parse_args()
    py = ensure_venv(a.venv, not a.no_install)
    have = subprocess.run([py, "-c", CLUSTER_PROBE], capture_output=True, text=True).stdout.strip()
    cluster = (f"available ({have})" if have else
               "not run: ClusterData needs METIS from pyg-lib or torch-sparse, and neither installs from the package "
               "registry's wheels (both publish theirs at data.pyg.org only)")
    small = dict(layers=2, hidden=16, epochs=200, lr=0.01, dropout=0.5, weight_decay=5e-4, wd_first_layer=True,
                 feature_norm="row")
    results = []
    with tempfile.TemporaryDirectory(prefix="compare-pyg-") as work:
        cases = [c for c in a.cases.split(",") if c]
        jobs = []
        if "cora" in cases:
            jobs.append(("cora", os.path.join(ROOT, "data", "cora"), "ogb", small, a.seeds or 10))
        for d in a.ogb:
            jobs.append((os.path.basename(os.path.normpath(d)), d, "ogb", small, a.seeds or 5))
        if "csbm" in cases:
            big = dict(layers=3, hidden=256, epochs=a.csbm_epochs, lr=0.005, dropout=0.5, weight_decay=5e-4, wd_first_layer=False,
                       feature_norm="none")
            jobs.append(("csbm", None, "csbm", big, a.seeds or 2))
        for name, src, kind, model, seeds in jobs:
            store = os.path.join(work, name + ".lmdb")
            npz = os.path.join(work, name + ".npz")
            if kind == "ogb":
                inca(a.inca, "ingest", "--format", "ogb", src, "--out", store, "--quiet")
            else:
                inca(a.inca, "gen", "--kind", "csbm", "--nodes", str(a.csbm_nodes), "--avg-degree", "20", "--features",
                     "64", "--classes", "8", "--homophily", "0.4", "--mean-scale", "1.0", "--seed", "0", "--out", store,
                     "--quiet")
            inca(a.inca, "export", store, npz, "--format", "npz")
            log(f"compare_pyg: {name}: same arrays for both ({npz})")
            res = run_case(a, py, name, store, npz, model, seeds, work)
            res["cluster_gcn"] = cluster
            if kind == "csbm":
                res["time_to_accuracy"] = time_to_accuracy(a, store, res, work)
            del res["_pyg_curves"]
            results.append(res)
            table(res, sys.stderr if a.json else sys.stdout)
    if a.json:
        for r in results:
            print(json.dumps(r))


if __name__ == "__main__":
    main()
