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
 *    node later and the job's last node earlier.
 *
 * Exit status 0 when every check holds; each failure is printed.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model.h"
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

int main(int argc, char **argv)
{
    test_medians();
    test_pair_sort();
    test_sort();
    test_busbw();
    test_p2p_keys();
    if (argc > 1)
        test_replay(argv[1]);
    if (failures) {
        fprintf(stderr, "%d check(s) failed\n", failures);
        return 1;
    }
    printf("test_model: medians, pair sort, sort, bus bandwidth, p2p keys%s: all checks hold\n",
           argc > 1 ? ", the replay, the what-if kept" : "");
    return 0;
}
