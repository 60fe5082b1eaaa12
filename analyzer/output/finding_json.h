/*
 * finding_json.h - a finding as the JSON outputs write it, once for
 * report --json and compare --json (docs/report-json.md, "findings").
 */
#ifndef SP_FINDING_JSON_H
#define SP_FINDING_JSON_H

#include "json.h"
#include "model.h"

/* Writes f as an element of the array open in j: its cause, severity and
 * gain; then, for a finding of one run, the step it leaves, the ranks and
 * steps it concerns (per-rank gains when it has them); its evidence and
 * first thing to try; and for one run's finding the section of
 * docs/analysis.md and the cause it is a part of.  A finding across runs
 * (compare's: `across_runs`) has no ranks or steps, and says its cause's
 * section and whole nowhere but in the docs. */
void sp_json_finding(struct sp_json *j, const struct sp_finding *f, int across_runs);

#endif
