#!/usr/bin/env python3
"""The cost curve of the stages before training, and of one IncAgg epoch (issue 28).

For each size (nodes) in --sizes: gen (csbm, avg degree 20, 128 features, 8 classes, homophily
0.4) -> partition with METIS -> with inca's label propagation (--method lp) -> with ParMETIS
(PT-Scotch, --ranks ranks) -> the
partition-ordered layout (features and M^0) -> one IncAgg epoch (GCN 3 x 128, --loader view,
--memory-budget). Every stage is its own process (mpiexec's for ParMETIS). One JSON line per size
and stage goes to stdout (and to OUT/curve.jsonl): the stage's wall seconds, inca's own peak
anonymous and file-backed memory (for ParMETIS the largest rank's, and every rank's), the size
of the data the stage holds, the bytes it read and wrote to the block device (getrusage of the
waited children, 512-byte blocks) and the stage's own figures from inca's --json line.

A stage already done for a size (its line in OUT/curve.jsonl) is skipped, so a killed curve
resumes; a stage that fails is written with "ok": false and the sizes after it go on.

    python3 scripts/scale_curve.py --sizes 1000000,2000000 --out /tmp/curve [--inca build/inca]
    python3 scripts/plot.py scale /tmp/curve/curve.jsonl   # the figure
"""
import argparse
import json
import os
import resource
import subprocess
import sys
import time


def run_stage(cmd, env):
    """Runs cmd; returns (rc, seconds, last JSON line or None, stderr tail, read bytes, written bytes)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.monotonic()
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    secs = time.monotonic() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    last = None
    for line in p.stdout.splitlines():
        line = line.strip()
        if line.startswith("{"):
            try:
                last = json.loads(line)
            except json.JSONDecodeError:
                pass
    return (p.returncode, secs, last, p.stderr.strip().splitlines()[-3:],
            (after.ru_inblock - before.ru_inblock) * 512, (after.ru_oublock - before.ru_oublock) * 512)


def data_bytes(stage, n, edges, f, tsize, hidden=128):
    """What the stage must hold by its nature: edges (rowptr i64 + col i32), features f32, M^0
    (tsize bytes a value), and for the epoch IncAgg's tables (M and S at the two hidden layers of
    a 3-layer GCN, tsize bytes a value)."""
    graph = 8 * (n + 1) + 4 * edges
    feats = 4 * n * f
    m0 = tsize * n * f
    tables = 4 * tsize * n * hidden
    return {"gen": graph + feats, "metis": graph, "lp": graph, "parmetis": graph, "layout": graph + feats + m0,
            "epoch": graph + feats + m0 + tables}.get(stage, 0)


def stages(a, store, n):
    part = ["partition", store, "--parts", str(a.parts), "--seed", "0", "--json", "--quiet"]
    return [
        ("gen", ["gen", "--kind", "csbm", "--nodes", str(n), "--avg-degree", "20", "--features", str(a.features),
                 "--classes", "8", "--homophily", "0.4", "--seed", "0", "--out", store, "--json", "--quiet"]),
        ("metis", part + ["--method", "metis", "--no-layout"]),
        ("lp", part + ["--method", "lp", "--no-layout"]),
        ("parmetis", part + ["--method", "parmetis", "--ranks", str(a.ranks), "--no-layout"]),
        ("layout", part + ["--method", "metis", "--history-dtype", a.history_dtype]
         + (["--rebuild-layout"] if a.rebuild_layout else [])),
        ("epoch", ["train", store, "--method", "incagg", "--model", "gcn", "--layers", "3", "--hidden", "128",
                   "--lr", "0.005", "--parts", str(a.parts), "--batch-parts", str(a.batch_parts), "--epochs",
                   str(a.epochs), "--loader", "view", "--memory-budget", a.memory_budget, "--threads", str(a.threads),
                   "--history-dtype", a.history_dtype,
                   "--seed", "0", "--json", "--quiet"]),
    ]


def stage_figures(stage, j):
    """The stage's own figures from its JSON line."""
    keys = {"gen": ["edges", "gen_s", "write_s", "threads"],
            "metis": ["edge_cut", "balance", "partition_time_s", "reused"],
            "lp": ["edge_cut", "balance", "partition_time_s", "reused"],
            "parmetis": ["edge_cut", "balance", "partition_time_s", "reused", "ranks", "rank_peak_rss_anon_mb"],
            "layout": ["layout_time_s", "layout_x_written", "layout_m0_written", "layout_adj_written"],
            "epoch": ["test_acc", "epoch_time_s", "loader_wait_s", "loader_wait_fraction", "refresh_time_s",
                      "train_time_per_epoch_s"]}[stage]
    return {k: j[k] for k in keys if j and k in j}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sizes", default="1000000,2000000,5000000,10000000")
    ap.add_argument("--out", required=True, help="folder for the stores and curve.jsonl")
    ap.add_argument("--inca", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "build", "inca"))
    ap.add_argument("--parts", type=int, default=256)
    ap.add_argument("--batch-parts", type=int, default=32)
    ap.add_argument("--ranks", type=int, default=2)
    ap.add_argument("--features", type=int, default=128)
    ap.add_argument("--epochs", type=int, default=1)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--memory-budget", default="16G")
    ap.add_argument("--history-dtype", default="fp32", choices=["fp32", "bf16"], help="M^0's and the tables'")
    ap.add_argument("--stages", default="gen,metis,lp,parmetis,layout,epoch")
    ap.add_argument("--rebuild-layout", action="store_true", help="layout stage: write the layout again when it exists")
    ap.add_argument("--keep", action="store_true", help="keep each size's store (default: removed after its epoch)")
    a = ap.parse_args()
    # one-line errors for what would otherwise be a traceback mid-curve
    if not (os.path.isfile(a.inca) and os.access(a.inca, os.X_OK)):
        sys.exit(f"scale_curve: --inca {a.inca}: no executable there (build first)")
    try:
        sizes = [int(x) for x in a.sizes.split(",")]
    except ValueError:
        sys.exit(f"scale_curve: --sizes {a.sizes}: expected node counts separated by commas (1000000,2000000)")
    os.makedirs(a.out, exist_ok=True)
    log = os.path.join(a.out, "curve.jsonl")
    done, edges_of = set(), {}
    if os.path.exists(log):
        for line in open(log):
            if not line.strip():
                continue
            r = json.loads(line)
            if r.get("ok"):
                done.add((r["nodes"], r["stage"]))
                if r["stage"] == "gen":
                    edges_of[r["nodes"]] = r.get("edges")
    env = dict(os.environ, OMPI_MCA_rmaps_base_oversubscribe="1")
    want = a.stages.split(",")
    failed = 0
    for n in sizes:
        store = os.path.join(a.out, "csbm-%d.lmdb" % n)
        epoch_ok = False
        edges = edges_of.get(n)
        for stage, args in stages(a, store, n):
            if stage not in want or (n, stage) in done:
                epoch_ok = epoch_ok or (stage == "epoch" and (n, stage) in done)
                continue
            rc, secs, j, err, rd, wr = run_stage([a.inca] + args, env)
            if stage == "gen" and j:
                edges = j.get("edges")
            rec = {"nodes": n, "stage": stage, "ok": rc == 0, "seconds": round(secs, 3),
                   "peak_rss_anon_mb": j.get("peak_rss_anon_mb") if j else None,
                   "peak_rss_file_mb": j.get("peak_rss_file_mb") if j else None,
                   "data_mb": round(data_bytes(stage, n, edges, a.features, 2 if a.history_dtype == "bf16" else 4) / 2**20, 1)
                   if edges else None, "history_dtype": a.history_dtype,
                   "read_bytes": rd, "written_bytes": wr}
            if stage == "parmetis" and j and j.get("rank_peak_rss_anon_mb"):
                rec["peak_rss_anon_mb"] = max(j["rank_peak_rss_anon_mb"])
            rec.update(stage_figures(stage, j))
            if rc != 0:
                rec["error"] = " | ".join(err)
                failed += 1
            elif stage == "epoch":
                epoch_ok = True
            line = json.dumps(rec)
            print(line, flush=True)
            with open(log, "a") as f:
                f.write(line + "\n")
        # the store goes once its epoch ran (a failed epoch keeps it: a rerun resumes there,
        # where gen and the partitions count as done)
        if not a.keep and epoch_ok and os.path.isdir(store):
            subprocess.run(["rm", "-rf", store])
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
