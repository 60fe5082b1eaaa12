/* finding_json.c - see finding_json.h. */
#include "finding_json.h"

void sp_json_finding(struct sp_json *j, const struct sp_finding *f, int across_runs)
{
    const struct sp_cause_info *ci = sp_cause_info(f->cause);
    sp_json_open(j, NULL, '{');
    sp_json_str(j, "cause", ci->name);
    sp_json_str(j, "severity", sp_model_severity_name(f->severity));
    sp_json_num(j, "gain", f->gain);
    if (!across_runs) {
        sp_json_num(j, "step_ms_if_fixed", f->step_ms_if_fixed);
        sp_json_num(j, "cost", f->gain);
        sp_json_open(j, "ranks", '[');
        for (int x = 0; x < f->nranks; x++)
            sp_json_int(j, NULL, f->ranks[x]);
        sp_json_close(j, ']');
        if (f->rank_gains) {
            sp_json_open(j, "rank_gains", '[');
            for (int x = 0; x < f->nranks; x++) {
                sp_json_open(j, NULL, '{');
                sp_json_int(j, "rank", f->ranks[x]);
                sp_json_num(j, "gain", f->rank_gains[x]);
                sp_json_close(j, '}');
            }
            sp_json_close(j, ']');
        }
        sp_json_open(j, "steps", '{');
        sp_json_int(j, "first", f->step_first);
        sp_json_int(j, "last", f->step_last);
        sp_json_close(j, '}');
    }
    sp_json_str(j, "evidence", f->evidence);
    sp_json_str(j, "first_try", sp_finding_first_try(f));
    if (!across_runs) {
        sp_json_str(j, "docs", ci->anchor);
        if (sp_cause_part_of(f->cause))
            sp_json_str(j, "part_of", sp_cause_part_of(f->cause));
    }
    sp_json_close(j, '}');
}
