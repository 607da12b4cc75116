#!/usr/bin/env python3
"""Pictures of inca's JSON outputs (issue 14), with Debian's python3-matplotlib (or pip's matplotlib):

    python3 scripts/plot.py curves METRICS.jsonl[=LABEL] ... --out curves.png
        train loss and validation / test accuracy per epoch (train --metrics files; every
        run of a file, one colour per file)
    python3 scripts/plot.py times RESULT.json[=LABEL] ... --out times.png
        epoch-time bars: bench epoch lines (per method: training steps, refresh, the rest)
        and bench/compare_peers.py lines (inca vs PyG and DGL per case, step and with evaluation)
    python3 scripts/plot.py budget PRUNE.json ... --out budget.png
        the pruning budget curve: coreset, random and full-data accuracy (mean ± std) against
        the kept fraction, from prune --eval --json lines (one per budget)
    python3 scripts/plot.py scale CURVE.jsonl ... --out scale.png
        seconds and peak anonymous memory of each stage against the node count, from
        scripts/scale_curve.py lines (issue 28)

--out defaults to KIND.png in the current folder. Every input line that is not a JSON object is
skipped; an input with none of the keys a kind needs is an error naming the file (exit 2), and so
is a missing matplotlib (one line saying how to get it; a python3 on PATH without it, a pyenv or
venv one, hands the run to Debian's /usr/bin/python3 when that one has it). tests/test_plot.c
renders each kind from small fixtures and checks the PNG and the missing-matplotlib line. Log axes
read as plain numbers (1, 2, 5, 10, 20, 50, 100); --dump-ticks prints the labels each axis drew,
one JSON line per axis, which the test reads.
"""
import argparse
import json
import os
import sys

DEBIAN_PYTHON = "/usr/bin/python3"   # where Debian's python3-matplotlib installs
REEXEC_ENV = "INCA_PLOT_FIRST_PYTHON"   # set when handed over: the interpreter that had no matplotlib


def die(msg):
    print(f"plot: {msg}", file=sys.stderr)
    sys.exit(2)


def pyplot():
    """matplotlib.pyplot on the Agg backend, or one line on stderr naming the missing package and
    how to get it (exit 2), not a traceback. `python3` on PATH is often not Debian's (pyenv, a
    venv) and lacks the python3-matplotlib that scripts/setup.sh installs: then this script runs
    again under /usr/bin/python3, once, so the README's `python3 scripts/plot.py ...` works."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        return plt
    except ImportError as e:
        why = " ".join(str(e).split()) or type(e).__name__   # one line, whatever the message
        first = os.environ.get(REEXEC_ENV)
        if first is None and os.path.realpath(sys.executable) != os.path.realpath(DEBIAN_PYTHON) \
                and os.access(DEBIAN_PYTHON, os.X_OK):
            os.environ[REEXEC_ENV] = sys.executable or "python3"
            try:
                os.execv(DEBIAN_PYTHON, [DEBIAN_PYTHON, os.path.abspath(__file__)] + sys.argv[1:])
            except OSError:
                pass   # not runnable after all: the message below
        tried = f"{first} and {sys.executable}" if first else sys.executable
        die(f"matplotlib is missing: `import matplotlib` failed under {tried} ({why}); install Debian's "
            f"python3-matplotlib (apt-get install python3-matplotlib, for {DEBIAN_PYTHON}) or pip's matplotlib "
            f"(python3 -m pip install matplotlib)")


def pct(v):
    """100 v, or None (matplotlib leaves a gap) for a null: a NaN the JSON writer wrote as null"""
    return None if v is None else 100 * v


def lines(spec):
    # FILE=LABEL: the whole spec when it names a file, else the first "=" after which the left
    # side names a file (file names and labels may both hold "=": "lr=0.01.jsonl=again",
    # "a.jsonl=lr=0.01"), else the first "="
    path, label = spec, ""
    if not os.path.exists(spec):
        cuts = [i for i, ch in enumerate(spec) if ch == "="]
        at = next((i for i in cuts if os.path.exists(spec[:i])), cuts[0] if cuts else None)
        if at is not None:
            path, label = spec[:at], spec[at + 1:]
    out = []
    try:
        with open(path) as f:
            for ln in f:
                ln = ln.strip()
                if ln.startswith("{"):
                    try:
                        out.append(json.loads(ln))
                    except json.JSONDecodeError:
                        pass
    except OSError as e:
        die(f"{path}: {e.strerror}")
    return path, label or path.rsplit("/", 1)[-1], out


def curves(ax_pair, specs):
    ax_loss, ax_acc = ax_pair
    for i, spec in enumerate(specs):
        path, label, rows = lines(spec)
        rows = [r for r in rows if "epoch" in r and "train_loss" in r]
        if not rows:
            die(f"{path}: no metrics lines (run, epoch, train_loss, ...): expected a train --metrics file")
        colour = f"C{i % 10}"
        for run in sorted({r.get("run", 0) for r in rows}):
            rr = sorted((r for r in rows if r.get("run", 0) == run), key=lambda r: r["epoch"])
            ep = [r["epoch"] + 1 for r in rr]
            first = run == min(r.get("run", 0) for r in rows)
            ax_loss.plot(ep, [r["train_loss"] for r in rr], color=colour, lw=1, label=label if first else None)
            ax_acc.plot(ep, [pct(r.get("val_acc")) for r in rr], color=colour, lw=1, label=f"{label} val" if first else None)
            ax_acc.plot(ep, [pct(r.get("test_acc")) for r in rr], color=colour, lw=1, ls="--",
                        label=f"{label} test" if first else None)
    ax_loss.set_xlabel("epoch")
    ax_loss.set_ylabel("training loss")
    ax_loss.legend(fontsize=7)
    ax_acc.set_xlabel("epoch")
    ax_acc.set_ylabel("accuracy (%)")
    ax_acc.legend(fontsize=7)


def times(ax, specs):
    names, parts = [], {}
    for spec in specs:
        path, label, rows = lines(spec)
        got = False
        for r in rows:
            peers = [t for t in ("pyg", "dgl") if f"{t}_epoch_time_s" in r]
            if "inca_epoch_time_s" in r and peers:   # compare_peers (compare_pyg's lines too)
                for tool in ["inca"] + peers:
                    names.append(f"{r.get('case', label)}\n{ {'pyg': 'PyG', 'dgl': 'DGL'}.get(tool, 'inca') }")
                    step = r[f"{tool}_step_time_s"]
                    parts.setdefault("training step", []).append(1e3 * step)
                    parts.setdefault("evaluation and rest", []).append(1e3 * (r[f"{tool}_epoch_time_s"] - step))
                    parts.setdefault("refresh", []).append(0.0)
                got = True
            elif "epoch_time_s" in r and "step_time_per_epoch_s" in r:   # bench epoch
                tag = r.get("method", "?") + (f" R={r['refresh_epochs']}" if "refresh_epochs" in r else "")
                names.append(f"{label}\n{tag}")
                st, rf = r["step_time_per_epoch_s"], r.get("refresh_time_per_epoch_s", 0.0)
                parts.setdefault("training step", []).append(1e3 * st)
                parts.setdefault("refresh", []).append(1e3 * rf)
                parts.setdefault("evaluation and rest", []).append(1e3 * max(r["epoch_time_s"] - st - rf, 0.0))
                got = True
        if not got:
            die(f"{path}: no bench epoch or compare_peers lines (epoch_time_s with step_time_per_epoch_s, or "
                f"inca_ with pyg_ or dgl_epoch_time_s)")
    bottom = [0.0] * len(names)
    for k in ("training step", "refresh", "evaluation and rest"):
        v = parts.get(k, [0.0] * len(names))
        ax.bar(range(len(names)), v, bottom=bottom, label=k)
        bottom = [b + x for b, x in zip(bottom, v)]
    ax.set_xticks(range(len(names)))
    ax.set_xticklabels(names, fontsize=7)
    ax.set_ylabel("ms per epoch")
    if max(bottom) > 20 * max(min(bottom), 1e-9):
        plain_log(ax, "y")
    ax.legend(fontsize=7)


def plain_log(axis, which="x"):
    """A log scale whose ticks read as plain numbers (1, 2, 5, 10, 20, 50, 100), not matplotlib's
    default 10^1 and 2x10^1 (issue 31 item 12)."""
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter
    (axis.set_xscale if which == "x" else axis.set_yscale)("log")
    a = axis.xaxis if which == "x" else axis.yaxis
    a.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0), numticks=12))
    a.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
    a.set_minor_formatter(NullFormatter())


def budget(ax, specs):
    pts = []
    for spec in specs:
        path, _, rows = lines(spec)
        rows = [r for r in rows if "keep" in r and "coreset_acc" in r]
        if not rows:
            die(f"{path}: no prune --eval lines (keep, coreset_acc, random_acc, ...)")
        pts += rows
    pts.sort(key=lambda r: r["keep"])
    for key, label in (("coreset_acc", "coreset"), ("random_acc", "random")):
        # a series prune did not evaluate (--eval-sets coreset: random_acc null) is left out
        ser = [r for r in pts if r.get(key) is not None]
        if not ser:
            continue
        ax.errorbar([100 * r["keep"] for r in ser], [100 * r[key] for r in ser],
                    yerr=[100 * (r.get(key + "_std") or 0) for r in ser], marker="o", capsize=3, label=label)
    full = [r for r in pts if r.get("full_acc") is not None]
    if full:
        ax.axhline(100 * full[0]["full_acc"], color="k", ls=":", label="full data")
    plain_log(ax, "x")
    ax.set_xlabel("kept (%)")
    ax.set_ylabel("target test accuracy (%)")
    ax.legend(fontsize=8)


def scale(ax_pair, specs):
    """scripts/scale_curve.py lines: seconds and peak anonymous memory per stage against nodes"""
    rows = []
    for spec in specs:
        path, _, got = lines(spec)
        got = [r for r in got if "stage" in r and "nodes" in r and r.get("ok")]
        if not got:
            die(f"{path}: no scale_curve lines (nodes, stage, seconds, ...)")
        rows += got
    stages = []
    for r in rows:
        if r["stage"] not in stages:
            stages.append(r["stage"])
    for key, ax, label in (("seconds", ax_pair[0], "seconds"), ("peak_rss_anon_mb", ax_pair[1], "peak anonymous MiB")):
        for st in stages:
            pts = sorted((r["nodes"], r[key]) for r in rows if r["stage"] == st and r.get(key) is not None)
            if pts:
                ax.plot([p[0] / 1e6 for p in pts], [p[1] for p in pts], marker="o", label=st)
        plain_log(ax, "x")
        plain_log(ax, "y")
        ax.set_xlabel("nodes (millions)")
        ax.set_ylabel(label)
        ax.legend(fontsize=7)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("kind", choices=["curves", "times", "budget", "scale"])
    p.add_argument("inputs", nargs="+", help="JSON / JSON Lines files, each optionally FILE=LABEL")
    p.add_argument("--out", default=None, help="the PNG to write (default: KIND.png)")
    p.add_argument("--title", default=None)
    p.add_argument("--dump-ticks", action="store_true",
                   help="also print each axis's tick labels as drawn, one JSON line per axis (tests)")
    a = p.parse_args()
    a.out = a.out or f"{a.kind}.png"
    plt = pyplot()
    if a.kind in ("curves", "scale"):
        fig, axes = plt.subplots(1, 2, figsize=(10, 4))
        (curves if a.kind == "curves" else scale)(axes, a.inputs)
    else:
        fig, ax = plt.subplots(figsize=(7, 4))
        (times if a.kind == "times" else budget)(ax, a.inputs)
    if a.title:
        fig.suptitle(a.title)
    fig.tight_layout()
    fig.savefig(a.out, dpi=100)
    if a.dump_ticks:   # after the draw savefig made: the labels the picture shows
        for i, ax in enumerate(fig.axes):
            for name, axis in (("x", ax.xaxis), ("y", ax.yaxis)):
                lo, hi = sorted(axis.get_view_interval())
                shown = [t.get_text() for v, t in zip(axis.get_majorticklocs(), axis.get_ticklabels())
                         if lo <= v <= hi and t.get_text()]
                print(json.dumps({"axes": i, "axis": name, "scale": axis.get_scale(), "labels": shown}))
    print(a.out)


if __name__ == "__main__":
    main()
