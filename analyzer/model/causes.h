/*
 * causes.h - the causes a finding can name and the row the cause table
 * (causes.c) holds for each: what every verb reads of a cause (its name,
 * first thing to try, documentation anchor, the cause it is a part of, its
 * place in export --whatif's list) and what the passes do with it (the
 * rule for reporting it and its evidence writer, model_findings.c's; the
 * counterfactual that prices and removes it, model_replay.c's).  A new cause is a
 * value here, a row there, the functions its row names, docs and tests.
 */
#ifndef SP_CAUSES_H
#define SP_CAUSES_H

#include <stdint.h>
#include <string.h>

struct sp_model;
struct sp_replay;
struct sp_finding;
struct sp_counterfactual;

enum sp_cause {
    SP_CAUSE_STRAGGLER,
    SP_CAUSE_IMBALANCE,
    SP_CAUSE_PIPELINE_STAGE,
    SP_CAUSE_PIPELINE_BUBBLE,
    SP_CAUSE_INPUT,
    SP_CAUSE_HOST,
    SP_CAUSE_COMMUNICATION,
    SP_CAUSE_CROSS_NODE,
    SP_CAUSE_SMALL_BATCH,
    SP_CAUSE_UNEXPLAINED,
    SP_CAUSE_HOST_SYNC,   /* host_overhead's part: syncs inside the step */
    SP_CAUSE_FILE_WRITES, /* host_overhead's part: file writes (checkpoints) */
    SP_CAUSE_SCALING,     /* compare: efficiency falls, no single cause */
    SP_CAUSE_HANG,        /* some ranks never reached a collective */
    SP_CAUSE_MEMCPY,      /* copies on the critical path */
    SP_CAUSE_LAUNCH_API,  /* host_overhead's part: the GPU idle inside launch calls */
    SP_CAUSE_N
};

/* A first thing to try that the evidence chooses over the cause's own:
 * `when` names what the evidence found (a straggler's excess "input", the
 * copies "pinned"), the evidence writer asks for it by that name. */
struct sp_cause_try {
    const char *when, *text;
};

/* A cause's rule and evidence writer (model_findings.c), as the table
 * below names them. */
typedef int sp_rule_fn(const struct sp_model *m, const struct sp_replay *rp, int cause);
typedef void sp_evidence_fn(const struct sp_model *m, const struct sp_replay *rp, struct sp_finding *f);

struct sp_cause_info {
    const char *name;      /* JSON and text: "input_pipeline", ... */
    const char *first_try; /* the seed's first thing to try */
    const char *anchor;    /* docs/analysis.md section */
    int part_of;           /* the cause this one is a part of; SP_CAUSE_N: none */
    uint32_t drop;         /* with cf sp_cf_drop: bits (1 << SP_LOC_*) of the
                            * local time the replay drops to price it */
    int whatif_order;      /* its place (from 1) among the causes export
                            * --whatif replays; 0: not replayable there */
    /* bit (1 << SP_CAT_*) of the category that measures its time on a
     * rank: its gain when nothing can be replayed is that share of step
     * time, and the figure its finding quotes when it makes a rank the
     * straggler; 0: none (a part takes its whole's) */
    uint32_t measured_by;
    /* the straggler's excess (sp_model_straggler_cause's word) this
     * cause's finding stands for when that excess is its time: "input",
     * "host", "other"; NULL: none */
    const char *excess;
    /* whether the finding is listed, given the replay's gains (NULL: when
     * it gains at least the listing minimum); the choice between findings
     * that fix the same time is sp_model_findings' */
    sp_rule_fn *reported;
    /* the finding's ranks and evidence (f made: cause, gain, steps, every
     * rank); NULL: not a finding of one run (compare's, hang's) */
    sp_evidence_fn *evidence;
    /* first things to try the evidence may choose, {NULL} ended; NULL none */
    const struct sp_cause_try *tries;
    /* how the what-if replay prices it and removes it (model_replay.c's
     * sp_cf_*); NULL: the replay has no counterfactual for it */
    const struct sp_counterfactual *cf;
};
/* The cause a cause is a part of ("host_overhead" for host_sync,
 * file_writes and launch_api), NULL when none. */
const char *sp_cause_part_of(int cause);
/* The row of a cause; never NULL (an out-of-range cause gets a "?" row). */
const struct sp_cause_info *sp_cause_info(int cause);
/* The cause whose whatif_order is k, -1 when none. */
int sp_cause_by_whatif_order(int k);
/* The whole table, SP_CAUSE_N rows indexed by enum sp_cause: what the
 * model hands its passes (m->causes), which read it there rather than
 * call back into the table that names their functions. */
const struct sp_cause_info *sp_cause_table(void);
/* The first thing to try a row gives for `when`, NULL none. */
static inline const char *sp_cause_try(const struct sp_cause_info *ci, const char *when)
{
    for (const struct sp_cause_try *t = ci->tries; when && t && t->when; t++)
        if (!strcmp(t->when, when))
            return t->text;
    return NULL;
}

/* The rules and evidence writers the table names (model_findings.c). */
sp_rule_fn sp_rule_straggler, sp_rule_pipeline_stage, sp_rule_pipeline_bubble, sp_rule_cross_node, sp_rule_unexplained;
sp_evidence_fn sp_evidence_straggler, sp_evidence_imbalance, sp_evidence_pipeline_stage, sp_evidence_pipeline_bubble,
    sp_evidence_input, sp_evidence_host, sp_evidence_host_sync, sp_evidence_file_writes, sp_evidence_launch_api,
    sp_evidence_communication, sp_evidence_cross_node, sp_evidence_unexplained, sp_evidence_memcpy;

/* The counterfactuals the table names (model_replay.c). */
extern const struct sp_counterfactual sp_cf_straggler, sp_cf_imbalance, sp_cf_pipeline_stage, sp_cf_pipeline_bubble,
    sp_cf_drop, sp_cf_transfer, sp_cf_cross_node;

#endif
