/*
 * test_model.c - C unit tests of libsprof_model's building blocks, each
 * against a plain reference written here:
 *
 *  - the medians: sp_median (sorts) and sp_median_select (quickselect)
 *    against the middle of a sorted copy, on random arrays with many
 *    ties, odd and even lengths, one element;
 *  - the ordering helpers: sp_pair_places and sp_sort_by_pairs against a
 *    stable insertion sort by (a, b) (items of equal keys keep their
 *    order), with few and many distinct pairs and keys at the ends of the
 *    range; sp_sort leaves sorted input untouched and sorts the rest as
 *    qsort does;
 *  - bus bandwidth: nccl-tests' factors (allreduce 2(n-1)/n, allgather,
 *    reducescatter and alltoall (n-1)/n, anything else 1), n = 0 taken as 1;
 *  - point-to-point keys: a send and its recv meet under one key, which no
 *    collective's sequence number can equal, and each field keeps 21 bits;
 *  - the replay (with gen_trace's path as argument): the graph of a small
 *    generated job (4 ranks on 2 hosts, a slow rank, buckets and a helper)
 *    replayed unchanged gives every node's recorded arrival and end to
 *    the nanosecond, and a counterfactual (the slow rank fixed) makes no
 *    node later and the job's last node earlier;
 *  - warnings an analysis of a const model keeps in a list, added to the
 *    model afterwards, read as those made in place (alike ones counted,
 *    the cap's last slot counting the rest);
 *  - the replay of graphs built by hand (model_graph.h), each small enough
 *    to work out on paper, with the times written here from that
 *    reasoning: two ranks and one all-reduce (the later arrival sets the
 *    end, the transfer comes after it), a send and its recv (a recv never
 *    ends before its send began), a grouped send+recv between three ranks
 *    (the group waits for its slowest pair), and a rank whose compute is
 *    brought to its peer's (the peer's wait shrinks by exactly that, over
 *    two steps; its findings name rank 1, as its HTML page does), and an exchange whose recv started while its send ran
 *    (it arrives as recorded after the send, not after its end).  Each: unchanged, every node at its recorded arrival and
 *    end to the nanosecond; the counterfactual's times as worked out; the
 *    replay's check holds, no cause saving more than its own time on the
 *    critical path, and the cause's saving and bound as worked out.  The
 *    builder refuses local time longer than its window.
 *
 * Exit status 0 when every check holds; each failure is printed.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "html_report.h"
#include "model.h"
#include "model_graph.h"
#include "model_int.h"

static int failures;

#define CHECK(cond, ...)                                         \
    do {                                                         \
        if (!(cond)) {                                           \
            failures++;                                          \
            fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__); \
            fprintf(stderr, __VA_ARGS__);                        \
            fputc('\n', stderr);                                 \
        }                                                        \
    } while (0)

static uint64_t rng_state = 0x2545f4914f6cdd1dULL;

static uint64_t rng(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The median as the middle of a sorted copy (the mean of the two middle
 * values for an even count). */
static double reference_median(const double *v, size_t n)
{
    double *c = malloc(n * sizeof *c);
    memcpy(c, v, n * sizeof *c);
    qsort(c, n, sizeof *c, cmp_double);
    double m = n % 2 ? c[n / 2] : (c[n / 2 - 1] + c[n / 2]) / 2;
    free(c);
    return m;
}

static void test_medians(void)
{
    for (int round = 0; round < 400; round++) {
        size_t n = 1 + rng() % 64;
        unsigned spread = 1 + (unsigned)(rng() % 8); /* few values: many ties */
        double v[64], a[64], b[64];
        for (size_t i = 0; i < n; i++)
            v[i] = (double)(rng() % spread) * 0.5 - 1;
        double want = reference_median(v, n);
        memcpy(a, v, sizeof v);
        memcpy(b, v, sizeof v);
        double got = sp_median(a, n), sel = sp_median_select(b, n);
        CHECK(got == want, "sp_median of %zu values: %g, want %g", n, got, want);
        CHECK(sel == want, "sp_median_select of %zu values: %g, want %g", n, sel, want);
    }
    double one = 7;
    CHECK(sp_median(&one, 1) == 7 && sp_median_select(&one, 1) == 7, "the median of one value is it");
}

struct item {
    struct sp_pair_key k;
    uint32_t order; /* its place in the input */
};

/* Stable: equal keys keep their input order. */
static void reference_sort(struct item *it, size_t n)
{
    for (size_t i = 1; i < n; i++) {
        struct item x = it[i];
        size_t j = i;
        while (j > 0 && (it[j - 1].k.a > x.k.a || (it[j - 1].k.a == x.k.a && it[j - 1].k.b > x.k.b))) {
            it[j] = it[j - 1];
            j--;
        }
        it[j] = x;
    }
}

static void test_pair_sort(void)
{
    static const uint64_t edge[] = {0, 1, UINT64_MAX - 1, UINT64_MAX, 1ULL << 63};
    for (int round = 0; round < 60; round++) {
        size_t n = rng() % 3000;
        unsigned distinct = 1 + (unsigned)(rng() % (round % 3 ? 40 : 5000));
        struct item *in = malloc((n + 1) * sizeof *in), *ref = malloc((n + 1) * sizeof *ref);
        struct sp_pair_key *keys = malloc((n + 1) * sizeof *keys);
        uint32_t *place = malloc((n + 1) * sizeof *place);
        for (size_t i = 0; i < n; i++) {
            uint64_t d = rng() % distinct;
            in[i].k.a = d % 7 == 0 ? edge[d % 5] : d / 3;
            in[i].k.b = d % 11 == 0 ? edge[(d / 11) % 5] : d % 3;
            in[i].order = (uint32_t)i;
            keys[i] = in[i].k;
        }
        memcpy(ref, in, n * sizeof *in);
        reference_sort(ref, n);
        CHECK(sp_pair_places(keys, n, place) == 0, "sp_pair_places of %zu keys", n);
        int placed = 1;
        for (size_t i = 0; i < n; i++)
            if (place[i] >= n || ref[place[i]].order != i)
                placed = 0;
        CHECK(placed, "sp_pair_places of %zu keys (%u distinct): each item where a stable sort puts it", n,
              distinct);
        CHECK(sp_sort_by_pairs(in, sizeof *in, n, keys) == 0, "sp_sort_by_pairs of %zu items", n);
        int same = 1;
        for (size_t i = 0; i < n; i++)
            if (in[i].order != ref[i].order || in[i].k.a != ref[i].k.a || in[i].k.b != ref[i].k.b)
                same = 0;
        CHECK(same, "sp_sort_by_pairs of %zu items (%u distinct keys) is the stable sort", n, distinct);
        free(in);
        free(ref);
        free(keys);
        free(place);
    }
}

static int sort_calls;

static int cmp_counting(const void *a, const void *b)
{
    sort_calls++;
    return cmp_double(a, b);
}

static void test_sort(void)
{
    double v[200], w[200];
    for (int i = 0; i < 200; i++)
        v[i] = (double)(i / 3); /* sorted, with ties */
    memcpy(w, v, sizeof v);
    sort_calls = 0;
    sp_sort(w, 200, sizeof *w, cmp_counting);
    CHECK(!memcmp(v, w, sizeof v) && sort_calls == 199, "sorted input: one pass (%d comparisons), untouched",
          sort_calls);
    for (int round = 0; round < 50; round++) {
        size_t n = rng() % 200;
        for (size_t i = 0; i < n; i++)
            v[i] = w[i] = (double)(rng() % 50);
        qsort(v, n, sizeof *v, cmp_double);
        sp_sort(w, n, sizeof *w, cmp_double);
        CHECK(!memcmp(v, w, n * sizeof *v), "sp_sort of %zu values is qsort's", n);
    }
}

static void test_busbw(void)
{
    static const struct {
        uint32_t op, n;
        double want;
    } cases[] = {
        {SP_NCCL_ALLREDUCE, 8, 1.75},
        {SP_NCCL_ALLREDUCE, 2, 1.0},
        {SP_NCCL_ALLREDUCE, 1, 0.0},
        {SP_NCCL_ALLGATHER, 8, 0.875},
        {SP_NCCL_REDUCESCATTER, 4, 0.75},
        {SP_NCCL_ALLTOALL, 16, 0.9375},
        {SP_NCCL_BROADCAST, 8, 1.0},
        {SP_NCCL_REDUCE, 8, 1.0},
        {SP_NCCL_SEND, 2, 1.0},
        {SP_NCCL_ALLREDUCE, 0, 0.0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        double got = sp_model_busbw_factor(cases[i].op, cases[i].n);
        CHECK(fabs(got - cases[i].want) < 1e-12, "busbw factor of op %u over %u ranks: %g, want %g", cases[i].op,
              cases[i].n, got, cases[i].want);
    }
}

static void test_p2p_keys(void)
{
    uint64_t send = sp_p2p_key(3, 5, 17), recv = sp_p2p_key(3, 5, 17);
    CHECK(send == recv, "a send and its recv meet under one key");
    CHECK(sp_p2p_key(5, 3, 17) != send, "the direction is part of the key");
    CHECK(sp_p2p_key(3, 5, 18) != send, "the k-th message is part of the key");
    CHECK(send & SP_P2P_KEY_BIT, "a p2p key has the top bit, which no collective's sequence number has");
    const uint32_t max = (1u << 21) - 1;
    uint64_t top = sp_p2p_key(max, max, max);
    CHECK(((top >> 42) & max) == max, "the sender's 21 bits are kept");
    CHECK(((top >> 21) & max) == max && (top & max) == max, "the receiver's and k's 21 bits are kept");
    CHECK(sp_p2p_key(max + 1, 0, 0) == sp_p2p_key(0, 0, 0), "a rank past 21 bits wraps (the key keeps 21)");
    CHECK(((sp_p2p_key(1, SP_P2P_NO_PEER, 0) >> 21) & max) == SP_P2P_NO_PEER, "an unknown peer keeps its mark");
    CHECK(sp_op_is_p2p(SP_NCCL_SEND) && sp_op_is_p2p(SP_NCCL_RECV) && !sp_op_is_p2p(SP_NCCL_ALLREDUCE),
          "send and recv are point-to-point, allreduce is not");
}

/* What a replay gave, node by node, against the recorded chain. */
struct replay_seen {
    const struct sp_model *m;
    size_t nodes, moved, later;
    int64_t worst, last_e;
};

static void on_node(void *arg, int rank, size_t node, int64_t a, int64_t e)
{
    struct replay_seen *s = arg;
    const struct sp_rnode *n = &s->m->ranks[rank].nodes[node];
    int64_t d = (a > n->a ? a - n->a : n->a - a) + (e > n->e ? e - n->e : n->e - e);
    s->nodes++;
    s->moved += d != 0;
    s->later += a > n->a || e > n->e;
    if (d > s->worst)
        s->worst = d;
    if (e > s->last_e)
        s->last_e = e;
}

/* A kept node against the one the replay gives again: how many differ. */
struct kept_seen {
    const struct sp_whatif_nodes *w;
    size_t nodes, differ;
};

static void on_kept(void *arg, int rank, size_t node, int64_t a, int64_t e)
{
    struct kept_seen *s = arg;
    s->nodes++;
    s->differ += s->w->arr[rank][node] != a || s->w->end[rank][node] != e;
}

/* export --whatif draws what the model kept of the counterfactual: asked
 * before the run, the findings stage keeps every node of the slow rank's
 * fix as the replay places it; a cause it cannot replay keeps nothing
 * (the job test_replay generates). */
static void test_keep_whatif(const char *path)
{
    for (int c = 0; c < 2; c++) {
        int cause = c ? SP_CAUSE_PIPELINE_BUBBLE : SP_CAUSE_STRAGGLER;
        struct sp_model_opts o;
        sp_model_opts_default(&o);
        struct sp_model m;
        int rc = sp_model_open(path, &o, &m);
        if (rc == 0) {
            sp_model_keep_whatif(&m, cause);
            rc = sp_model_run(&m, SP_STAGE_FINDINGS);
        }
        CHECK(rc == 0, "the generated job is analyzed");
        if (rc == 0 && c) {
            CHECK(!m.whatif.ok && !m.whatif.arr, "pipeline_bubble, no replay of its own, keeps nothing");
        } else if (rc == 0) {
            struct kept_seen s = {&m.whatif, 0, 0};
            size_t total = 0;
            for (int r = 0; r < m.nranks; r++)
                total += m.ranks[r].nnodes;
            CHECK(m.whatif.ok && m.replay, "the straggler's fix is kept");
            if (m.whatif.ok && m.replay)
                CHECK(sp_model_replay_nodes(&m, m.replay, cause, on_kept, &s) == 0, "it replays again");
            CHECK(total > 50 && s.nodes == total && s.differ == 0,
                  "every node kept as the replay places it: %zu of %zu replayed, %zu differ", s.nodes, total,
                  s.differ);
        }
        sp_model_free(&m);
    }
}

static void test_replay(const char *gen_trace)
{
    char dir[] = "/tmp/test_model_XXXXXX", cmd[4096], path[sizeof dir + 8];
    if (!mkdtemp(dir)) {
        CHECK(0, "mkdtemp failed");
        return;
    }
    snprintf(path, sizeof path, "%s/t", dir);
    snprintf(cmd, sizeof cmd,
             "'%s' '%s' --ranks 4 --hosts 2 --steps 12 --kernels 6 --colls 3 --slow-rank 2 "
             "--slow-compute-ms 3 --helper > /dev/null",
             gen_trace, path);
    CHECK(system(cmd) == 0, "gen_trace wrote the job: %s", cmd);
    struct sp_model_opts o;
    sp_model_opts_default(&o);
    struct sp_model m;
    int rc = sp_model_open(path, &o, &m);
    if (rc == 0)
        rc = sp_model_run(&m, SP_STAGE_FINDINGS);
    CHECK(rc == 0, "the generated job is analyzed");
    struct sp_replay rp;
    memset(&rp, 0, sizeof rp);
    if (rc == 0 && sp_model_replay(&m, &rp) == 0) {
        size_t total = 0;
        int64_t recorded_last = 0;
        for (int r = 0; r < m.nranks; r++) {
            total += m.ranks[r].nnodes;
            for (size_t k = 0; k < m.ranks[r].nnodes; k++)
                if (m.ranks[r].nodes[k].e > recorded_last)
                    recorded_last = m.ranks[r].nodes[k].e;
        }
        struct replay_seen asis = {.m = &m};
        CHECK(sp_model_replay_nodes(&m, &rp, SP_CAUSE_N, on_node, &asis) == 0, "the job as recorded replays");
        CHECK(total > 100 && asis.nodes == total, "every node replayed: %zu of %zu", asis.nodes, total);
        CHECK(asis.moved == 0, "replayed unchanged, %zu nodes moved (by up to %lld ns)", asis.moved,
              (long long)asis.worst);
        struct replay_seen fixed = {.m = &m};
        CHECK(sp_model_replay_nodes(&m, &rp, SP_CAUSE_STRAGGLER, on_node, &fixed) == 0,
              "the slow rank's fix replays");
        CHECK(fixed.nodes == total && fixed.later == 0, "no node later once a rank is faster (%zu of %zu)",
              fixed.later, fixed.nodes);
        CHECK(fixed.last_e < recorded_last, "the job ends earlier: %lld -> %lld ns", (long long)recorded_last,
              (long long)fixed.last_e);
        printf("replay: %zu nodes of %d ranks replayed unchanged; the slow rank fixed, the last node ends "
               "%.3f ms earlier\n",
               asis.nodes, m.nranks, (double)(recorded_last - fixed.last_e) / 1e6);
    } else if (rc == 0) {
        CHECK(0, "the replay has nothing to replay");
    }
    sp_model_replay_free(&rp);
    sp_model_free(&m);
    test_keep_whatif(path);
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    CHECK(system(cmd) == 0, "%s", cmd);
}

/* Warnings an analysis of a const model makes (struct sp_warn_list), added
 * to the model afterwards, read as if made there: alike ones counted into
 * the first, the cap's last slot counting the rest. */
static const char *const warn_fmt_a = "%s: could not be read again (%d)", *const warn_fmt_b = "other %d";

static void warn_directly(struct sp_model *m, int i)
{
    if (i % 3)
        sp_model_warn(m, warn_fmt_a, "f", i);
    else
        sp_model_warn(m, warn_fmt_b, i);
}

static void warn_by_list(struct sp_warn_list *w, int i)
{
    if (i % 3)
        sp_warn_list_add(w, warn_fmt_a, "f", i);
    else
        sp_warn_list_add(w, warn_fmt_b, i);
}

static void test_warn_list(void)
{
    for (int before = 0; before < SP_MODEL_MAX_WARNINGS + 2; before += SP_MODEL_MAX_WARNINGS / 2 + 1) {
        struct sp_model direct, later;
        memset(&direct, 0, sizeof direct);
        memset(&later, 0, sizeof later);
        char fmt[SP_MODEL_MAX_WARNINGS][16]; /* distinct formats fill the model first */
        for (int i = 0; i < before; i++) {
            snprintf(fmt[i % SP_MODEL_MAX_WARNINGS], sizeof fmt[0], "w%d", i);
            sp_model_warn(&direct, fmt[i % SP_MODEL_MAX_WARNINGS], NULL);
            sp_model_warn(&later, fmt[i % SP_MODEL_MAX_WARNINGS], NULL);
        }
        struct sp_warn_list w = {0};
        for (int i = 0; i < 7; i++) {
            warn_directly(&direct, i);
            warn_by_list(&w, i);
        }
        CHECK(w.n == 7 && later.nwarnings == (before < SP_MODEL_MAX_WARNINGS ? before : SP_MODEL_MAX_WARNINGS),
              "the list holds the analysis's warnings until they are added (%d)", w.n);
        sp_model_warn_all(&later, &w);
        CHECK(w.n == 0 && !w.text, "the list is emptied");
        int same = direct.nwarnings == later.nwarnings;
        for (int i = 0; same && i < direct.nwarnings; i++)
            same = !strcmp(direct.warnings[i], later.warnings[i]);
        CHECK(same, "after %d warnings, the list's read as if made in place (%d and %d warnings, the last: %s | %s)",
              before, direct.nwarnings, later.nwarnings,
              direct.nwarnings ? direct.warnings[direct.nwarnings - 1] : "",
              later.nwarnings ? later.warnings[later.nwarnings - 1] : "");
        if (before == 0)
            CHECK(direct.nwarnings == 2 && strstr(direct.warnings[1], "(and 3 more like it)"),
                  "alike warnings counted into the first: %s", direct.nwarnings > 1 ? direct.warnings[1] : "");
        sp_model_free(&direct);
        sp_model_free(&later);
    }
}

/* ---- graphs built by hand ---- */

#define MS 1000000LL /* ns; every time below is whole ms, which a float holds exactly */
#define HAND_RANKS 3
#define HAND_NODES 4

/* Each rank's nodes in order (ops, then its step's end), arrival and end. */
struct hand_times {
    int nranks;
    size_t n[HAND_RANKS];
    int64_t a[HAND_RANKS][HAND_NODES], e[HAND_RANKS][HAND_NODES];
};

static void on_hand_node(void *arg, int rank, size_t node, int64_t a, int64_t e)
{
    struct hand_times *p = arg;
    if (rank < 0 || rank >= HAND_RANKS || node >= HAND_NODES)
        return;
    p->a[rank][node] = a;
    p->e[rank][node] = e;
    if (node + 1 > p->n[rank])
        p->n[rank] = node + 1;
}

/* One replay of m node by node (cause SP_CAUSE_N: as recorded) against
 * want, and, for a counterfactual, no node later than recorded. */
static void expect_replay(struct sp_model *m, const struct sp_replay *rp, const char *what, int cause,
                          const struct hand_times *want)
{
    struct hand_times got = {.nranks = m->nranks};
    CHECK(sp_model_replay_nodes(m, rp, cause, on_hand_node, &got) == 0, "%s: %s replays", what,
          cause == SP_CAUSE_N ? "the graph as recorded" : sp_cause_info(cause)->name);
    for (int r = 0; r < want->nranks; r++) {
        CHECK(got.n[r] == want->n[r], "%s, %s: rank %d has %zu nodes replayed, want %zu", what,
              sp_cause_info(cause)->name, r, got.n[r], want->n[r]);
        for (size_t j = 0; j < want->n[r] && j < got.n[r]; j++) {
            CHECK(got.a[r][j] == want->a[r][j] && got.e[r][j] == want->e[r][j],
                  "%s, %s: rank %d node %zu replayed at [%lld, %lld] ns, want [%lld, %lld]", what,
                  cause == SP_CAUSE_N ? "unchanged" : sp_cause_info(cause)->name, r, j, (long long)got.a[r][j],
                  (long long)got.e[r][j], (long long)want->a[r][j], (long long)want->e[r][j]);
            const struct sp_rnode *n = &m->ranks[r].nodes[j];
            CHECK(got.a[r][j] <= n->a && got.e[r][j] <= n->e, "%s, %s: rank %d node %zu later than recorded", what,
                  sp_cause_info(cause)->name, r, j);
        }
    }
}

/* What every hand-built graph must show: its nodes as given; replayed
 * unchanged, each at its recorded times; with the cause removed, at the
 * times worked out (want); the replay's check holds for every cause it
 * priced, and the cause saves saved_ms per step against its own time on
 * the critical path, bound_ms (both worked out). */
static void check_hand(struct sp_model *m, const char *what, const struct hand_times *rec, int cause,
                       const struct hand_times *want, double saved_ms, double bound_ms)
{
    for (int r = 0; r < rec->nranks; r++) {
        const struct sp_rank *rk = &m->ranks[r];
        CHECK(rk->nnodes == rec->n[r], "%s: rank %d has %zu nodes, %zu given", what, r, rk->nnodes, rec->n[r]);
        for (size_t j = 0; j < rk->nnodes && j < rec->n[r]; j++)
            CHECK(rk->nodes[j].a == rec->a[r][j] && rk->nodes[j].e == rec->e[r][j],
                  "%s: rank %d node %zu recorded at [%lld, %lld], given [%lld, %lld]", what, r, j,
                  (long long)rk->nodes[j].a, (long long)rk->nodes[j].e, (long long)rec->a[r][j],
                  (long long)rec->e[r][j]);
    }
    struct sp_replay rp;
    if (sp_model_replay(m, &rp) < 0) {
        CHECK(0, "%s: the graph replays", what);
        sp_model_replay_free(&rp);
        return;
    }
    expect_replay(m, &rp, what, SP_CAUSE_N, rec);
    expect_replay(m, &rp, what, cause, want);
    struct sp_whatif_check ck;
    sp_model_replay_check(m, &rp, &ck);
    CHECK(ck.done && ck.replay_ok && ck.replay_error_pct == 0 && ck.step_error_pct == 0 && ck.unplaced == 0,
          "%s: the unchanged replay is the recording (error %g%% per node, %g%% per step, %d unplaced)", what,
          ck.replay_error_pct, ck.step_error_pct, ck.unplaced);
    for (int c = 0; c < SP_CAUSE_N; c++)
        CHECK(ck.bound_ok[c], "%s: %s saves %.6f ms, more than its %.6f ms on the critical path", what,
              sp_cause_info(c)->name, ck.saved_ms[c], ck.bound_ms[c]);
    CHECK(fabs(ck.saved_ms[cause] - saved_ms) < 1e-9 && fabs(rp.base_ms - rp.ms[cause] - saved_ms) < 1e-9,
          "%s: %s saves %.9f ms per step, want %.3f", what, sp_cause_info(cause)->name, ck.saved_ms[cause],
          saved_ms);
    CHECK(fabs(ck.bound_ms[cause] - bound_ms) < 1e-9, "%s: %s's time on the critical path %.9f ms, want %.3f", what,
          sp_cause_info(cause)->name, ck.bound_ms[cause], bound_ms);
    CHECK(ck.ok, "%s: the replay's check holds", what);
    sp_model_replay_free(&rp);
}

/* A step from 0 to `end` on `rank` holding one op, `tail` of local time
 * after it: the shape of most hand graphs. */
static int one_op_step(struct sp_graph_build *b, int rank, const struct sp_graph_op *op, int64_t end,
                       const float tail[SP_LOC_N])
{
    int rc = sp_graph_step(b, rank, 0);
    rc |= sp_graph_op(b, rank, op);
    rc |= sp_graph_step_end(b, rank, end, tail);
    return rc;
}

/* Two ranks, one all-reduce.  Rank 0 computes 2 ms and arrives at 2;
 * rank 1 computes 2 ms and waits 3 ms for input, arriving at 5.  The data
 * moves after the later arrival, 1 ms: both kernels end at 6, then 4 ms
 * of compute end the step at 10.  Without the input wait rank 1 arrives
 * at 2, the transfer ends at 3 on both, the step at 7: rank 0's wait
 * (3 ms) is gone, and its kernel ends exactly 3 ms earlier.  Input's
 * time on the critical path: rank 1's 3 ms in the all-reduce's group.
 * Communication's: the 1 ms transfer, all it can save. */
static void test_graph_allreduce(void)
{
    struct sp_model m;
    struct sp_graph_build *b = sp_graph_begin(&m, 2, NULL);
    CHECK(b, "a graph of 2 ranks begins");
    const struct sp_graph_call ar[2] = {{SP_NCCL_ALLREDUCE, 0xa11, 2, 0, -1, 1, 1 << 20},
                                        {SP_NCCL_ALLREDUCE, 0xa11, 2, 1, -1, 1, 1 << 20}};
    const float tail[SP_LOC_N] = {[SP_LOC_BUSY] = 4 * MS};
    int rc = 0;
    rc |= one_op_step(b, 0, &(struct sp_graph_op){2 * MS, 6 * MS, .gap = {[SP_LOC_BUSY] = 2 * MS}, .calls = &ar[0], .ncalls = 1}, 10 * MS, tail);
    rc |= one_op_step(b, 1, &(struct sp_graph_op){5 * MS, 6 * MS, .gap = {[SP_LOC_BUSY] = 2 * MS, [SP_LOC_INPUT] = 3 * MS}, .calls = &ar[1], .ncalls = 1}, 10 * MS, tail);
    rc |= sp_graph_finish(b);
    CHECK(rc == 0, "the all-reduce graph is built (%s)", m.nwarnings ? m.warnings[0] : "");
    if (rc == 0) {
        CHECK(m.ranks[0].calls[0].wait == 3 * MS && m.ranks[1].calls[0].wait == 0,
              "rank 0 waited 3 ms for rank 1, which did not wait: %lld, %lld ns",
              (long long)m.ranks[0].calls[0].wait, (long long)m.ranks[1].calls[0].wait);
        CHECK(m.ranks[0].cat[0][SP_CAT_COLL_WAIT] == 3 * MS && m.ranks[0].cat[0][SP_CAT_COLL_TRANSFER] == 1 * MS &&
                  m.ranks[1].cat[0][SP_CAT_IDLE_INPUT] == 3 * MS && m.step_mean_ms == 10,
              "the categories: rank 0 waits 3 ms and moves data 1 ms, rank 1 waits 3 ms for input; 10 ms steps");
        const struct hand_times rec = {2, {2, 2}, {{2 * MS, 10 * MS}, {5 * MS, 10 * MS}}, {{6 * MS, 10 * MS}, {6 * MS, 10 * MS}}};
        const struct hand_times fixed = {2, {2, 2}, {{2 * MS, 7 * MS}, {2 * MS, 7 * MS}}, {{3 * MS, 7 * MS}, {3 * MS, 7 * MS}}};
        check_hand(&m, "all-reduce", &rec, SP_CAUSE_INPUT, &fixed, 3, 3);
        /* the transfer hidden: both leave at the last arrival, 5 ms, and
         * the step ends at 9; 1 ms saved, the transfer on the path */
        const struct hand_times hidden = {2, {2, 2}, {{2 * MS, 9 * MS}, {5 * MS, 9 * MS}}, {{5 * MS, 9 * MS}, {5 * MS, 9 * MS}}};
        check_hand(&m, "all-reduce", &rec, SP_CAUSE_COMMUNICATION, &hidden, 1, 1);
    }
    sp_model_free(&m);
}

/* Rank 0 sends to rank 1.  The sender computes 2 ms and waits 4 ms for
 * input, sending at 6; the receiver is in its recv from 1 (after 1 ms of
 * host work) and gets the data 1 ms after the send began: both end at 7,
 * and 3 ms of compute end the step at 10.  Without input the send starts
 * at 2, both end at 3, the steps at 6 (the receiver's wait 4 ms shorter).
 * Without the receiver's host time its recv starts at 0 but still ends
 * at 7: a recv never ends before its send began, and nothing moves. */
static void test_graph_send_recv(void)
{
    struct sp_model m;
    struct sp_graph_build *b = sp_graph_begin(&m, 2, NULL);
    CHECK(b, "a graph of 2 ranks begins");
    const struct sp_graph_call send = {SP_NCCL_SEND, 0xb0b, 2, 0, 1, 1, 4096},
                               recv = {SP_NCCL_RECV, 0xb0b, 2, 1, 0, 1, 4096};
    const float tail[SP_LOC_N] = {[SP_LOC_BUSY] = 3 * MS};
    int rc = 0;
    rc |= one_op_step(b, 0, &(struct sp_graph_op){6 * MS, 7 * MS, .gap = {[SP_LOC_BUSY] = 2 * MS, [SP_LOC_INPUT] = 4 * MS}, .calls = &send, .ncalls = 1}, 10 * MS, tail);
    rc |= one_op_step(b, 1, &(struct sp_graph_op){1 * MS, 7 * MS, .gap = {[SP_LOC_HOST] = 1 * MS}, .calls = &recv, .ncalls = 1}, 10 * MS, tail);
    rc |= sp_graph_finish(b);
    CHECK(rc == 0, "the send/recv graph is built (%s)", m.nwarnings ? m.warnings[0] : "");
    if (rc == 0) {
        CHECK(m.ranks[0].calls[0].inst >= 0 && m.ranks[0].calls[0].inst == m.ranks[1].calls[0].inst,
              "the send and its recv are one instance");
        CHECK(m.ranks[1].calls[0].wait == 5 * MS, "the receiver waited 5 ms for the send: %lld ns",
              (long long)m.ranks[1].calls[0].wait);
        const struct hand_times rec = {2, {2, 2}, {{6 * MS, 10 * MS}, {1 * MS, 10 * MS}}, {{7 * MS, 10 * MS}, {7 * MS, 10 * MS}}};
        const struct hand_times no_input = {2, {2, 2}, {{2 * MS, 6 * MS}, {1 * MS, 6 * MS}}, {{3 * MS, 6 * MS}, {3 * MS, 6 * MS}}};
        check_hand(&m, "send/recv", &rec, SP_CAUSE_INPUT, &no_input, 4, 4);
        /* the receiver's own host time: its recv starts earlier and ends no earlier */
        struct sp_replay rp;
        if (sp_model_replay(&m, &rp) == 0) {
            const struct hand_times no_host = {2, {2, 2}, {{6 * MS, 10 * MS}, {0, 10 * MS}}, {{7 * MS, 10 * MS}, {7 * MS, 10 * MS}}};
            expect_replay(&m, &rp, "send/recv", SP_CAUSE_HOST, &no_host);
            CHECK(rp.gain[SP_CAUSE_HOST] == 0, "the receiver's host time gains nothing: %g", rp.gain[SP_CAUSE_HOST]);
        } else {
            CHECK(0, "the send/recv graph replays");
        }
        sp_model_replay_free(&rp);
    }
    sp_model_free(&m);
}

/* Three ranks on a chain, 0 -> 1 -> 2; rank 1 receives from 0 and sends
 * to 2 in one group (one kernel, as 1F1B's send+recv).  Rank 0 sends at
 * 2; rank 1 enters its group at 1; rank 2 computes 2 ms and waits 3 ms
 * for input, receiving from 5.  Rank 0's pair is complete at 2 and its
 * send ends at 3; rank 1's group waits for its slowest pair (rank 2, at
 * 5) and ends at 6 with rank 2's recv; 4 ms of compute follow on each:
 * steps of 7, 10 and 10 ms, 9 ms on average.  Without input rank 2
 * arrives at 2, rank 1's group and rank 2's recv end at 3 and every step
 * at 7 (rank 1's wait 3 ms shorter, rank 0 as it was): 2 ms saved on
 * average, against rank 2's 3 ms of input in its recv's group. */
static void test_graph_group(void)
{
    struct sp_model m;
    struct sp_graph_build *b = sp_graph_begin(&m, 3, NULL);
    CHECK(b, "a graph of 3 ranks begins");
    const struct sp_graph_call send01 = {SP_NCCL_SEND, 0xc0c, 3, 0, 1, 1, 4096};
    const struct sp_graph_call group1[2] = {{SP_NCCL_RECV, 0xc0c, 3, 1, 0, 1, 4096},
                                            {SP_NCCL_SEND, 0xc0c, 3, 1, 2, 1, 4096}};
    const struct sp_graph_call recv21 = {SP_NCCL_RECV, 0xc0c, 3, 2, 1, 1, 4096};
    const float tail[SP_LOC_N] = {[SP_LOC_BUSY] = 4 * MS};
    int rc = 0;
    rc |= one_op_step(b, 0, &(struct sp_graph_op){2 * MS, 3 * MS, .gap = {[SP_LOC_BUSY] = 2 * MS}, .calls = &send01, .ncalls = 1}, 7 * MS, tail);
    rc |= one_op_step(b, 1, &(struct sp_graph_op){1 * MS, 6 * MS, .gap = {[SP_LOC_BUSY] = 1 * MS}, .calls = group1, .ncalls = 2}, 10 * MS, tail);
    rc |= one_op_step(b, 2, &(struct sp_graph_op){5 * MS, 6 * MS, .gap = {[SP_LOC_BUSY] = 2 * MS, [SP_LOC_INPUT] = 3 * MS}, .calls = &recv21, .ncalls = 1}, 10 * MS, tail);
    rc |= sp_graph_finish(b);
    CHECK(rc == 0, "the grouped send+recv graph is built (%s)", m.nwarnings ? m.warnings[0] : "");
    if (rc == 0) {
        CHECK(m.ranks[1].calls[0].wait == 4 * MS && m.ranks[1].calls[1].wait == 4 * MS,
              "both calls of rank 1's group wait for its slowest pair, 4 ms: %lld, %lld ns",
              (long long)m.ranks[1].calls[0].wait, (long long)m.ranks[1].calls[1].wait);
        const struct hand_times rec = {3,
                                       {2, 2, 2},
                                       {{2 * MS, 7 * MS}, {1 * MS, 10 * MS}, {5 * MS, 10 * MS}},
                                       {{3 * MS, 7 * MS}, {6 * MS, 10 * MS}, {6 * MS, 10 * MS}}};
        const struct hand_times fixed = {3,
                                         {2, 2, 2},
                                         {{2 * MS, 7 * MS}, {1 * MS, 7 * MS}, {2 * MS, 7 * MS}},
                                         {{3 * MS, 7 * MS}, {3 * MS, 7 * MS}, {3 * MS, 7 * MS}}};
        check_hand(&m, "grouped send+recv", &rec, SP_CAUSE_INPUT, &fixed, 2, 3);
    }
    sp_model_free(&m);
}

/* Two ranks, an all-reduce in each of two 10 ms steps.  Rank 1 computes
 * 5 ms before it, rank 0 2 ms; the transfer takes 1 ms after rank 1
 * arrives, then 4 ms of compute end the step.  The straggler fix brings
 * rank 1's local time to its peer's: it computes 2 ms, both arrive at 2,
 * end at 3, the first step at 7; the second step's all-reduce comes 2 ms
 * after it (the recorded distance from the step's start), at 9, ends at
 * 10, and the second step at 14: 3 ms saved per step, rank 0's wait of
 * 3 ms gone in each, against rank 1's 3 ms of excess compute per step. */
static void test_graph_compute(void)
{
    struct sp_model m;
    struct sp_graph_build *b = sp_graph_begin(&m, 2, NULL);
    CHECK(b, "a graph of 2 ranks begins");
    const float tail[SP_LOC_N] = {[SP_LOC_BUSY] = 4 * MS};
    int rc = 0;
    for (int s = 0; s < 2; s++) {
        int64_t t0 = s * 10 * MS;
        for (int r = 0; r < 2; r++) {
            const struct sp_graph_call ar = {SP_NCCL_ALLREDUCE, 0xd0d, 2, r, -1, (uint64_t)s + 1, 1 << 20};
            int64_t busy = r ? 5 * MS : 2 * MS;
            rc |= sp_graph_step(b, r, t0);
            rc |= sp_graph_op(b, r,
                              &(struct sp_graph_op){t0 + busy, t0 + 6 * MS, .gap = {[SP_LOC_BUSY] = (float)busy},
                                                    .calls = &ar, .ncalls = 1});
            rc |= sp_graph_step_end(b, r, t0 + 10 * MS, tail);
        }
    }
    rc |= sp_graph_finish(b);
    CHECK(rc == 0, "the two-step graph is built (%s)", m.nwarnings ? m.warnings[0] : "");
    if (rc == 0) {
        const struct hand_times rec = {2,
                                       {4, 4},
                                       {{2 * MS, 10 * MS, 12 * MS, 20 * MS}, {5 * MS, 10 * MS, 15 * MS, 20 * MS}},
                                       {{6 * MS, 10 * MS, 16 * MS, 20 * MS}, {6 * MS, 10 * MS, 16 * MS, 20 * MS}}};
        const struct hand_times fixed = {2,
                                         {4, 4},
                                         {{2 * MS, 7 * MS, 9 * MS, 14 * MS}, {2 * MS, 7 * MS, 9 * MS, 14 * MS}},
                                         {{3 * MS, 7 * MS, 10 * MS, 14 * MS}, {3 * MS, 7 * MS, 10 * MS, 14 * MS}}};
        check_hand(&m, "slow compute", &rec, SP_CAUSE_STRAGGLER, &fixed, 3, 3);
        /* the passes after it run on the graph: the findings name rank 1 */
        CHECK(sp_model_run(&m, SP_STAGE_FINDINGS) == 0 && m.nfindings > 0, "the graph's findings are made");
        const struct sp_finding *f = m.nfindings ? &m.findings[0] : NULL;
        CHECK(f && f->cause == SP_CAUSE_STRAGGLER && f->nranks == 1 && f->ranks[0] == 1 && fabs(f->gain - 0.3) < 1e-9,
              "the first finding: rank 1 the straggler, 30%% of the step (%s, %d ranks, gain %g)",
              f ? sp_cause_info(f->cause)->name : "none", f ? f->nranks : 0, f ? f->gain : 0);
        /* and a renderer reads it as any model: the HTML page leads with it */
        FILE *page = tmpfile();
        char html[1 << 16] = "";
        if (page && sp_html_report(page, &m, NULL, 0) == 0 && fseek(page, 0, SEEK_SET) == 0)
            html[fread(html, 1, sizeof html - 1, page)] = 0;
        if (page)
            fclose(page);
        const char *first = strstr(html, "class=\"finding "), *cause = first ? strstr(first, "data-cause=") : NULL;
        CHECK(cause && !strncmp(cause, "data-cause=\"straggler\" data-gain=\"0.3000\"", 41) &&
                  strstr(first, "rank 1, steps 0-1"),
              "the graph's HTML page leads with the straggler, rank 1, 30%%");
    }
    sp_model_free(&m);
}

/* Two ranks exchange (each sends to the other), rank 0's send and recv
 * on their own streams: it sends at 2, spends 1 ms of host time issuing
 * the recv, which starts at 3 while the send still runs (it did not wait
 * for it); rank 1 computes 3 ms and waits 2 ms for input, then runs its
 * send and recv as one kernel from 5.  Both pairs are complete at 5; every
 * kernel ends 1 ms later, at 6, and 4 ms of compute end the steps at 10.
 * Without input rank 1 arrives at 3: the pairs complete at 3, the
 * kernels end at 4, the steps at 8 - and rank 0's recv still starts at
 * 3, 1 ms after its send, though the send now ends at 4: 2 ms saved,
 * rank 1's 2 ms of input in its kernel's group. */
static void test_graph_concurrent(void)
{
    struct sp_model m;
    struct sp_graph_build *b = sp_graph_begin(&m, 2, NULL);
    CHECK(b, "a graph of 2 ranks begins");
    const struct sp_graph_call send01 = {SP_NCCL_SEND, 0xf0f, 2, 0, 1, 1, 4096},
                               recv10 = {SP_NCCL_RECV, 0xf0f, 2, 0, 1, 1, 4096};
    const struct sp_graph_call both1[2] = {{SP_NCCL_RECV, 0xf0f, 2, 1, 0, 1, 4096},
                                           {SP_NCCL_SEND, 0xf0f, 2, 1, 0, 1, 4096}};
    const float tail[SP_LOC_N] = {[SP_LOC_BUSY] = 4 * MS};
    int rc = 0;
    rc |= sp_graph_step(b, 0, 0);
    rc |= sp_graph_op(b, 0,
                      &(struct sp_graph_op){2 * MS, 6 * MS, .gap = {[SP_LOC_BUSY] = 2 * MS},
                                            .under = {[SP_LOC_HOST] = 1 * MS}, .calls = &send01, .ncalls = 1});
    rc |= sp_graph_op(b, 0, &(struct sp_graph_op){3 * MS, 6 * MS, .calls = &recv10, .ncalls = 1});
    rc |= sp_graph_step_end(b, 0, 10 * MS, tail);
    rc |= one_op_step(b, 1, &(struct sp_graph_op){5 * MS, 6 * MS, .gap = {[SP_LOC_BUSY] = 3 * MS, [SP_LOC_INPUT] = 2 * MS}, .calls = both1, .ncalls = 2}, 10 * MS, tail);
    rc |= sp_graph_finish(b);
    CHECK(rc == 0, "the exchange graph is built (%s)", m.nwarnings ? m.warnings[0] : "");
    if (rc == 0) {
        CHECK(m.ranks[0].calls[0].wait == 3 * MS && m.ranks[0].calls[1].wait == 2 * MS,
              "rank 0's send waited 3 ms for rank 1, its recv 2 ms: %lld, %lld ns",
              (long long)m.ranks[0].calls[0].wait, (long long)m.ranks[0].calls[1].wait);
        CHECK(m.ranks[0].cat[0][SP_CAT_COLL_WAIT] == 2 * MS && m.ranks[0].cat[0][SP_CAT_COLL_TRANSFER] == 1 * MS &&
                  m.ranks[0].cat[0][SP_CAT_IDLE_HOST] == 1 * MS,
              "rank 0's categories: the recv's 2 ms of wait and 1 ms of transfer after its 1 ms of host time");
        const struct hand_times rec = {2,
                                       {3, 2},
                                       {{2 * MS, 3 * MS, 10 * MS}, {5 * MS, 10 * MS}},
                                       {{6 * MS, 6 * MS, 10 * MS}, {6 * MS, 10 * MS}}};
        const struct hand_times fixed = {2,
                                         {3, 2},
                                         {{2 * MS, 3 * MS, 8 * MS}, {3 * MS, 8 * MS}},
                                         {{4 * MS, 4 * MS, 8 * MS}, {4 * MS, 8 * MS}}};
        check_hand(&m, "exchange", &rec, SP_CAUSE_INPUT, &fixed, 2, 2);
    }
    sp_model_free(&m);
}

/* Local time longer than the window it is measured in is refused, with
 * a warning that says so. */
static void test_graph_refuses(void)
{
    struct sp_model m;
    struct sp_graph_build *b = sp_graph_begin(&m, 1, NULL);
    const struct sp_graph_call ar = {SP_NCCL_ALLREDUCE, 0xe0e, 1, 0, -1, 1, 64};
    CHECK(b && sp_graph_step(b, 0, 0) == 0, "a graph of one rank begins a step");
    CHECK(sp_graph_op(b, 0,
                      &(struct sp_graph_op){2 * MS, 3 * MS, .gap = {[SP_LOC_BUSY] = 3 * MS}, .calls = &ar, .ncalls = 1}) < 0,
          "3 ms of compute in a 2 ms gap is refused");
    CHECK(m.nwarnings == 1 && strstr(m.warnings[0], "longer than the gap"), "and said: %s",
          m.nwarnings ? m.warnings[0] : "nothing");
    CHECK(sp_graph_op(b, 0,
                      &(struct sp_graph_op){2 * MS, 3 * MS, .under = {[SP_LOC_BUSY] = 2 * MS}, .calls = &ar, .ncalls = 1}) ==
              0,
          "an op whose compute under it is longer than it ran is taken until the next node");
    CHECK(sp_graph_step_end(b, 0, 10 * MS, (const float[SP_LOC_N]){0}) < 0,
          "and refused then: 2 ms of compute under a 1 ms kernel");
    CHECK(sp_graph_finish(b) < 0, "a graph with a step left open is not finished");
    sp_model_free(&m);
}

int main(int argc, char **argv)
{
    test_medians();
    test_pair_sort();
    test_sort();
    test_busbw();
    test_p2p_keys();
    test_warn_list();
    test_graph_allreduce();
    test_graph_send_recv();
    test_graph_group();
    test_graph_compute();
    test_graph_concurrent();
    test_graph_refuses();
    if (argc > 1)
        test_replay(argv[1]);
    if (failures) {
        fprintf(stderr, "%d check(s) failed\n", failures);
        return 1;
    }
    printf("test_model: medians, pair sort, sort, bus bandwidth, p2p keys, warning lists, hand-built graphs%s: all checks hold\n",
           argc > 1 ? ", the replay, the what-if kept" : "");
    return 0;
}
