#!/usr/bin/env python3
"""Writes tests/data/bad/: one malformed input per entry for `inca ingest`, named
<format>-<what>[.ext] so the test can derive --format from the prefix (npy-*: index files,
passed to `inca train --train-indices`). The expected error
(file and line) of every entry is listed in tests/test_e2e_ingest.c; an entry without an
expectation there fails the test. Re-run after editing: python3 tests/data/make_bad_catalogue.py
Deterministic (gzip mtime 0, fixed random seed)."""
import gzip
import os
import random
import shutil
import struct

HERE = os.path.dirname(os.path.abspath(__file__))
BAD = os.path.join(HERE, "bad")

# A valid 4-node OGB dataset; each entry overrides some files.
OGB_OK = {
    "raw/num-node-list.csv": "4\n",
    "raw/num-edge-list.csv": "3\n",
    "raw/edge.csv": "0,1\n1,2\n2,3\n",
    "raw/node-feat.csv": "0.5,1\n0,0.25\n1,0\n0,0\n",
    "raw/node-label.csv": "0\n1\n1\n0\n",
    "split/public/train.csv": "0\n1\n",
    "split/public/valid.csv": "2\n",
    "split/public/test.csv": "3\n",
}


def write(path, data, mode="w"):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, mode) as f:
        f.write(data)


def gz_bytes(text):
    return gzip.compress(text.encode(), compresslevel=9, mtime=0)


def ogb(name, drop=(), **files):
    root = os.path.join(BAD, "ogb-" + name)
    content = dict(OGB_OK)
    for k in drop:
        del content[k]
    for k, v in files.items():
        content[k.replace("__", "/").replace("_", "-") + ".csv"] = v
    for rel, text in content.items():
        if isinstance(text, bytes):
            write(os.path.join(root, rel), text, "wb")
        else:
            write(os.path.join(root, rel), text)


def idx_bytes(magic, dims, payload):
    return struct.pack(">I", magic) + b"".join(struct.pack(">I", d) for d in dims) + bytes(payload)


def idx(name, tr_img=None, tr_lab=None, te_img=None, te_lab=None, skip=()):
    root = os.path.join(BAD, "idx-" + name)
    os.makedirs(root, exist_ok=True)
    img = lambda n: idx_bytes(0x803, (n, 2, 2), range(4 * n))
    lab = lambda n: idx_bytes(0x801, (n,), [i % 3 for i in range(n)])
    files = {
        "train-images-idx3-ubyte": tr_img if tr_img is not None else img(3),
        "train-labels-idx1-ubyte": tr_lab if tr_lab is not None else lab(3),
        "t10k-images-idx3-ubyte": te_img if te_img is not None else img(2),
        "t10k-labels-idx1-ubyte": te_lab if te_lab is not None else lab(2),
    }
    for k, v in files.items():
        if k not in skip:
            write(os.path.join(root, k), v, "wb")


def csv(name, **files):
    root = os.path.join(BAD, "csv-" + name)
    os.makedirs(root, exist_ok=True)
    for k, v in files.items():
        write(os.path.join(root, k + ".csv"), v)


def main():
    # store-* entries are fuzzer-found store records kept by hand (tests/test_fuzz_regress.c)
    keep = {e: open(os.path.join(BAD, e), "rb").read() for e in os.listdir(BAD) if e.startswith("store-")} \
        if os.path.isdir(BAD) else {}
    shutil.rmtree(BAD, ignore_errors=True)
    os.makedirs(BAD)
    for e, data in keep.items():
        write(os.path.join(BAD, e), data, "wb")
    # ---- ogb ----
    ogb("ragged-feat", raw__node_feat="0.5,1\n0,0.25\n1\n0,0\n")
    ogb("nonnumber-feat", raw__node_feat="0.5,1\n0,abc\n1,0\n0,0\n")
    ogb("nan-feat", raw__node_feat="0.5,1\nnan,0\n1,0\n0,0\n")
    ogb("feat-missing-rows", raw__node_feat="0.5,1\n0,0.25\n1,0\n")
    ogb("edge-out-of-range", raw__edge="0,1\n1,9\n2,3\n")
    ogb("negative-id", raw__edge="-1,2\n1,2\n2,3\n")
    ogb("edge-one-column", raw__edge="0,1\n1 2\n2,3\n")
    ogb("edge-count-disagrees", raw__num_edge_list="5\n")
    ogb("edge-extra-lines", raw__num_edge_list="2\n")
    ogb("node-count-disagrees", raw__num_node_list="5\n")
    ogb("empty-node-count", raw__num_node_list="")
    ogb("two-edge-counts", raw__num_edge_list="3\n4\n")
    ogb("bad-label", raw__node_label="0\nabc\n1\n0\n")
    ogb("negative-label", raw__node_label="0\n1\n-3\n0\n")
    ogb("split-out-of-range", split__public__test="3\n7\n")
    ogb("split-duplicate", split__public__train="0\n0\n")
    ogb("missing-node-count", drop=("raw/num-node-list.csv",))
    rng = random.Random(0)
    lines = "".join("%d,%d\n" % (rng.randrange(100), rng.randrange(100)) for _ in range(4000))
    data = gz_bytes(lines)
    ogb("truncated-gz", drop=("raw/edge.csv", "raw/node-feat.csv", "raw/node-label.csv", "split/public/train.csv",
                              "split/public/valid.csv", "split/public/test.csv"),
        raw__num_node_list="100\n", raw__num_edge_list="4000\n")
    write(os.path.join(BAD, "ogb-truncated-gz/raw/edge.csv.gz"), data[: len(data) // 2], "wb")
    ogb("huge-node-count", raw__num_node_list="2000000000\n")
    ogb("huge-edge-count", raw__num_edge_list="1000000000000\n")
    # ---- edgelist ----
    write(os.path.join(BAD, "edgelist-nonnumber.txt"), "# src dst\n0 1\n1 x\n")
    write(os.path.join(BAD, "edgelist-negative-id.txt"), "% comment\n-4 2\n")
    write(os.path.join(BAD, "edgelist-one-column.txt"), "0 1\n5\n")
    write(os.path.join(BAD, "edgelist-id-too-large.txt"), "0 1\n1 99999999999\n")
    write(os.path.join(BAD, "edgelist-empty.txt"), "")
    lines = "".join("%d\t%d\n" % (rng.randrange(1000), rng.randrange(1000)) for _ in range(4000))
    data = gz_bytes(lines)
    write(os.path.join(BAD, "edgelist-truncated.txt.gz"), data[: len(data) * 2 // 3], "wb")
    write(os.path.join(BAD, "edgelist-corrupt.txt.gz"), data[:40] + bytes(b ^ 0x5A for b in data[40:80]) + data[80:], "wb")
    # ---- metis ----
    write(os.path.join(BAD, "metis-bad-count.graph"), "% triangle with a wrong m\n3 3\n2 3\n1\n1\n")
    write(os.path.join(BAD, "metis-out-of-range.graph"), "3 2\n2\n1 5\n\n")
    write(os.path.join(BAD, "metis-zero-id.graph"), "3 1\n2\n0\n\n")
    write(os.path.join(BAD, "metis-too-few-lines.graph"), "4 2\n2\n1 3\n2\n")
    write(os.path.join(BAD, "metis-too-many-lines.graph"), "2 1\n2\n1\n1\n")
    write(os.path.join(BAD, "metis-bad-header.graph"), "three 2\n2\n1\n")
    write(os.path.join(BAD, "metis-bad-fmt.graph"), "2 1 2\n2\n1\n")
    write(os.path.join(BAD, "metis-missing-weight.graph"), "3 2 1\n2 5\n1 5 3\n2\n")
    write(os.path.join(BAD, "metis-nonnumber.graph"), "3 2\n2\n1 3x\n2\n")
    write(os.path.join(BAD, "metis-asymmetric.graph"), "% 2 lists 3, but 3 lists only 1\n3 2\n2\n1 3\n1\n% end\n")
    write(os.path.join(BAD, "metis-huge-n.graph"), "1000000000000 1\n2\n1\n")
    write(os.path.join(BAD, "metis-huge-m.graph"), "2 1000000000000\n2\n1\n")
    write(os.path.join(BAD, "metis-huge-n-fuzz.graph"), "1111222222 5 \n")   # found by fuzz_metis
    # ---- idx ----
    idx("bad-magic", tr_img=idx_bytes(0x804, (3, 2, 2), range(12)))
    # found by fuzz_idx: 2^32-1 x 2^32-1 pixels overflowed the declared-size check
    idx("huge-dims", tr_img=idx_bytes(0x803, (3, 0xFFFFFFFF, 0xFFFFFFFF), range(12)))
    idx("count-mismatch", tr_lab=idx_bytes(0x801, (4,), [0, 1, 2, 0]))
    idx("short-data", te_img=idx_bytes(0x803, (2, 2, 2), range(5)))
    idx("trailing-bytes", te_lab=idx_bytes(0x801, (2,), [1, 2, 3]))
    idx("size-mismatch", te_img=idx_bytes(0x803, (2, 3, 2), range(12)))
    idx("missing-test", skip=("t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte"))
    te28 = idx_bytes(0x803, (2, 28, 28), [i % 256 for i in range(2 * 784)])
    idx("huge-count", tr_img=idx_bytes(0x803, (0xFFFFFFFF, 28, 28), range(16)),
        tr_lab=idx_bytes(0x801, (0xFFFFFFFF,), [0, 1, 2]), te_img=te28)
    idx("huge-count-gz", skip=("train-images-idx3-ubyte",), tr_lab=idx_bytes(0x801, (0xFFFFFFFF,), [0, 1, 2]),
        te_img=te28)
    write(os.path.join(BAD, "idx-huge-count-gz/train-images-idx3-ubyte.gz"),
          gzip.compress(idx_bytes(0x803, (0xFFFFFFFF, 28, 28), range(16)), compresslevel=9, mtime=0), "wb")
    # ---- npy (index files: read by train --train-indices, prune --labeled-indices) ----
    hdr = "{'descr': '<i8', 'fortran_order': False, 'shape': (1000000000000,), }"
    hdr += " " * ((64 - (10 + len(hdr) + 1) % 64) % 64) + "\n"
    write(os.path.join(BAD, "npy-huge-rows.npy"),
          b"\x93NUMPY\x01\x00" + struct.pack("<H", len(hdr)) + hdr.encode() + struct.pack("<q", 7), "wb")
    # ---- csv ----
    csv("ragged", train="0,1,2\n1,3,4\n", test="0,1,2\n1,3\n")
    csv("nonnumber", train="0,1,2\n1,0.5,zz\n", test="0,1,2\n")
    csv("bad-label", train="cat,1,2\n", test="0,1,2\n")
    csv("missing-test", train="0,1,2\n")
    csv("only-label", train="0\n", test="1\n")


if __name__ == "__main__":
    main()
