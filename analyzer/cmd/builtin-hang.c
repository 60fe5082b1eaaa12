/*
 * builtin-hang.c - `scaleprof hang DIR`: the post-mortem of a hung or
 * crashed job: the collective it stopped in, the ranks that never entered
 * it, what each was doing last, and ranks that called different
 * collectives at the same sequence number.
 *
 * Option parsing only: the analysis is hang.c's, the text and JSON
 * output/hang_out.c's.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "builtin.h"
#include "ended.h"
#include "hang.h"
#include "hang_out.h"
#include "model.h"
#include "opt.h"
#include "text.h"
#include "units.h"

#define VERB "hang"
#define MAX_MIN_HANG_S 1e7

/* The option table as --help prints it, one line a line. */
// clang-format off
static const char usage_text[] =
    "usage: scaleprof hang DIR [options]\n"
    "\n"
    "Post-mortem of a hung or crashed job from the traces under DIR: per\n"
    "communicator, the collective some ranks entered and never completed, the\n"
    "ranks that never entered it (or left no trace), what each of them was doing\n"
    "last, how long the job was hung, and ranks that called different\n"
    "collectives at the same sequence number (desync).  It leads with the rank\n"
    "that stopped making progress first (its trace ends a second or more before\n"
    "the others'), and names ranks killed by a signal or exiting non-zero as\n"
    "scaleprof run recorded them (DIR/exit-status.HOST).\n"
    "\n"
    "  --json                  print the result as JSON (man scaleprof-hang)\n"
    "  --events N              last events shown per thread (default 4, 1 to 64)\n"
    "  --min-hang S            call a pending collective hung when nothing entered its\n"
    "                          communicator for S seconds before the traces end\n"
    "                          (default: 1 s or 10 times its usual gap, the longer)\n"
    SP_MODEL_OPTIONS_HELP
    SP_COLOR_HELP
    "  -h, --help              this text\n"
    "\n"
    "The model's options are those of every verb: --run and --step-marker choose\n"
    "what is read (a SUMMARY needs those it was reduced with); --steps and\n"
    "--skip are taken but narrow nothing here, since a hang is where the\n"
    "traces end, after every step.\n"
    "\n"
    "Exit status: 0 a hang or a desync found and explained, 1 nothing hung or\n"
    "the traces cannot say, 2 usage.\n";
// clang-format on

/* The options into *ho, *o and *json: the trace directory, or NULL with
 * *rc the status to return (0 after --help, SP_EXIT_USAGE after a usage
 * error, said on stderr). */
static const char *parse(int argc, char **argv, struct sp_hang_opts *ho, struct sp_model_opts *o, int *json,
                         int *rc)
{
    static const struct option opts[] = {
        SP_OPT_JSON,
        {"events", required_argument, NULL, 'e'},
        {"min-hang", required_argument, NULL, 'H'},
        SP_OPT_HELP_END,
    };
    int c;
    struct sp_opts p = sp_opts_model(VERB, opts, o);
    *rc = SP_EXIT_USAGE;
    while ((c = sp_opts_next(&p, argc, argv, "h")) != -1) {
        switch (c) {
        case 'J':
            *json = 1;
            break;
        case 'e':
            if (sp_opt_int(VERB, "--events", optarg, 1, SP_HANG_EVENTS_MAX, &ho->events) < 0)
                return NULL;
            break;
        case 'H':
            if (sp_opt_double(VERB, "--min-hang", optarg, 1e-6, MAX_MIN_HANG_S, &ho->min_hang_s) < 0)
                return NULL;
            break;
        case 'h':
            fputs(usage_text, stdout);
            *rc = 0;
            return NULL;
        default: /* said by sp_opts_next */
            return NULL;
        }
    }
    if (optind == argc) {
        sp_usage_error(VERB, "no trace directory given (scaleprof hang DIR)");
        return NULL;
    }
    if (optind != argc - 1) {
        sp_usage_error(VERB, "one trace directory expected, got %d (%s, %s%s)", argc - optind, argv[optind],
                       argv[optind + 1], argc - optind > 2 ? ", ..." : "");
        return NULL;
    }
    return argv[optind];
}

int cmd_hang(int argc, char **argv)
{
    struct sp_hang_opts ho;
    sp_hang_opts_default(&ho);
    ho.deep = 1;
    struct sp_ended_set hang_ended; /* ranks that did not end well (ended.h) */
    memset(&hang_ended, 0, sizeof hang_ended);
    struct sp_model_opts o;
    int json = 0, rc;
    const char *dir = parse(argc, argv, &ho, &o, &json, &rc);
    if (!dir)
        return rc;
    struct sp_model m;
    if (sp_model_open(dir, &o, &m) < 0) {
        sp_opt_nothing_to_analyze(VERB, &m, dir);
        sp_model_free(&m);
        return 1;
    }
    struct sp_hang h;
    sp_ended_analyze(&m, &hang_ended);
    if (sp_hang_analyze(&m, &ho, &h) < 0)
        fprintf(stderr, "scaleprof hang: out of memory: what was found so far is shown\n");
    sp_model_warn_all(&m, &h.warnings);
    int failed[64];
    sp_hang_mark_failed(&h, failed, sp_ended_failed(&hang_ended, failed, 64));
    if (json)
        sp_hang_json(&m, &h, &hang_ended);
    else
        sp_hang_text(&m, &h, &hang_ended, sp_text_columns());
    rc = h.nhung || h.ndesyncs ? 0 : 1;
    sp_hang_free(&h);
    sp_ended_free(&hang_ended);
    sp_model_free(&m);
    return rc;
}
