/*
 * opt.h - the verbs' option parser, option values and usage errors, one
 * way for all: every verb parses with sp_opts_next (below), which takes
 * the model's options for the verbs that build a model and refuses
 * abbreviated long options.
 *
 * Each value helper parses with format/parse.h; on a bad value it prints
 *     scaleprof VERB: --OPTION: "abc" is not an integer (expected 0..7)
 * on stderr and returns -1, and the verb exits with status 2.
 */
#ifndef SP_OPT_H
#define SP_OPT_H

#include <getopt.h>
#include <stddef.h>
#include <stdio.h>

#define SP_EXIT_USAGE 2

int sp_opt_int(const char *verb, const char *opt, const char *val, long long lo, long long hi, int *out);
int sp_opt_double(const char *verb, const char *opt, const char *val, double lo, double hi, double *out);
/* "A:B" with both ends included, lo <= A <= B <= hi. */
int sp_opt_range(const char *verb, const char *opt, const char *val, long long lo, long long hi, int *a, int *b);
/* --steps A:B, as the model takes it: *first = A, *end = B + 1 (its end
 * is exclusive). */
int sp_opt_steps(const char *verb, const char *val, int *first, int *end);
/* Prints "scaleprof VERB: <message>" and a pointer to --help; returns
 * SP_EXIT_USAGE for the verb to return. */
int sp_usage_error(const char *verb, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* An option getopt_long (opterr 0) did not take, arg being the word it
 * stopped at (argv[optind - 1]): "--rank needs a value" when it names an
 * option of opts that takes one; "option --rank is unknown; did you mean
 * --ranks? (options are not abbreviated)" when it begins the names of
 * opts; else "option --x is unknown; did you mean --y?" with the nearest
 * name of opts.  Returns SP_EXIT_USAGE. */
struct option;
int sp_opt_unknown(const char *verb, const struct option *opts, const char *arg);

/* ---- one parser for every verb ----
 *
 * A verb lists its own options (a struct option table ended by a zero
 * entry) and, when it builds a model, passes its struct sp_model_opts:
 * the model's options (SP_MODEL_OPTIONS_HELP) are then taken into it by
 * the parser, with the same validation and the same messages in every
 * verb, and the verb's switch sees only its own options.
 *
 * Long options are taken as written only: getopt_long accepts any
 * unambiguous prefix, so `export --rank 0` silently meant --ranks, and an
 * option added later would turn a working abbreviation into an error or
 * into another option.  A prefix is refused with the names it begins
 * (as clap and cobra do by default, and argparse with allow_abbrev off).
 *
 *     struct sp_opts p;
 *     sp_opts_init(&p, VERB, own, &model_opts);   (NULL: no model options)
 *     while ((c = sp_opts_next(&p, argc, argv, "ho:")) != -1)
 *         switch (c) { ...the verb's own...; default: return SP_EXIT_USAGE; }
 *
 * sp_opts_next returns the val of the verb's next option (optarg set as
 * getopt_long sets it), -1 after the last one (optind at the first
 * operand), or '?' once it has said on stderr what is wrong: an unknown,
 * abbreviated or valueless option, or a bad value of a model option. */
#define SP_OPTS_MAX 48

/* ---- options several verbs share ----
 *
 * An option that more than one verb takes is one table entry, written
 * once here: the same spelling, argument and code in every verb.  Those
 * with a value (what a step is worth, and --kernels) are taken by
 * sp_opts_next as the model's are, with the same bounds and messages in
 * report, html and compare: --samples-per-step into the model's options
 * (so only in a verb that has them), the others into p->shared.  Every
 * table ends with SP_OPT_HELP_END. */
enum {
    SP_SHARED_SAMPLES = 0x3000, /* above a verb's own codes, below the model's */
    SP_SHARED_GLOBAL_BATCH,
    SP_SHARED_PRICE,
    SP_SHARED_KERNELS,
};
// clang-format off
#define SP_OPT_JSON {"json", no_argument, NULL, 'J'}
#define SP_OPT_OUTPUT {"output", required_argument, NULL, 'o'}
#define SP_OPT_SAMPLES_PER_STEP {"samples-per-step", required_argument, NULL, SP_SHARED_SAMPLES}
#define SP_OPT_GLOBAL_BATCH {"global-batch", required_argument, NULL, SP_SHARED_GLOBAL_BATCH}
#define SP_OPT_PRICE_PER_GPU_HOUR {"price-per-gpu-hour", required_argument, NULL, SP_SHARED_PRICE}
#define SP_OPT_KERNELS {"kernels", optional_argument, NULL, SP_SHARED_KERNELS}
#define SP_OPT_HELP_END {"help", no_argument, NULL, 'h'}, {NULL, 0, NULL, 0}
// clang-format on

#define SP_TOP_KERNELS 10 /* --kernels without N */

/* The values of the shared options but --samples-per-step: 0 when not
 * given. */
struct sp_shared_opts {
    double global_batch; /* samples per step over all GPUs */
    double price;        /* of one GPU hour */
    int top_kernels;     /* --kernels [N] */
};


struct sp_model_opts;
struct sp_opts {
    const char *verb;
    struct sp_model_opts *model;      /* NULL: the verb takes no model option */
    int nown;                         /* table[0..nown) are the verb's own */
    struct option table[SP_OPTS_MAX]; /* the verb's own, then the model's, then a zero entry */
    struct sp_shared_opts shared;     /* what the shared options the verb lists gave */
};
void sp_opts_init(struct sp_opts *p, const char *verb, const struct option *own, struct sp_model_opts *model);
int sp_opts_next(struct sp_opts *p, int argc, char **argv, const char *shortopts);

/* The model's options as every verb's --help lists them. */
#define SP_MODEL_OPTIONS_HELP                                                             \
    "  --run ID                the traces of run ID only, when DIR holds several runs\n"  \
    "  --steps A:B             analyze steps A to B, both included (step numbers\n"       \
    "                          as the report prints them; overrides --skip)\n"            \
    "  --skip N                drop the first N warm-up steps (default 3; 0 for traces\n" \
    "                          recorded with a SCALEPROF_STEPS window)\n"                 \
    "  --step-marker RE        step markers are ranges whose name matches RE\n"           \
    "                          (default: step|iteration|ProfilerStep, any case)\n"        \
    "  --threads N             reader threads (default: the cores, at most 8)\n"

/* The parser sp_opts_init makes, for a verb that builds a model, with
 * model (the verb's struct sp_model_opts) set to the model's defaults
 * and progress shown on stderr first, as every such verb but reduce
 * starts:  struct sp_opts p = sp_opts_model(VERB, own, &model_opts); */
struct sp_opts sp_opts_model(const char *verb, const struct option *own, struct sp_model_opts *model);

/* After the model's steps are found (SP_STAGE_STEPS): when --steps names
 * none of m's steps, says so on stderr ("scaleprof VERB: --steps 20:30:
 * DIR has steps 0-11 only") and returns 1; else 0. */
struct sp_model;
int sp_opt_steps_missing(const char *verb, const struct sp_model *m);

/* What the verbs say alike, on stderr: a model that could not be built
 * (sp_model_open or sp_model_run < 0): its warnings, then "nothing to
 * analyze in DIR"; --kernels over summaries, which hold no kernel. */
void sp_opt_nothing_to_analyze(const char *verb, const struct sp_model *m, const char *dir);
void sp_opt_kernels_need_traces(const char *verb);

/* The name of names[0..n) nearest to word (edit distance, a swap of two
 * neighbours counting one), when near enough to be a typing slip; NULL
 * otherwise.  For "did you mean". */
const char *sp_opt_nearest(const char *word, const char *const *names, size_t n);

/* `OPT N` (N a separate word of digits) joined into `OPT=N` in buf, for
 * an option whose value is optional: getopt takes one only after "=", and
 * N would otherwise read as an operand.  Returns the new argc. */
int sp_opt_join_number(int argc, char **argv, const char *opt, char *buf, size_t len);

/* Colour, the same for every verb: --color[=always|never|auto] and
 * --no-color are taken out of argv (up to "--", and with operands_end up
 * to the first operand, for a verb whose operands are a command) before
 * the verb parses the rest.  Returns 0, or SP_EXIT_USAGE for a bad WHEN
 * (said on stderr).  sp_color_on says whether to colour what goes to f:
 * always, never, or (auto) when f is a terminal and NO_COLOR is unset. */
int sp_opt_take_color(const char *verb, int *argc, char **argv, int operands_end);
int sp_color_on(FILE *f);
#define SP_COLOR_HELP "  --color[=WHEN], --no-color  colour always (WHEN: always, never, auto) or never;\n" \
                      "                          by default on a terminal unless NO_COLOR is set\n"

#endif
