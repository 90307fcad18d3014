#!/usr/bin/env python3
"""Writes the -degraded copies of seed 004's rccl all_reduce and
ib_write_bw recordings.

rccl all_reduce: each result row of size >= 1 MiB gets its out-of-place
and in-place times doubled and its algbw and busbw halved (a node or NIC
running at half speed); "# Avg bus bandwidth" is recomputed over all rows
as rccl-tests does.
ib_write_bw (server and client): every row of the result table gets its BW
peak, BW average and MsgRate halved, each printed with the decimals it had
(an HCA, port or cable at half speed).
Everything else is the recording as it is.
Usage: python3 degrade.py  (from this folder)
"""
import os, re

SRC = "../mi355x-seed004"
for scope in ("singlenode", "multinode"):
    rel = f"{scope}/raw/rccl.all_reduce"
    os.makedirs(rel, exist_ok=True)
    out, busbws = [], []
    for line in open(f"{SRC}/{rel}/all_reduce.log"):
        f = line.split()
        if f and not line.startswith("#") and re.fullmatch(r"\d+", f[0]) and len(f) >= 13:
            if int(f[0]) >= 1 << 20:
                for i in (5, 9):  # time columns
                    f[i] = "%.2f" % (float(f[i]) * 2)
                for i in (6, 7, 10, 11):  # algbw, busbw
                    f[i] = "%.2f" % (float(f[i]) / 2)
            busbws += [float(f[7]), float(f[11])]
            line = " ".join(f) + "\n"
        elif line.startswith("# Avg bus bandwidth"):
            line = "# Avg bus bandwidth : %.3f\n" % (sum(busbws) / len(busbws))
        out.append(line)
    open(f"{rel}/all_reduce.log", "w").write("".join(out))
    src_json = open(f"{SRC}/{rel}/outputs.json").read()
    open(f"{rel}/outputs.json", "w").write(src_json)


def half(v):
    """v halved, printed with as many decimals as v has."""
    dec = len(v.split(".")[1]) if "." in v else 0
    return "%.*f" % (dec, float(v) / 2)


rel = "multinode/raw/ibperf.write_bw"
os.makedirs(rel, exist_ok=True)
for side in ("server.0", "client.0"):
    out, table = [], False
    for line in open(f"{SRC}/{rel}/{side}.log"):
        f = line.split()
        if line.startswith("#bytes"):
            table = True
        elif table and len(f) == 5 and re.fullmatch(r"\d+", f[0]):
            # #bytes #iterations BW peak[Gb/sec] BW average[Gb/sec] MsgRate[Mpps]
            f[2], f[3], f[4] = half(f[2]), half(f[3]), half(f[4])
            line = " ".join(f) + "\n"
        elif table and line.startswith("---"):
            table = False
        out.append(line)
    open(f"{rel}/{side}.log", "w").write("".join(out))
open(f"{rel}/outputs.json", "w").write(open(f"{SRC}/{rel}/outputs.json").read())
