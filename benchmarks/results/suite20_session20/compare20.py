"""Before/after tables from two go20.sh runs (their junit XML, plain or gzipped, and --durations logs):
python compare20.py before after [FOLDER] (FOLDER holds LOG20_* and junit_*.xml[.gz])."""
import collections
import gzip
import os
import re
import sys
import xml.etree.ElementTree as ET

A, B = sys.argv[1], sys.argv[2]
W = sys.argv[3] if len(sys.argv) > 3 else "./"


def junit(n):
    p = os.path.join(W, f"junit_{n}.xml")
    root = ET.parse(gzip.open(p + ".gz") if os.path.exists(p + ".gz") else open(p)).getroot()
    d = {}
    for tc in root.iter("testcase"):
        parts = tc.get("classname").split(".")
        f = "/".join(p for p in parts if not p[0].isupper()) + ".py"
        d[f + "::" + tc.get("name")] = float(tc.get("time", 0))
    return d


def durs(n):
    out = []
    txt = open(os.path.join(W, f"LOG20_{n}"), errors="replace").read()
    sec = txt.split("slowest 200 durations")[1].split("short test summary")[0]
    for ln in sec.splitlines():
        m = re.match(r"([\d.]+)s (call|setup|teardown)\s+(\S.*)$", ln.strip())
        if m:
            out.append((float(m.group(1)), m.group(2), m.group(3)))
    return out


def summary(n):
    txt = open(os.path.join(W, f"LOG20_{n}"), errors="replace").read()
    m = re.findall(r"=+ (.*(?:passed|failed).*) =+", txt)
    t = re.findall(r"total (\d+) s", txt)
    mt = re.findall(r"make test: (.*)", txt)
    wc = re.findall(r"wheel-check passed.*\(at (\d+) s\)", txt)
    return (m[-1] if m else "?"), (t[-1] if t else "?"), (mt[-1] if mt else "?"), (wc[-1] if wc else "not passed")


def files(j):
    d = collections.Counter()
    for k, v in j.items():
        d[k.split("::")[0]] += v
    return d


ja, jb = junit(A), junit(B)
print("| run | pytest summary | whole stop | make test CPU | wheel-check |\n|---|---|---|---|---|")
for n in (A, B):
    s, t, mt, wc = summary(n)
    print(f"| {n} | {s} | {t} s | {mt} | {wc} s |")
print(f"\nsum of per-test times (junit): {A} {sum(ja.values()):.0f} s, {B} {sum(jb.values()):.0f} s")
common = set(ja) & set(jb)
print(f"tests in both: {len(common)}; only {A}: {len(set(ja) - set(jb))}; only {B}: {len(set(jb) - set(ja))}")
print(f"on the common tests: {A} {sum(ja[k] for k in common):.0f} s, {B} {sum(jb[k] for k in common):.0f} s")
for k in sorted(set(jb) - set(ja)):
    print(f"  only {B}: {k}")
for k in sorted(set(ja) - set(jb)):
    print(f"  only {A}: {k}")
for n, dd in ((A, durs(A)), (B, durs(B))):
    other = jb if n == A else ja
    print(f"\n### The 20 slowest phases, {n} (--durations), with the test's junit time in the other run\n\n"
          f"| s | phase | test | other run (s, junit) |\n|---|---|---|---|")
    for d, ph, t in dd[:20]:
        print(f"| {d:.1f} | {ph} | {t} | {other.get(t, float('nan')):.1f} |")
fa, fb = files(ja), files(jb)
for n, f, g in ((A, fa, fb), (B, fb, fa)):
    print(f"\n### The 20 slowest files, {n} (sum of junit times), with the other run's\n\n| s | file | other run (s) |\n|---|---|---|")
    for k, v in f.most_common(20):
        print(f"| {v:.1f} | {k} | {g.get(k, float('nan')):.1f} |")
