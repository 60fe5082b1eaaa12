/*
 * import_json.c - stream a Kineto JSON trace through yajl's callback parser.
 *
 * Why yajl: it is a small, packaged C library (Debian libyajl) whose parser
 * is push-based - we feed it fixed-size chunks and it calls us back per
 * token - so a multi-gigabyte trace is read in constant memory.  A tree
 * parser would hold the whole document.
 *
 * Design: the parser keeps a stack of frames, one per open map or array,
 * each knowing what it is (the root, the traceEvents array - or the whole
 * document, in the Trace Event Format's JSON Array Format that PyTorch
 * without Kineto writes - one event, the
 * event's args, distributedInfo, a grid/block array, or something we skip)
 * and, for maps, which key the next value belongs to.  Values are routed by
 * (frame, key); everything else only moves the depth.  When an event's map
 * closes, the flattened record is handed to the caller and cleared.
 *
 * Invariants: memory is the stack (bounded depth) plus one event record
 * plus yajl's token buffer (bounded by the longest token); an event is
 * delivered only when its map closed, so a truncated file never yields a
 * half-read event.
 *
 * Bounds: the depth is checked as maps and arrays open (a callback that
 * stops yajl).  Token length cannot be: yajl calls back only once a token
 * is whole, having buffered and re-scanned it at every chunk.  So each
 * chunk is first scanned here for where strings and other tokens start
 * and end (memchr for the closing quote, a byte loop outside strings),
 * and only the bytes before a token passes SP_KINETO_TOKEN_MAX reach yajl.
 */
#include "import_json.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yajl/yajl_parse.h>
#include <zlib.h>

#define CHUNK_BYTES (64 * 1024)
#define MAX_DEPTH 64 /* frames kept; deeper ones (to SP_KINETO_DEPTH_MAX) only counted */
#define US_TO_NS_POW10 3
#define GZIP_MAGIC0 0x1f
#define GZIP_MAGIC1 0x8b

// clang-format off
enum frame_kind { F_ROOT, F_EVENTS, F_EVENT, F_ARGS, F_DIST, F_GRID, F_BLOCK, F_GROUP, F_SKIP };

/* Keys we route; K_OTHER for the rest. */
enum key_id {
    K_OTHER, K_TRACE_EVENTS, K_DIST, K_BASE_TIME,
    K_PH, K_CAT, K_NAME, K_PID, K_TID, K_TS, K_DUR, K_ARGS,
    K_CORRELATION, K_STREAM, K_DEVICE, K_BYTES, K_GRID, K_BLOCK,
    K_COLLECTIVE, K_IN_NELEMS, K_GROUP_SIZE, K_DTYPE, K_PG_NAME, K_PG_RANKS, K_SEQ,
    K_SRC_RANK, K_DST_RANK, K_RANK_ARG, K_EXTERNAL_ID,
    K_RANK, K_WORLD_SIZE, K_BACKEND,
};
// clang-format on

struct key_name {
    enum frame_kind frame;
    const char *text;
    enum key_id id;
};

static const struct key_name key_names[] = {
    {F_ROOT, "traceEvents", K_TRACE_EVENTS},
    {F_ROOT, "distributedInfo", K_DIST},
    {F_ROOT, "baseTimeNanoseconds", K_BASE_TIME},
    {F_EVENT, "ph", K_PH},
    {F_EVENT, "cat", K_CAT},
    {F_EVENT, "name", K_NAME},
    {F_EVENT, "pid", K_PID},
    {F_EVENT, "tid", K_TID},
    {F_EVENT, "ts", K_TS},
    {F_EVENT, "dur", K_DUR},
    {F_EVENT, "args", K_ARGS},
    {F_ARGS, "correlation", K_CORRELATION},
    {F_ARGS, "stream", K_STREAM},
    {F_ARGS, "device", K_DEVICE},
    {F_ARGS, "bytes", K_BYTES},
    {F_ARGS, "grid", K_GRID},
    {F_ARGS, "block", K_BLOCK},
    {F_ARGS, "Collective name", K_COLLECTIVE},
    {F_ARGS, "In msg nelems", K_IN_NELEMS},
    {F_ARGS, "Group size", K_GROUP_SIZE},
    {F_ARGS, "dtype", K_DTYPE},
    {F_ARGS, "Process Group Name", K_PG_NAME},
    {F_ARGS, "Process Group Ranks", K_PG_RANKS},
    {F_ARGS, "Seq", K_SEQ},
    {F_ARGS, "Src Rank", K_SRC_RANK},
    {F_ARGS, "Dst Rank", K_DST_RANK},
    {F_ARGS, "Rank", K_RANK_ARG},
    {F_ARGS, "External id", K_EXTERNAL_ID},
    {F_DIST, "rank", K_RANK},
    {F_DIST, "world_size", K_WORLD_SIZE},
    {F_DIST, "backend", K_BACKEND},
};

struct frame {
    enum frame_kind kind;
    enum key_id key; /* maps: the key of the next value */
};

/* Where the scan of the raw text is, across chunks. */
struct token_scan {
    int in_string;
    uint64_t start; /* byte where the current token began */
    uint64_t len;   /* its bytes so far; 0 outside any token */
    int escaped;    /* in a string: the chunk ended on a backslash */
};

struct parser {
    struct frame stack[MAX_DEPTH];
    int depth; /* frames in use; beyond MAX_DEPTH only counted */
    struct sp_kineto_event ev;
    struct sp_kineto_meta *meta;
    struct sp_kineto_result *res;
    sp_kineto_event_fn fn;
    void *ctx;
    int stopped; /* the callback asked to stop */
    yajl_handle h;
    uint64_t chunk_start; /* byte of the JSON text where the chunk being parsed begins */
    char bound[96];       /* the bound that stopped reading, "" if none */
    uint64_t bound_offset;
    struct token_scan scan;
    unsigned char chunk[CHUNK_BYTES];
};

/* ---- numbers ------------------------------------------------------------ */

// clang-format off
static const int64_t pow10_table[] = {
    1, 10, 100, 1000, 10000, 100000, 1000000, 10000000, 100000000,
    1000000000, 10000000000, 100000000000, 1000000000000, 10000000000000,
    100000000000000, 1000000000000000, 10000000000000000, 100000000000000000,
    1000000000000000000,
};
// clang-format on
#define POW10_MAX ((int)(sizeof pow10_table / sizeof pow10_table[0]) - 1)

/* Apply a power of ten to a mantissa, rounding to nearest when dividing. */
static int scale_mantissa(int64_t m, int exp10, int64_t *out)
{
    if (exp10 >= 0) {
        if (exp10 > POW10_MAX || (m && m > INT64_MAX / pow10_table[exp10]))
            return -1;
        *out = m * pow10_table[exp10];
        return 0;
    }
    if (-exp10 > POW10_MAX) {
        *out = 0;
        return 0;
    }
    int64_t d = pow10_table[-exp10];
    *out = m / d + (m % d >= d / 2 ? 1 : 0);
    return 0;
}

/* Append a decimal digit to the mantissa while it fits in int64; once one
 * does not, the mantissa is full and stays as it is. */
static int take_digit(int64_t *m, int *full, int d)
{
    if (*full || *m > (INT64_MAX - d) / 10) {
        *full = 1;
        return 0;
    }
    *m = *m * 10 + d;
    return 1;
}

int sp_kineto_parse_scaled(const char *s, size_t len, int pow10, int64_t *out)
{
    size_t i = 0;
    int neg = 0, full = 0, exp10 = pow10, seen_digit = 0;
    int64_t m = 0;
    if (i < len && (s[i] == '-' || s[i] == '+'))
        neg = s[i++] == '-';
    /* Integer digits that no longer fit still count as magnitude;
     * fraction digits that no longer fit are dropped. */
    for (; i < len && s[i] >= '0' && s[i] <= '9'; i++, seen_digit = 1)
        if (!take_digit(&m, &full, s[i] - '0'))
            exp10++;
    if (i < len && s[i] == '.') {
        for (i++; i < len && s[i] >= '0' && s[i] <= '9'; i++, seen_digit = 1)
            if (take_digit(&m, &full, s[i] - '0'))
                exp10--;
    }
    if (!seen_digit)
        return -1;
    if (i < len && (s[i] == 'e' || s[i] == 'E')) {
        int eneg = 0, e = 0;
        i++;
        if (i < len && (s[i] == '-' || s[i] == '+'))
            eneg = s[i++] == '-';
        if (i >= len || s[i] < '0' || s[i] > '9')
            return -1;
        for (; i < len && s[i] >= '0' && s[i] <= '9'; i++)
            if (e < 10000)
                e = e * 10 + (s[i] - '0');
        exp10 += eneg ? -e : e;
    }
    if (i != len || scale_mantissa(m, exp10, out))
        return -1;
    if (neg)
        *out = -*out;
    return 0;
}

/* The trailing integer of a text ("stream 7" -> 7, "25738" -> 25738). */
static int64_t trailing_int(const unsigned char *s, size_t len)
{
    size_t end = len, start;
    while (end > 0 && (s[end - 1] < '0' || s[end - 1] > '9'))
        end--;
    start = end;
    while (start > 0 && s[start - 1] >= '0' && s[start - 1] <= '9')
        start--;
    int64_t v;
    if (start == end || sp_kineto_parse_scaled((const char *)s + start, end - start, 0, &v))
        return -1;
    return v;
}

/* One more rank of "Process Group Ranks"; past the kept ones only the last
 * is remembered. */
static void add_group_rank(struct sp_kineto_event *ev, int64_t v)
{
    if (!ev->group_elided && ev->group_n < SP_KINETO_GROUP_MAX)
        ev->group[ev->group_n++] = v;
    else
        ev->group_elided = 1;
    ev->group_last = v;
}

/* "Process Group Ranks" as text, "[0, 1, 2]" or, elided by the profiler
 * past 30 ranks, "[0, 1, ..., 63]": numbers in order, "..." a gap. */
static void parse_group_text(struct sp_kineto_event *ev, const unsigned char *s, size_t len)
{
    size_t i = 0;
    ev->has_group = 1;
    while (i < len) {
        if (s[i] == '.') {
            ev->group_elided = 1;
            i++;
            continue;
        }
        if (s[i] < '0' || s[i] > '9') {
            i++;
            continue;
        }
        size_t start = i;
        while (i < len && s[i] >= '0' && s[i] <= '9')
            i++;
        int64_t v;
        if (sp_kineto_parse_scaled((const char *)s + start, i - start, 0, &v))
            return; /* a rank past int64: the rest of the list says nothing */
        add_group_rank(ev, v);
    }
}

/* Whether the kept ranks step evenly from the first, and the last one listed
 * continues the step at index n - 1. */
static int64_t even_stride(const struct sp_kineto_event *ev, int64_t n)
{
    if (ev->group_n < 2 || n < 2)
        return 0;
    int64_t first = ev->group[0], stride = ev->group[1] - ev->group[0];
    if (stride <= 0 || (ev->group_last - first) / stride != n - 1 || (ev->group_last - first) % stride)
        return 0;
    for (int i = 2; i < ev->group_n; i++) /* by division: i * stride may not fit */
        if ((ev->group[i] - first) % stride || (ev->group[i] - first) / stride != i)
            return 0;
    return stride;
}

int64_t sp_kineto_group_index(const struct sp_kineto_event *ev, int64_t rank)
{
    if (rank < 0 || !ev->has_group)
        return -1;
    for (int i = 0; i < ev->group_n; i++)
        if (ev->group[i] == rank)
            return i;
    int64_t n = ev->group_size;
    if (!ev->group_elided || n <= 0)
        return -1;
    if (rank == ev->group_last)
        return n - 1;
    int64_t stride = even_stride(ev, n);
    if (!stride || rank < ev->group[0] || (rank - ev->group[0]) % stride)
        return -1;
    int64_t index = (rank - ev->group[0]) / stride;
    return index < n ? index : -1;
}

static void copy_text(char *dst, size_t cap, const unsigned char *s, size_t len)
{
    size_t n = len < cap - 1 ? len : cap - 1;
    memcpy(dst, s, n);
    dst[n] = 0;
}

/* ---- routing -------------------------------------------------------------- */

static void clear_event(struct sp_kineto_event *ev)
{
    /* The name buffer is large: reset only its first byte. */
    ev->ph[0] = ev->cat[0] = ev->name[0] = 0;
    ev->name_len = 0;
    ev->name_truncated = 0;
    ev->pid = ev->tid = -1;
    ev->has_ts = ev->has_dur = 0;
    ev->ts_ns = ev->dur_ns = 0;
    ev->correlation = ev->stream = ev->device = -1;
    ev->bytes = 0;
    ev->grid_n = ev->block_n = 0;
    ev->collective[0] = ev->dtype[0] = ev->pg_name[0] = 0;
    ev->has_pg_name = 0;
    ev->in_nelems = 0;
    ev->group_size = -1;
    ev->pg_rank = -1;
    ev->has_seq = 0;
    ev->seq = 0;
    ev->has_group = ev->group_n = ev->group_elided = 0;
    ev->group_last = -1;
    ev->src_rank = ev->dst_rank = -1;
    ev->rank_arg = ev->external_id = -1;
}

static struct frame *top(struct parser *p)
{
    return p->depth > 0 && p->depth <= MAX_DEPTH ? &p->stack[p->depth - 1] : NULL;
}

static enum key_id lookup_key(enum frame_kind frame, const unsigned char *s, size_t len)
{
    for (size_t i = 0; i < sizeof key_names / sizeof key_names[0]; i++)
        if (key_names[i].frame == frame && strlen(key_names[i].text) == len &&
            !memcmp(key_names[i].text, s, len))
            return key_names[i].id;
    return K_OTHER;
}

/* A number (as text) or a string arrived as the value of the top frame's
 * current key, or as an array element. */
static void route_number(struct parser *p, const char *s, size_t len)
{
    struct frame *f = top(p);
    struct sp_kineto_event *ev = &p->ev;
    int64_t v = 0;
    if (!f)
        return;
    if (f->kind == F_GROUP) {
        if (ev->has_group && !sp_kineto_parse_scaled(s, len, 0, &v) && v >= 0)
            add_group_rank(ev, v);
        return;
    }
    if (f->kind == F_GRID || f->kind == F_BLOCK) {
        uint64_t *dims = f->kind == F_GRID ? ev->grid : ev->block;
        int *n = f->kind == F_GRID ? &ev->grid_n : &ev->block_n;
        if (*n < SP_KINETO_DIM_MAX && !sp_kineto_parse_scaled(s, len, 0, &v) && v >= 0)
            dims[(*n)++] = (uint64_t)v;
        return;
    }
    int is_time = f->key == K_TS || f->key == K_DUR;
    if (sp_kineto_parse_scaled(s, len, is_time ? US_TO_NS_POW10 : 0, &v))
        return; /* out of range: leave the field unknown */
    // clang-format off
    switch (f->key) {
    case K_BASE_TIME: if (f->kind == F_ROOT) { p->meta->has_base = 1; p->meta->base_ns = (uint64_t)v; } break;
    case K_PID: ev->pid = v; break;
    case K_TID: ev->tid = v; break;
    case K_TS: ev->ts_ns = v; ev->has_ts = 1; break;
    case K_DUR: ev->dur_ns = v; ev->has_dur = 1; break;
    case K_CORRELATION: ev->correlation = v; break;
    case K_STREAM: ev->stream = v; break;
    case K_DEVICE: ev->device = v; break;
    case K_BYTES: ev->bytes = v > 0 ? (uint64_t)v : 0; break;
    case K_IN_NELEMS: ev->in_nelems = v > 0 ? (uint64_t)v : 0; break;
    case K_GROUP_SIZE: ev->group_size = v; break;
    case K_SEQ: if (v >= 0) { ev->seq = (uint64_t)v; ev->has_seq = 1; } break;
    case K_SRC_RANK: ev->src_rank = v >= 0 ? v : -1; break;
    case K_DST_RANK: ev->dst_rank = v >= 0 ? v : -1; break;
    case K_RANK_ARG: ev->rank_arg = v >= 0 ? v : -1; break;
    case K_EXTERNAL_ID: ev->external_id = v >= 0 ? v : -1; break;
    case K_RANK: if (f->kind == F_DIST) p->meta->rank = v; break;
    case K_WORLD_SIZE: if (f->kind == F_DIST) p->meta->world_size = v; break;
    default: break;
    }
    // clang-format on
}

static void route_string(struct parser *p, const unsigned char *s, size_t len)
{
    struct frame *f = top(p);
    struct sp_kineto_event *ev = &p->ev;
    if (!f || f->kind == F_GRID || f->kind == F_BLOCK || f->kind == F_GROUP)
        return;
    switch (f->key) {
    case K_PH: copy_text(ev->ph, sizeof ev->ph, s, len); break;
    case K_CAT: copy_text(ev->cat, sizeof ev->cat, s, len); break;
    case K_NAME:
        if (f->kind != F_EVENT)
            break;
        copy_text(ev->name, sizeof ev->name, s, len);
        ev->name_truncated = len >= sizeof ev->name;
        ev->name_len = ev->name_truncated ? sizeof ev->name - 1 : len;
        break;
    case K_PID: ev->pid = trailing_int(s, len); break;
    case K_TID: ev->tid = trailing_int(s, len); break;
    case K_COLLECTIVE: copy_text(ev->collective, sizeof ev->collective, s, len); break;
    case K_DTYPE: copy_text(ev->dtype, sizeof ev->dtype, s, len); break;
    case K_PG_NAME:
        copy_text(ev->pg_name, sizeof ev->pg_name, s, len);
        ev->has_pg_name = 1;
        break;
    case K_PG_RANKS: parse_group_text(ev, s, len); break;
    case K_SRC_RANK:
    case K_DST_RANK: {
        int64_t v;
        if (!sp_kineto_parse_scaled((const char *)s, len, 0, &v) && v >= 0)
            *(f->key == K_SRC_RANK ? &ev->src_rank : &ev->dst_rank) = v;
        break;
    }
    case K_SEQ: {
        int64_t v;
        if (!sp_kineto_parse_scaled((const char *)s, len, 0, &v) && v >= 0) {
            ev->seq = (uint64_t)v;
            ev->has_seq = 1;
        }
        break;
    }
    // clang-format off
    case K_BACKEND: if (f->kind == F_DIST) copy_text(p->meta->backend, sizeof p->meta->backend, s, len); break;
    // clang-format on
    default: break;
    }
}

/* The kind of a map or array opened as the value of the top frame's key. */
static enum frame_kind child_kind(struct parser *p, int is_map)
{
    struct frame *f = top(p);
    if (p->depth == 0) { /* an array at the top: the events themselves */
        p->meta->bare_array = !is_map;
        return is_map ? F_ROOT : F_EVENTS;
    }
    if (!f)
        return F_SKIP;
    if (f->kind == F_ROOT && f->key == K_TRACE_EVENTS && !is_map)
        return F_EVENTS;
    if (f->kind == F_ROOT && f->key == K_DIST && is_map)
        return F_DIST;
    if (f->kind == F_EVENTS && is_map)
        return F_EVENT;
    if (f->kind == F_EVENT && f->key == K_ARGS && is_map)
        return F_ARGS;
    if (f->kind == F_ARGS && f->key == K_GRID && !is_map)
        return F_GRID;
    if (f->kind == F_ARGS && f->key == K_BLOCK && !is_map)
        return F_BLOCK;
    if (f->kind == F_ARGS && f->key == K_PG_RANKS && !is_map) {
        p->ev.has_group = 1;
        return F_GROUP;
    }
    if (f->kind == F_GROUP) { /* not a list of ranks: it says nothing */
        p->ev.has_group = p->ev.group_n = 0;
        p->ev.group_elided = 1;
    }
    return F_SKIP;
}

/* Byte of the JSON text just past the token being handled. */
static uint64_t offset_now(const struct parser *p)
{
    return p->chunk_start + yajl_get_bytes_consumed(p->h);
}

/* Returns 0 (stop) when the new level would pass the depth bound. */
static int push(struct parser *p, enum frame_kind kind)
{
    if (p->depth >= SP_KINETO_DEPTH_MAX) {
        snprintf(p->bound, sizeof p->bound, "nesting deeper than %d maps and arrays",
                 SP_KINETO_DEPTH_MAX);
        p->bound_offset = offset_now(p) - 1;
        return 0;
    }
    if (p->depth < MAX_DEPTH)
        p->stack[p->depth] = (struct frame){kind, K_OTHER};
    p->depth++;
    if (kind == F_EVENTS)
        p->meta->saw_trace_events = 1;
    if (kind == F_DIST) {
        p->meta->has_dist = 1;
        p->meta->dist_offset = offset_now(p) - 1;
    }
    if (kind == F_EVENT) {
        clear_event(&p->ev);
        p->ev.offset = offset_now(p) - 1;
    }
    return 1;
}

/* Close a frame; returns 0 to go on, 0 also when the caller stopped us
 * (yajl is then cancelled by the value callback returning 0). */
static int pop(struct parser *p)
{
    struct frame *f = top(p);
    int keep_going = 1;
    if (f && f->kind == F_EVENT) {
        p->res->events++;
        p->ev.pg_rank = sp_kineto_group_index(&p->ev, p->meta->rank);
        if (p->fn(p->ctx, &p->ev, p->meta)) {
            p->stopped = 1;
            keep_going = 0;
        }
    }
    p->depth--;
    return keep_going;
}

/* ---- yajl callbacks --------------------------------------------------------- */

// clang-format off
static int on_null(void *ctx) { (void)ctx; return 1; }
static int on_bool(void *ctx, int v) { (void)ctx; (void)v; return 1; }
// clang-format on

static int on_number(void *ctx, const char *s, size_t len)
{
    route_number(ctx, s, len);
    return 1;
}

static int on_string(void *ctx, const unsigned char *s, size_t len)
{
    route_string(ctx, s, len);
    return 1;
}

static int on_start_map(void *ctx)
{
    struct parser *p = ctx;
    return push(p, child_kind(p, 1));
}

static int on_map_key(void *ctx, const unsigned char *s, size_t len)
{
    struct parser *p = ctx;
    struct frame *f = top(p);
    if (f)
        f->key = f->kind == F_SKIP ? K_OTHER : lookup_key(f->kind, s, len);
    return 1;
}

static int on_end(void *ctx) { return pop(ctx); }

static int on_start_array(void *ctx)
{
    struct parser *p = ctx;
    return push(p, child_kind(p, 0));
}

// clang-format off
static const yajl_callbacks callbacks = {
    on_null, on_bool, NULL, NULL, on_number, on_string,
    on_start_map, on_map_key, on_end, on_start_array, on_end,
};
// clang-format on

/* ---- token lengths ------------------------------------------------------------ */

/* Outside strings: what a byte is to the token scan. */
// clang-format off
enum { B_TOKEN, B_DELIM, B_QUOTE };
static const unsigned char byte_class[256] = {
    [','] = B_DELIM, [':'] = B_DELIM, ['['] = B_DELIM, [']'] = B_DELIM, ['{'] = B_DELIM,
    ['}'] = B_DELIM, [' '] = B_DELIM, ['\n'] = B_DELIM, ['\r'] = B_DELIM, ['\t'] = B_DELIM,
    ['"'] = B_QUOTE,
};
// clang-format on

static size_t token_too_long(struct parser *p, const char *what, size_t at)
{
    snprintf(p->bound, sizeof p->bound, "%s longer than %u bytes", what, SP_KINETO_TOKEN_MAX);
    p->bound_offset = p->scan.start;
    return at;
}

/* Scan buf (the JSON text from byte `base`) for token lengths: one pass,
 * a tight loop per string and per run outside strings.  Returns len, or
 * the index at which a token passes SP_KINETO_TOKEN_MAX (then p->bound
 * says which and where it began). */
static size_t scan_tokens(struct parser *p, const unsigned char *buf, size_t len, uint64_t base)
{
    struct token_scan *t = &p->scan;
    size_t i = 0;
    if (t->in_string && t->escaped && len) { /* an escape split across chunks */
        t->escaped = 0;
        t->len++;
        i++;
    }
    while (i < len) {
        size_t j = i;
        if (t->in_string) {
            while (j < len && buf[j] != '"' && buf[j] != '\\')
                j++;
            if (t->len + (j - i) > SP_KINETO_TOKEN_MAX)
                return token_too_long(p, "a string", i + (size_t)(SP_KINETO_TOKEN_MAX - t->len));
            t->len += j - i;
            if (j == len)
                break;
            if (buf[j] == '\\') { /* the escaped byte is never the string's end */
                t->len += j + 1 < len ? 2 : 1;
                if (j + 1 == len)
                    t->escaped = 1; /* the next chunk's first byte */
                i = j + 2;
                continue;
            }
            t->in_string = 0;
            t->len = 0;
            i = j + 1;
            continue;
        }
        while (j < len && byte_class[buf[j]] == B_DELIM)
            j++;
        if (j > i)
            t->len = 0;
        i = j;
        while (j < len && byte_class[buf[j]] == B_TOKEN)
            j++;
        if (j > i) {
            if (t->len == 0)
                t->start = base + i;
            if (t->len + (j - i) > SP_KINETO_TOKEN_MAX)
                return token_too_long(p, "a number or literal", i + (size_t)(SP_KINETO_TOKEN_MAX - t->len));
            t->len += j - i;
        }
        if (j < len && byte_class[buf[j]] == B_QUOTE) {
            t->in_string = 1;
            t->start = base + j;
            t->len = 0;
            j++;
        }
        i = j;
    }
    return len;
}

/* ---- driving the parser ------------------------------------------------------ */

/* Line and column (1-based) of byte `upto` of `buf`, continuing a count
 * that covered the chunks before it. */
static void locate(const unsigned char *buf, size_t upto, uint64_t line, uint64_t col,
                   struct sp_kineto_result *res)
{
    for (size_t i = 0; i < upto; i++) {
        if (buf[i] == '\n') {
            line++;
            col = 1;
        } else {
            col++;
        }
    }
    res->err_line = line;
    res->err_col = col;
}

/* Advance the running line count over a whole chunk: cheap (memchr) and
 * needed only so an error can name its line. */
static void count_lines(const unsigned char *buf, size_t len, uint64_t *line, uint64_t *col)
{
    const unsigned char *p = buf, *end = buf + len, *nl;
    while ((nl = memchr(p, '\n', (size_t)(end - p)))) {
        (*line)++;
        p = nl + 1;
        *col = 1;
    }
    *col += (uint64_t)(end - p);
}

static void parse_error(yajl_handle h, const unsigned char *chunk, size_t len, uint64_t chunk_start,
                        uint64_t line, uint64_t col, const char *path, struct parser *p)
{
    struct sp_kineto_result *res = p->res;
    size_t used = yajl_get_bytes_consumed(h);
    if (used > len)
        used = len;
    res->err_offset = chunk_start + used;
    locate(chunk, used, line, col, res);
    if (p->bound[0]) {
        /* A token holds no newline: its start is on the same line. */
        if (p->bound_offset >= chunk_start)
            locate(chunk, (size_t)(p->bound_offset - chunk_start), line, col, res);
        else
            res->err_col -= res->err_offset - p->bound_offset;
        res->err_offset = p->bound_offset;
        res->bound = 1;
        snprintf(res->err, sizeof res->err,
                 "%s: input bound: %s at byte %llu (line %llu, column %llu); see docs/import.md",
                 path, p->bound, (unsigned long long)res->err_offset,
                 (unsigned long long)res->err_line, (unsigned long long)res->err_col);
        return;
    }
    if (p->stopped) {
        if (!res->err[0])
            snprintf(res->err, sizeof res->err, "%s: stopped by the importer at byte %llu", path,
                     (unsigned long long)res->err_offset);
        return;
    }
    unsigned char *msg = yajl_get_error(h, 0, chunk, len);
    /* yajl ends its message with a newline; keep one line. */
    size_t mlen = msg ? strcspn((char *)msg, "\n") : 0;
    snprintf(res->err, sizeof res->err, "%s: malformed JSON at byte %llu (line %llu, column %llu): %.*s",
             path, (unsigned long long)res->err_offset, (unsigned long long)res->err_line,
             (unsigned long long)res->err_col, (int)mlen, msg ? (char *)msg : "");
    if (msg)
        yajl_free_error(h, msg);
}

static int detect_gzip(const char *path, struct sp_kineto_result *res)
{
    unsigned char magic[2] = {0, 0};
    FILE *f = fopen(path, "rb");
    if (!f) {
        snprintf(res->err, sizeof res->err, "%s: cannot open: %m", path);
        return -1;
    }
    res->gzip = fread(magic, 1, 2, f) == 2 && magic[0] == GZIP_MAGIC0 && magic[1] == GZIP_MAGIC1;
    fclose(f);
    return 0;
}

/* Feed the file to yajl chunk by chunk.  Returns 0 or -1 (res->err set). */
static int feed(gzFile in, yajl_handle h, const char *path, struct parser *p)
{
    unsigned char *chunk = p->chunk;
    struct sp_kineto_result *res = p->res;
    uint64_t line = 1, col = 1;
    for (;;) {
        int n = gzread(in, chunk, CHUNK_BYTES);
        if (n < 0 || (n == 0 && !gzeof(in))) {
            int zerr;
            const char *zmsg = gzerror(in, &zerr);
            snprintf(res->err, sizeof res->err, "%s: cannot read after byte %llu: %s", path,
                     (unsigned long long)res->bytes, zmsg);
            res->err_offset = res->bytes;
            res->err_line = line;
            res->err_col = col;
            return -1;
        }
        if (n == 0) {
            int zerr = Z_OK;
            const char *zmsg = gzerror(in, &zerr);
            if (zerr != Z_OK) { /* e.g. a gzip stream cut short */
                snprintf(res->err, sizeof res->err,
                         "%s: compressed input ends early, after %llu bytes of JSON (line %llu, column %llu): %s",
                         path, (unsigned long long)res->bytes, (unsigned long long)line,
                         (unsigned long long)col, zmsg);
                res->err_offset = res->bytes;
                res->err_line = line;
                res->err_col = col;
                return -1;
            }
            break;
        }
        size_t ok = scan_tokens(p, chunk, (size_t)n, res->bytes);
        p->chunk_start = res->bytes;
        if (yajl_parse(h, chunk, ok) != yajl_status_ok || ok < (size_t)n) {
            parse_error(h, chunk, ok, res->bytes, line, col, path, p);
            return -1;
        }
        count_lines(chunk, (size_t)n, &line, &col);
        res->bytes += (uint64_t)n;
    }
    if (yajl_complete_parse(h) != yajl_status_ok) {
        /* At the end of input the error is past the last byte. */
        parse_error(h, chunk, 0, res->bytes, line, col, path, p);
        return -1;
    }
    return 0;
}

int sp_kineto_read(const char *path, sp_kineto_event_fn fn, void *ctx,
                   struct sp_kineto_meta *meta, struct sp_kineto_result *res)
{
    memset(res, 0, sizeof *res);
    memset(meta, 0, sizeof *meta);
    meta->rank = meta->world_size = -1;
    if (detect_gzip(path, res))
        return -1;
    gzFile in = gzopen(path, "rb"); /* reads plain files unchanged */
    if (!in) {
        snprintf(res->err, sizeof res->err, "%s: cannot open: %m", path);
        return -1;
    }
    gzbuffer(in, CHUNK_BYTES);
    /* The event record and chunk are large: on the heap, one per call, so
     * readers in several threads do not share anything. */
    struct parser *p = calloc(1, sizeof *p);
    yajl_handle h = p ? yajl_alloc(&callbacks, NULL, p) : NULL;
    if (!h) {
        free(p);
        gzclose(in);
        snprintf(res->err, sizeof res->err, "%s: out of memory", path);
        return -1;
    }
    p->h = h;
    p->meta = meta;
    p->res = res;
    p->fn = fn;
    p->ctx = ctx;
    yajl_config(h, yajl_dont_validate_strings, 1); /* names are copied, not checked */
    int rc = feed(in, h, path, p);
    yajl_free(h);
    free(p);
    gzclose(in);
    if (rc == 0 && !meta->saw_trace_events) {
        snprintf(res->err, sizeof res->err,
                 "%s: not a Kineto trace: no \"traceEvents\" array at the top level, nor an "
                 "array of events (expected a PyTorch profiler JSON, as written by "
                 "export_chrome_trace or tensorboard_trace_handler)",
                 path);
        return -1;
    }
    return rc;
}
