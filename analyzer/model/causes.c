/*
 * causes.c - the table of causes (the row: causes.h): for each one a
 * finding can name, its JSON name, the first thing to try and the others
 * its evidence may choose, its section of docs/analysis.md, the cause it
 * is a part of, the category that measures it, the local time the what-if
 * replay drops to price it (model_replay.c), its place among the causes
 * `export --whatif` replays, its rule for being reported and its evidence
 * writer (model_findings.c).  Report, compare, the findings, the replay's
 * counterfactuals and export all read this one table and iterate it; none
 * of them keeps a list of causes of its own.
 */
#include <stddef.h>

#include "model.h"

#define CAT(c) (1u << (c))

/* A straggler's excess, by sp_model_straggler_cause's word for it. */
static const struct sp_cause_try straggler_tries[] = {
    {"memcpy", "look at this rank's copies: pinned memory, non_blocking copies; then test that device alone"},
    {"input", "speed up this rank's input: more loader workers, faster storage or caching for its data; check its "
              "share of the data"},
    {"host", "find what holds this rank's host back (CPU contention, syncs, launch calls): CUDA graphs, fewer "
             "synchronizations"},
    {NULL, NULL},
};

/* The copies that weigh most: already from pinned memory, or within the
 * GPU (pinning would change nothing). */
static const struct sp_cause_try memcpy_tries[] = {
    {"pinned", "the host memory is already page-locked: issue the copies asynchronously (non_blocking) on a side "
               "stream and prefetch the next batch while this step computes, so the copies overlap compute"},
    {"device", "copies within the GPU: avoid them (in-place operations, views instead of copies), or overlap them "
               "with compute on a side stream"},
    {NULL, NULL},
};

static const struct sp_cause_info causes[SP_CAUSE_N] = {
    [SP_CAUSE_STRAGGLER] = {"straggler", "inspect data distribution across ranks; test that device alone", "straggler",
                            .part_of = SP_CAUSE_N, .whatif_order = 1, .reported = sp_rule_straggler,
                            .evidence = sp_evidence_straggler, .tries = straggler_tries, .cf = &sp_cf_straggler},
    [SP_CAUSE_IMBALANCE] = {"imbalance",
                            "balance work per rank: bucket samples by sequence length, pack them, or shard by cost",
                            "imbalance",
                            .part_of = SP_CAUSE_N, .whatif_order = 2, .evidence = sp_evidence_imbalance,
                            .cf = &sp_cf_imbalance},
    [SP_CAUSE_PIPELINE_STAGE] = {"pipeline_stage", "repartition layers across pipeline stages so each does the same work",
                                 "pipeline_stage",
                                 .part_of = SP_CAUSE_N, .whatif_order = 3, .reported = sp_rule_pipeline_stage,
                                 .evidence = sp_evidence_pipeline_stage, .cf = &sp_cf_pipeline_stage},
    [SP_CAUSE_PIPELINE_BUBBLE] = {"pipeline_bubble",
                                  "more micro-batches per step, or an interleaved (virtual-stage) schedule",
                                  "pipeline_bubble",
                                  .part_of = SP_CAUSE_N, .reported = sp_rule_pipeline_bubble,
                                  .evidence = sp_evidence_pipeline_bubble, .cf = &sp_cf_pipeline_bubble},
    [SP_CAUSE_INPUT] = {"input_pipeline",
                        "more loader workers, faster storage, caching; move preprocessing off the critical path",
                        "input_pipeline",
                        .part_of = SP_CAUSE_N, .drop = 1u << SP_LOC_INPUT, .whatif_order = 4,
                        .measured_by = CAT(SP_CAT_IDLE_INPUT), .excess = "input", .evidence = sp_evidence_input,
                        .cf = &sp_cf_drop},
    [SP_CAUSE_HOST] = {"host_overhead",
                       "less host work between CUDA calls: CUDA graphs, larger or fused kernels (torch.compile), "
                       "fewer synchronizations",
                       "host_overhead",
                       .part_of = SP_CAUSE_N, .drop = 1u << SP_LOC_HOST, .whatif_order = 5,
                       .measured_by = CAT(SP_CAT_IDLE_HOST), .excess = "host", .evidence = sp_evidence_host,
                       .cf = &sp_cf_drop},
    [SP_CAUSE_LAUNCH_API] = {"launch_api",
                             "fewer, larger launches: CUDA graphs replay a step in one call, fused kernels "
                             "(torch.compile); check for a slow launch path: CUDA_LAUNCH_BLOCKING set, lazy module "
                             "loading, a profiler or debugger hooked into launches",
                             "launch_api",
                             .part_of = SP_CAUSE_HOST, .drop = 1u << SP_LOC_LAUNCH, .whatif_order = 8,
                             .evidence = sp_evidence_launch_api, .cf = &sp_cf_drop},
    [SP_CAUSE_HOST_SYNC] = {"host_sync",
                            "remove the synchronization at its call site (.item(), .cpu(), printing a GPU tensor, "
                            "torch.cuda.synchronize): keep the value on the GPU, or read it every N steps",
                            "host_sync",
                            .part_of = SP_CAUSE_HOST, .drop = 1u << SP_LOC_SYNC, .whatif_order = 6,
                            .evidence = sp_evidence_host_sync, .cf = &sp_cf_drop},
    [SP_CAUSE_FILE_WRITES] = {"file_writes",
                              "checkpoint asynchronously (a background thread or process, e.g. "
                              "torch.distributed.checkpoint.async_save), less often, or to faster local storage; "
                              "keep fsync off the training thread",
                              "file_writes",
                              .part_of = SP_CAUSE_HOST, .drop = 1u << SP_LOC_WRITE, .whatif_order = 7,
                              .evidence = sp_evidence_file_writes, .cf = &sp_cf_drop},
    [SP_CAUSE_COMMUNICATION] = {"communication",
                                "check topology; overlap communication with computation; consider gradient accumulation",
                                "communication",
                                .part_of = SP_CAUSE_N, .whatif_order = 9, .measured_by = CAT(SP_CAT_COLL_TRANSFER),
                                .evidence = sp_evidence_communication, .cf = &sp_cf_transfer},
    [SP_CAUSE_CROSS_NODE] = {"cross_node", "verify network setup and bandwidth for the instance type", "cross_node",
                             .part_of = SP_CAUSE_N, .whatif_order = 10, .reported = sp_rule_cross_node,
                             .evidence = sp_evidence_cross_node, .cf = &sp_cf_cross_node},
    [SP_CAUSE_SMALL_BATCH] = {"small_batch", "raise the global batch size (adjust the learning rate, validate the loss)",
                              "small_batch",
                              .part_of = SP_CAUSE_N},
    [SP_CAUSE_UNEXPLAINED] = {"unexplained",
                              "sample the host during the idle gaps (perf, py-spy): the trace shows no CUDA call, input "
                              "wait or collective there",
                              "unexplained",
                              .part_of = SP_CAUSE_N, .drop = 1u << SP_LOC_OTHER, .whatif_order = 11,
                              .measured_by = CAT(SP_CAT_IDLE_OTHER), .excess = "other", .reported = sp_rule_unexplained,
                              .evidence = sp_evidence_unexplained, .cf = &sp_cf_drop},
    [SP_CAUSE_SCALING] = {"scaling",
                          "read each run's findings (scaleprof report DIR); raise the global batch size if compute per "
                          "step shrank",
                          "compare",
                          .part_of = SP_CAUSE_N},
    [SP_CAUSE_HANG] = {"hang", "see what the missing rank was doing: scaleprof hang DIR", "hang",
                       .part_of = SP_CAUSE_N},
    [SP_CAUSE_MEMCPY] = {"memcpy",
                         "copy from pinned memory (DataLoader pin_memory=True) with non_blocking copies, and prefetch "
                         "the next batch on a side stream while this step computes",
                         "memcpy",
                         .part_of = SP_CAUSE_N, .drop = 1u << SP_LOC_COPY, .whatif_order = 12,
                         .measured_by = CAT(SP_CAT_MEMCPY), .evidence = sp_evidence_memcpy, .tries = memcpy_tries,
                         .cf = &sp_cf_drop},
};

const struct sp_cause_info *sp_cause_info(int cause)
{
    static const struct sp_cause_info unknown = {"?", "", "", .part_of = SP_CAUSE_N};
    return cause >= 0 && cause < SP_CAUSE_N && causes[cause].name ? &causes[cause] : &unknown;
}

const char *sp_cause_part_of(int cause)
{
    int of = sp_cause_info(cause)->part_of;
    return of < SP_CAUSE_N ? causes[of].name : NULL;
}

int sp_cause_by_whatif_order(int k)
{
    for (int c = 0; c < SP_CAUSE_N; c++)
        if (causes[c].name && causes[c].whatif_order == k)
            return c;
    return -1;
}

const struct sp_cause_info *sp_cause_table(void)
{
    return causes;
}

const char *sp_finding_first_try(const struct sp_finding *f)
{
    return f->first_try ? f->first_try : sp_cause_info(f->cause)->first_try;
}
