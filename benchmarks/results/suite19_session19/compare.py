"""Before/after tables from two go19.sh runs (their gzipped junit XML and --durations logs):
python compare.py before after2 (run in the folder that holds LOG19_* and junit_*.xml)."""
import collections
import gzip
import re
import sys
import xml.etree.ElementTree as ET

A, B = sys.argv[1], sys.argv[2]
W = sys.argv[3] if len(sys.argv) > 3 else "./"


def junit(n):
    d = {}
    for tc in ET.parse(gzip.open(W + f"junit_{n}.xml.gz")).getroot().iter("testcase"):
        parts = tc.get("classname").split(".")
        f = "/".join(p for p in parts if not p[0].isupper()) + ".py"
        d[f + "::" + tc.get("name")] = float(tc.get("time", 0))
    return d


def durs(n):
    out = []
    txt = open(W + f"LOG19_{n}", errors="replace").read()
    sec = txt.split("slowest 200 durations")[1].split("short test summary")[0]
    for ln in sec.splitlines():
        m = re.match(r"([\d.]+)s (call|setup|teardown)\s+(\S.*)$", ln.strip())
        if m:
            out.append((float(m.group(1)), m.group(2), m.group(3)))
    return out


def summary(n):
    txt = open(W + f"LOG19_{n}", errors="replace").read()
    m = re.findall(r"=+ (.*(?:passed|failed).*) =+", txt)
    t = re.findall(r"total (\d+) s", txt)
    return (m[-1] if m else "?"), (t[-1] if t else "?")


ja, jb = junit(A), junit(B)
print("| run | pytest summary | whole stop |\n|---|---|---|")
for n in (A, B):
    s, t = summary(n)
    print(f"| {n} | {s} | {t} s |")
print(f"\nsum of per-test times (junit): {A} {sum(ja.values()):.0f} s, {B} {sum(jb.values()):.0f} s")
print(f"tests in both: {len(set(ja) & set(jb))}; only {A}: {len(set(ja) - set(jb))}; only {B}: {len(set(jb) - set(ja))}")
files = collections.Counter(k.split("::")[0] for k in set(jb) - set(ja))
for f, c in sorted(files.items()):
    print(f"  only {B}: {f} ({c})")
for n, dd in ((A, durs(A)), (B, durs(B))):
    other = jb if n == A else ja
    print(f"\n20 slowest phases, {n}:\n\n| s | phase | test | other run (s, junit total) |\n|---|---|---|---|")
    for d, ph, t in dd[:20]:
        print(f"| {d:.1f} | {ph} | {t} | {other.get(t, float('nan')):.1f} |")
