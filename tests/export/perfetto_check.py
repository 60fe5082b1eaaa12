#!/usr/bin/env python3
"""tests/export: `scaleprof export`'s Perfetto trace (the default format)
against what the traces hold, the same checks as the JSON timeline's.

    perfetto_check.py CASE   (environment: SCALEPROF_BIN, GEN_TRACE)

The trace is read twice, independently of the writer: `protoc
--decode_raw` (no schema: it only knows the wire format) must parse it
whole, and a small decoder here, which knows the Perfetto field numbers,
turns its packets back into the JSON timeline's events (a slice is its
begin and end packets paired on their track), so that check.py's
counts per rank and track, and its wait/transfer and arrow checks, run
on it unchanged.  The two readings must agree on every packet's event
type and track.
"""
import collections
import json
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import check  # noqa: E402  (the JSON timeline's checks)
from check import fail, gen, scaleprof, Failure  # noqa: E402

# Perfetto's field numbers (protos/perfetto/trace/...)
TRACE_PACKET = 1
PKT_TIMESTAMP, PKT_SEQ_ID, PKT_TRACK_EVENT, PKT_INTERNED, PKT_FLAGS, PKT_TRACK_DESC = 8, 10, 11, 12, 13, 60
TD_UUID, TD_NAME, TD_PROCESS, TD_PARENT, TD_COUNTER = 1, 2, 3, 5, 8
PD_PID, PD_NAME = 1, 6
TE_CATS, TE_ANN, TE_TYPE, TE_NAME_IID, TE_TRACK, TE_NAME = 3, 4, 9, 10, 11, 23
TE_DCOUNTER, TE_FLOWS, TE_TFLOWS = 44, 47, 48
DA_NAME_IID, DA_BOOL, DA_UINT, DA_INT, DA_DOUBLE, DA_STRING = 1, 2, 3, 4, 5, 6
ID_CATS, ID_NAMES, ID_ANN_NAMES = 1, 2, 3
BEGIN, END, INSTANT, COUNTER = 1, 2, 3, 4
SEQ_CLEARED, SEQ_NEEDS = 1, 2


def varint(b, i):
    v = shift = 0
    while True:
        c = b[i]
        i += 1
        v |= (c & 0x7F) << shift
        shift += 7
        if c < 0x80:
            return v, i


def fields(b):
    """[(field, value)] of one message: ints, bytes, or 8-byte raw."""
    out, i = [], 0
    while i < len(b):
        tag, i = varint(b, i)
        f, wt = tag >> 3, tag & 7
        if wt == 0:
            v, i = varint(b, i)
        elif wt == 1:
            v, i = b[i:i + 8], i + 8
        elif wt == 2:
            n, i = varint(b, i)
            v, i = b[i:i + n], i + n
        elif wt == 5:
            v, i = b[i:i + 4], i + 4
        else:
            fail("wire type %d at byte %d" % (wt, i))
        if i > len(b):
            fail("message runs past its end")
        out.append((f, v))
    return out


def one(fs, f, default=None):
    vs = [v for k, v in fs if k == f]
    return vs[-1] if vs else default


def signed(v):
    return v - (1 << 64) if v >= 1 << 63 else v


class PerfettoTrace:
    """The packets of a trace, decoded: tracks, events with names and
    annotations resolved, and the JSON timeline's view of them."""

    def __init__(self, data):
        self.packets = [fields(p) for f, p in fields(data) if f == TRACE_PACKET]
        if len(self.packets) != sum(1 for f, _ in fields(data)):
            fail("a top-level field other than packet")
        names, cats, anns = {}, {}, {}
        self.tracks = {}  # uuid -> dict(name, parent, pid, counter)
        self.events = []  # (type, track, ts, name, cat, args, flows, tflows)
        for n, p in enumerate(self.packets):
            if one(p, PKT_SEQ_ID) != 1:
                fail("packet %d is not on sequence 1" % n)
            flags = one(p, PKT_FLAGS)
            if flags != (SEQ_CLEARED if n == 0 else SEQ_NEEDS):
                fail("packet %d: sequence flags %s" % (n, flags))
            for f, v in p:
                if f != PKT_INTERNED:
                    continue
                for kind, e in fields(v):
                    ef = fields(e)
                    table = {ID_CATS: cats, ID_NAMES: names, ID_ANN_NAMES: anns}.get(kind)
                    if table is not None:
                        iid = one(ef, 1)
                        if iid in table:
                            fail("iid %d interned twice" % iid)
                        table[iid] = one(ef, 2).decode()
            td = one(p, PKT_TRACK_DESC)
            if td is not None:
                tf = fields(td)
                proc = one(tf, TD_PROCESS)
                t = {"name": one(tf, TD_NAME, b"").decode(), "parent": one(tf, TD_PARENT),
                     "pid": one(fields(proc), PD_PID) if proc is not None else None,
                     "counter": one(tf, TD_COUNTER) is not None}
                self.tracks[one(tf, TD_UUID)] = t
            te = one(p, PKT_TRACK_EVENT)
            if te is None:
                continue
            ef = fields(te)
            args = {}
            for k, a in ef:
                if k != TE_ANN:
                    continue
                af = fields(a)
                key = anns[one(af, DA_NAME_IID)]
                for vk, vv in af:
                    if vk == DA_UINT:
                        args[key] = vv
                    elif vk == DA_INT:
                        args[key] = signed(vv)
                    elif vk == DA_BOOL:
                        args[key] = bool(vv)
                    elif vk == DA_DOUBLE:
                        args[key] = struct.unpack("<d", vv)[0]
                    elif vk == DA_STRING:
                        args[key] = vv.decode()
            name = one(ef, TE_NAME)
            name = name.decode() if name is not None else names.get(one(ef, TE_NAME_IID))
            if one(ef, TE_NAME_IID) is not None and one(ef, TE_NAME_IID) not in names:
                fail("packet %d: name iid %d never interned" % (n, one(ef, TE_NAME_IID)))
            cat = cats.get(one(ef, TE_CATS)) if one(ef, TE_CATS) is not None else None
            dc = one(ef, TE_DCOUNTER)
            if dc is not None:
                args["cores"] = struct.unpack("<d", dc)[0]
            track = one(ef, TE_TRACK)
            if track not in self.tracks:
                fail("packet %d: event on track %s, never described" % (n, track))
            self.events.append((one(ef, TE_TYPE), track, one(p, PKT_TIMESTAMP), name, cat, args,
                                [struct.unpack("<Q", v)[0] for k, v in ef if k == TE_FLOWS],
                                [struct.unpack("<Q", v)[0] for k, v in ef if k == TE_TFLOWS]))

    def type_tracks(self):
        return [(e[0], e[1]) for e in self.events]

    def process_of(self, uuid):
        t = self.tracks[uuid]
        while t["parent"] is not None:
            uuid = t["parent"]
            t = self.tracks[uuid]
        return uuid

    def as_json(self):
        """The JSON timeline's document: processes and tracks named by
        metadata events, slices as "X" (marker slices as "B"), instants,
        counters, and flows as "s"/"f" at the slices that carry them."""
        ev = []
        for uuid, t in self.tracks.items():
            if t["parent"] is None:
                ev.append({"ph": "M", "pid": t["pid"], "tid": 0, "name": "process_name", "args": {"name": t["name"]}})
            else:
                pid = self.tracks[self.process_of(uuid)]["pid"]
                ev.append({"ph": "M", "pid": pid, "tid": uuid, "name": "thread_name", "args": {"name": t["name"]}})
        open_ = collections.defaultdict(list)
        for typ, track, ts, name, cat, args, flows, tflows in self.events:
            pid = self.tracks[self.process_of(track)]["pid"]
            us = ts / 1000.0
            if typ == BEGIN:
                e = {"ph": "B" if cat == "marker" else "X", "pid": pid, "tid": track, "ts": us, "name": name,
                     "cat": cat, "args": args}
                open_[track].append(e)
                ev.append(e)
                for fid in flows:
                    ev.append({"ph": "s", "pid": pid, "tid": track, "ts": us, "id": fid, "cat": "late_rank"})
                for fid in tflows:
                    ev.append({"ph": "f", "pid": pid, "tid": track, "ts": us, "id": fid, "cat": "late_rank"})
            elif typ == END:
                if not open_[track]:
                    fail("slice end on track %s with no slice open" % track)
                e = open_[track].pop()
                e["dur"] = us - e["ts"]
                if e["dur"] < 0:
                    fail("slice %r ends before it begins" % e)
            elif typ == INSTANT:
                ev.append({"ph": "i", "pid": pid, "tid": track, "ts": us, "name": name, "cat": cat, "args": args})
            elif typ == COUNTER:
                if not self.tracks[track]["counter"]:
                    fail("counter value on a track that is not a counter")
                ev.append({"ph": "C", "pid": pid, "tid": 0, "ts": us, "name": self.tracks[track]["name"], "args": args})
            else:
                fail("event type %s" % typ)
        for track, st in open_.items():
            for e in st:
                if e["ph"] != "B":
                    fail("slice %r never ends" % e)
        return {"traceEvents": ev}


def decode_raw(path):
    """protoc's reading: (type, track) of every packet's TrackEvent, and
    the number of packets.  Only the TrackEvent's own varint fields at its
    first level are read (strings may print as messages without a schema)."""
    with open(path, "rb") as f:
        p = subprocess.run(["protoc", "--decode_raw"], stdin=f, capture_output=True, timeout=300)
    if p.returncode != 0:
        fail("protoc --decode_raw rejects the trace: %s" % p.stderr.decode()[-500:])
    out, packets, cur, te = [], 0, None, False
    for line in p.stdout.decode("utf-8", "replace").splitlines():
        depth = (len(line) - len(line.lstrip(" "))) // 2
        s = line.strip()
        if depth == 0 and s == "1 {":
            packets += 1
        elif depth == 1:
            te = s == "11 {"
            if te:
                cur = {}
                out.append(cur)
        elif depth == 2 and te:
            m = re.match(r"^(\d+): (\d+)$", s)
            if m and m.group(1) in ("9", "11"):
                cur[int(m.group(1))] = int(m.group(2))
    return packets, [(t.get(9), t.get(11)) for t in out]


def export_pf(d, out, *flags):
    p = scaleprof("export", d, "-o", out, *flags)
    with open(out, "rb") as f:
        tr = PerfettoTrace(f.read())
    packets, tt = decode_raw(out)
    if packets != len(tr.packets) or tt != tr.type_tracks():
        fail("protoc --decode_raw and the decoder disagree: %d/%d packets, %d/%d events" %
             (packets, len(tr.packets), len(tt), len(tr.events)))
    return tr, p.stderr


def ranks_in_full(tl):
    """Ranks whose group has more than its steps track."""
    full = set()
    for (pid, tid), name in tl.thread.items():
        if name != "steps" and pid < check_whatif_pid:
            full.add(pid - 1)
    return full


check_whatif_pid = 1000000


def case_counts_generated():
    """The JSON case's job (4 ranks, 2 hosts, helpers, markers, a slow
    rank, clock error) as a Perfetto trace: every event of the traces on
    its rank's track, waits and transfers adding up to the NCCL kernels,
    arrows from the slow rank, the report's steps and findings."""
    tmp = tempfile.mkdtemp(prefix="export-pf-")
    try:
        d = gen(os.path.join(tmp, "t"), "--ranks", "4", "--hosts", "2", "--steps", "12", "--kernels", "6",
                "--input-ms", "2", "--helper", "--markers", "--slow-rank", "2", "--slow-compute-ms", "3",
                "--clock-error-us", "300")
        tr, _ = export_pf(d, os.path.join(tmp, "t.pftrace"))
        tl = check.Timeline(tr.as_json())
        files = check.dump_files(d)
        counts = check.check_counts(tl, files)
        linked = check.check_collectives(tl, files)
        print("  %s; %d arrows" % (", ".join("%s %d" % kv for kv in sorted(counts.items())), linked))
        if not counts["gpu"] or not counts["nccl_ops"] or not linked:
            fail("nothing checked: %s, %d arrows" % (counts, linked))
        rep = json.loads(scaleprof("report", d, "--json").stdout)
        check.check_straggler_story(tl, rep, slow_rank=2)
        # the JSON of the same set: the same entries per rank and category
        js = check.Timeline(check.export(d, os.path.join(tmp, "t.json")))
        for rank in range(4):
            a = collections.Counter(e.get("cat") for e in tl.ev if e["pid"] == tl.rank_pid(rank) and e["ph"] in "XBi")
            b = collections.Counter(e.get("cat") for e in js.ev if e["pid"] == js.rank_pid(rank) and e["ph"] in "XBi")
            a.pop("breakdown", None)
            if a != b:
                fail("rank %d: Perfetto and JSON timelines differ: %s vs %s" % (rank, a, b))
    finally:
        shutil.rmtree(tmp)


def breakdown_ok(tl, rank, rep_rank):
    """A summary rank: step bars, each holding its categories end to end
    within the step, in the shares the report gives the rank."""
    pid = tl.rank_pid(rank)
    steps = tl.slices(pid, cat="step")
    parts = tl.slices(pid, cat="breakdown")
    if not steps or not parts:
        fail("rank %d: %d steps, %d category slices" % (rank, len(steps), len(parts)))
    tot = collections.Counter()
    span = 0
    for s in steps:
        inside = [p for p in parts if s["ts"] - 1e-3 <= p["ts"] and p["ts"] + p["dur"] <= s["ts"] + s["dur"] + 1e-3]
        if s["args"]["analyzed"]:
            span += s["dur"]
            for p in inside:
                tot[p["name"]] += p["dur"]
        elif inside:
            fail("rank %d: categories on a step left out of the analysis" % rank)
    if sum(1 for s in steps for p in parts if s["ts"] - 1e-3 <= p["ts"] < s["ts"] + s["dur"] - 1e-3) != len(parts):
        fail("rank %d: a category slice outside every step" % rank)
    for cat, share in rep_rank.items():
        got = tot[cat] / span if span else 0
        if abs(got - share) > 0.01:
            fail("rank %d: %s is %.3f of its steps on the timeline, %.3f in the report" % (rank, cat, got, share))


def case_summary():
    """A job of 72 ranks x 100 steps (past 64 x 100): by default every rank
    has its step bars with categories and the straggler the findings name
    is in full; --full gives every rank in full, with every event; 64 of
    its ranks (at the size, not past it) are in full by default."""
    tmp = tempfile.mkdtemp(prefix="export-pf-sum-")
    try:
        d = gen(os.path.join(tmp, "t"), "--ranks", "72", "--hosts", "9", "--steps", "100", "--kernels", "1",
                "--slow-rank", "41", "--slow-compute-ms", "4")
        rep = json.loads(scaleprof("report", d, "--json").stdout)
        named = sorted({r for f in rep["findings"] if len(f["ranks"]) < 72 for r in f["ranks"]})
        if 41 not in named:
            fail("the report does not name the slow rank: %s" % rep["findings"])
        tr, err = export_pf(d, os.path.join(tmp, "s.pftrace"))
        if "summary timeline" not in err:
            fail("no word of the summary on stderr: %s" % err)
        tl = check.Timeline(tr.as_json())
        full = ranks_in_full(tl)
        if full != set(named):
            fail("ranks in full %s, the findings name %s" % (sorted(full), named))
        by_rank = {r["rank"]: r for r in rep["per_rank"]}
        for rank in range(72):
            want = by_rank.get(rank, {}).get("breakdown")
            if want is None:
                fail("report --json has no breakdown for rank %d (keys %s)" % (rank, list(rep)))
            breakdown_ok(tl, rank, {k: v for k, v in want.items() if k != "overlap"})
            if len(tl.slices(tl.rank_pid(rank), cat="step")) != 100:
                fail("rank %d: not 100 step bars" % rank)
        files = check.dump_files(d)
        ranks = check.rank_of_files(files)
        sub = {p: v for p, v in files.items() if ranks.get(v[0]["pid"]) in named}
        check.check_counts(tl, sub)
        print("  summary: 72 ranks' steps, ranks %s in full (%d bytes)" % (named, os.path.getsize(os.path.join(tmp, "s.pftrace"))))
        tr, err = export_pf(d, os.path.join(tmp, "f.pftrace"), "--full")
        if "summary" in err:
            fail("--full still wrote a summary: %s" % err)
        tl = check.Timeline(tr.as_json())
        if ranks_in_full(tl) != set(range(72)):
            fail("--full: ranks in full %s" % sorted(ranks_in_full(tl)))
        # every event of three ranks' traces (all 72 is the JSON cases' check, and slow here)
        ranks = check.rank_of_files(files)
        some = {p: v for p, v in files.items() if ranks.get(v[0]["pid"]) in (0, 41, 71)}
        counts = check.check_counts(tl, some)
        print("  --full: every rank in full; ranks 0, 41, 71: %s" % ", ".join("%s %d" % kv for kv in sorted(counts.items())))
        # at the size, not past it: in full (stderr says which it wrote)
        err = scaleprof("export", d, "-o", os.path.join(tmp, "r.pftrace"), "--ranks", "0-63").stderr
        if "summary" in err or "64 ranks" not in err:
            fail("64 ranks x 100 steps is not in full by default: %s" % err)
        err = scaleprof("export", d, "-o", os.path.join(tmp, "r.pftrace"), "--ranks", "0-64").stderr
        if "summary timeline" not in err:
            fail("65 ranks x 100 steps is not a summary: %s" % err)
    finally:
        shutil.rmtree(tmp)


def case_whatif():
    """--whatif beside each rank in the Perfetto trace: the replayed steps'
    mean is the finding's step time if fixed, in full and in a summary."""
    tmp = tempfile.mkdtemp(prefix="export-pf-wi-")
    try:
        d = gen(os.path.join(tmp, "t"), "--ranks", "4", "--steps", "20", "--slow-rank", "1",
                "--slow-compute-ms", "6")
        rep = json.loads(scaleprof("report", d, "--json").stdout)
        f = [f for f in rep["findings"] if f["cause"] == "straggler"]
        if not f:
            fail("no straggler finding: %s" % [x["cause"] for x in rep["findings"]])
        for flags in ((), ("--summary",)):
            tr, _ = export_pf(d, os.path.join(tmp, "w.pftrace"), "--whatif", "straggler", *flags)
            tl = check.Timeline(tr.as_json())
            groups = [p for p, n in tl.proc.items() if "what-if: straggler" in n]
            if len(groups) != 4:
                fail("%s: %d what-if groups" % (flags, len(groups)))
            for p in groups:
                st = tl.slices(p, cat="step")
                mean = sum(s["dur"] for s in st) / len(st) / 1000.0
                if abs(mean - f[0]["step_ms_if_fixed"]) > 0.02 * f[0]["step_ms_if_fixed"]:
                    fail("%s: replayed mean step %.3f ms, the finding %.3f" % (flags, mean, f[0]["step_ms_if_fixed"]))
            print("  %s: 4 what-if groups, mean step %.3f ms as the finding's" % (flags or "full", mean))
    finally:
        shutil.rmtree(tmp)


def case_bad_input():
    """Options that cannot be honoured are usage errors, said in words."""
    tmp = tempfile.mkdtemp(prefix="export-pf-bad-")
    try:
        d = gen(os.path.join(tmp, "t"), "--ranks", "2", "--steps", "8")
        for flags, words in ((("--format", "svg"), "not a format"),
                             (("--format", "json", "--full"), "always in full"),
                             (("--full", "--summary"), "exclude each other")):
            p = scaleprof("export", d, "-o", os.path.join(tmp, "x.pftrace"), *flags, ok=(2,))
            if words not in p.stderr:
                fail("%s: %r" % (flags, p.stderr))
        # the name picks JSON, --format overrides it
        scaleprof("export", d, "-o", os.path.join(tmp, "a.json"))
        json.load(open(os.path.join(tmp, "a.json")))
        scaleprof("export", d, "-o", os.path.join(tmp, "b.json"), "--format", "perfetto")
        PerfettoTrace(open(os.path.join(tmp, "b.json"), "rb").read())
    finally:
        shutil.rmtree(tmp)


def case_lost_push():
    """A marker range whose push the trace lost (tests/export/lost_push: a
    rank's trace with four bytes flipped in one chunk, which the reader
    skips) leaves its pop without a slice to end: the timeline drops that
    pop rather than end whatever else is open on the thread, and keeps
    the other ranges whole."""
    tmp = tempfile.mkdtemp(prefix="export-pf-lost-")
    try:
        src = os.path.join(os.path.dirname(os.path.abspath(__file__)), "lost_push")
        out = os.path.join(tmp, "t.pftrace")
        scaleprof("export", src, "-o", out, "--whatif", "none")
        doc = PerfettoTrace(open(out, "rb").read()).as_json()  # fails on an end with no slice open
        ended = [e for e in doc["traceEvents"] if e.get("cat") == "marker" and "dur" in e]
        if not ended:
            fail("the marker ranges around the lost chunk are gone too: %d kept" % len(ended))
        print("figures: %d marker ranges kept with their ends" % len(ended))
    finally:
        shutil.rmtree(tmp)


if __name__ == "__main__":
    check.main(globals())
