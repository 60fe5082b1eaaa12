"""The replay's check of itself, asserted on a `scaleprof report --json`:
the unchanged replay gives back the recorded steps, no cause saves more
than its own time on the critical path, and all found causes fixed save at
least what the best one alone does.  Recomputed here from the figures the
report prints, not only read from its `ok`."""

REPLAY_PCT = 1.0   # the unchanged replay within 1% of the mean step
SLACK = 0.005      # share of the step a saving may pass its bound by (rounding)


def problems(rep):
    """What is wrong with rep's whatif.check, as text (empty: it holds)."""
    c = rep.get("whatif", {}).get("check")
    if c is None:
        return ["no whatif.check in the report"]
    if c.get("ok") is None:
        return []  # nothing was replayed
    bad = []
    step = rep["whatif"]["replayed_step_ms"]
    for key in ("replay_error_pct", "step_error_pct"):
        if c[key] > REPLAY_PCT:
            bad.append("unchanged replay off by %.3f%% (%s)" % (c[key], key))
    if c["unplaced_nodes"]:
        bad.append("the unchanged replay left %d nodes unplaced" % c["unplaced_nodes"])
    for x in c["causes"]:
        if x["saved_ms"] > x["critical_path_ms"] + SLACK * step:
            bad.append("%s saves %.3f ms, more than its %.3f ms on the critical path"
                       % (x["cause"], x["saved_ms"], x["critical_path_ms"]))
    if c["ideal_ms"] is not None and c["best_single_ms"]:
        if c["ideal_ms"] > c["best_single_ms"] + SLACK * step:
            bad.append("all fixed %.3f ms, slower than the best single fix %.3f ms"
                       % (c["ideal_ms"], c["best_single_ms"]))
    if bool(bad) == bool(c["ok"]):
        bad.append("whatif.check.ok is %s, the figures say %s" % (c["ok"], "fail" if bad else "pass"))
    if c["withheld"] and c["ok"]:
        bad.append("gains withheld (%s) though the check passed" % c["withheld"])
    return bad


def summary(rep):
    c = rep.get("whatif", {}).get("check") or {}
    if c.get("ok") is None:
        return "whatif.check: nothing replayed"
    worst = max(((x["saved_ms"] - x["critical_path_ms"], x["cause"]) for x in c["causes"]),
                default=(0, "-"))
    return ("whatif.check ok %s: replay error %.3f%% (step %.3f%%), closest to its bound %s "
            "(%.3f ms over), ideal %s vs best %s" % (c["ok"], c["replay_error_pct"],
                                                    c["step_error_pct"], worst[1], worst[0],
                                                    c["ideal_ms"], c["best_single_ms"]))
