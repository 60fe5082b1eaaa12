/*
 * nvtx.c - NVTX markers: the ranges a training loop draws around its steps
 * and phases, and the step boundaries SCALEPROF_STEPS counts.
 *
 * Two ways in, one recording path:
 *   - exported nvtxRangePushA & co. interpose a linked libnvToolsExt (NVTX
 *     v2 style); the real one is still called when there is one;
 *   - NVTX v3 is header-only (PyTorch uses it): each call goes through a
 *     function table inside the program, which NVTX fills at the first call
 *     by loading NVTX_INJECTION64_PATH and calling its
 *     InitializeInjectionNvtx2().  `scaleprof run` points that variable at
 *     libscaleprof.so; our InitializeInjectionNvtx2 writes our handlers into
 *     the CORE and CORE2 (domain) tables.
 *
 * Events: a push is a MARKER PUSH with the depth after it, a pop a MARKER
 * POP with the name of the range it closes (a per-thread stack of names,
 * MAX_DEPTH deep) and the depth before it, a mark an INSTANT, and a
 * start/end range one MARKER RANGE with its duration, written at the end
 * (start/end ranges may end on another thread; they are kept in a ring of
 * RANGE_RING open ranges).  Domains get small numbers in creation order
 * (0 is the default domain); creating one writes an INSTANT named
 * "domain:<name>" carrying its number, so the reader can name it.
 *
 * Steps: a push whose name starts, ignoring case, with "step",
 * "iteration" or "ProfilerStep" (PyTorch's "ProfilerStep#12") is a step
 * boundary: sp_core_step_boundary() is called with its name (a number
 * ending it is the step's) before the push is recorded, so the push
 * belongs to the step it opens.  Without such markers,
 * SCALEPROF_STEPS has nothing to count and records everything.
 */
#define NVTX_NO_IMPL
#include <nvtx3/nvToolsExt.h>

#include <dlfcn.h>
#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <wchar.h>

#include "preload.h"
#include "intern.h"

#define MAX_DEPTH 64    /* names remembered per thread for pops */
#define RANGE_RING 1024 /* open start/end ranges, power of two */
#define MAX_DOMAINS 256
#define WIDE_MAX 512 /* bytes kept of a wide-character name */
#define DOMAIN_NAME_MAX 256

static __thread int depth __attribute__((tls_model("initial-exec")));
static __thread uint32_t open_names[MAX_DEPTH] __attribute__((tls_model("initial-exec")));

/* ---- step boundaries ---------------------------------------------------------- */

static int names_a_step(const char *name)
{
    static const char *const prefixes[] = {"step", "iteration", "profilerstep"};
    for (size_t i = 0; i < sizeof prefixes / sizeof *prefixes; i++)
        if (!strncasecmp(name, prefixes[i], strlen(prefixes[i])))
            return 1;
    return 0;
}

/* ---- the recording path ---------------------------------------------------------- */

static void emit_marker(uint64_t t, uint64_t dur, enum sp_marker_kind kind, uint32_t name,
                        int at_depth, uint64_t domain)
{
    struct sp_event ev = {
        .type = SP_EV_MARKER,
        .t = t,
        .marker = {.dur = dur, .kind = kind, .name = name, .depth = (uint64_t)(at_depth > 0 ? at_depth : 0), .domain = domain},
    };
    sp_emit(&ev);
}

static void record_push(const char *name, uint64_t domain)
{
    int saved = errno;
    if (!name)
        name = "";
    if (domain == 0 && names_a_step(name))
        sp_core_step_boundary(name);
    uint32_t id = sp_recording ? sp_intern_name(name) : 0;
    if (depth >= 0 && depth < MAX_DEPTH)
        open_names[depth] = id;
    depth++;
    if (sp_recording)
        emit_marker(sp_now(), 0, SP_MARK_PUSH, id, depth, domain);
    errno = saved;
}

static void record_pop(uint64_t domain)
{
    int saved = errno;
    int before = depth;
    uint32_t id = before > 0 && before <= MAX_DEPTH ? open_names[before - 1] : 0;
    if (depth > 0)
        depth--;
    if (sp_recording)
        emit_marker(sp_now(), 0, SP_MARK_POP, id, before, domain);
    errno = saved;
}

static void record_mark(const char *name, uint64_t domain)
{
    int saved = errno;
    if (sp_recording)
        emit_marker(sp_now(), 0, SP_MARK_INSTANT, sp_intern_name(name ? name : ""), depth, domain);
    errno = saved;
}

/* ---- start/end ranges ---------------------------------------------------------------- */

struct open_range {
    atomic_uint_fast64_t id; /* 0 free */
    uint64_t t0;
    uint64_t domain;
    uint32_t name;
};
static struct open_range ranges[RANGE_RING];
static atomic_uint_fast64_t next_range_id;

static void range_started(uint64_t id, const char *name, uint64_t domain)
{
    struct open_range *r = &ranges[id & (RANGE_RING - 1)];
    r->t0 = sp_now();
    r->domain = domain;
    r->name = sp_recording ? sp_intern_name(name ? name : "") : 0;
    atomic_store_explicit(&r->id, id, memory_order_release);
}

static uint64_t range_start(const char *name, uint64_t domain)
{
    int saved = errno;
    uint64_t id = atomic_fetch_add(&next_range_id, 1) + 1;
    range_started(id, name, domain);
    errno = saved;
    return id;
}

static void range_end(uint64_t id)
{
    int saved = errno;
    struct open_range *r = &ranges[id & (RANGE_RING - 1)];
    uint64_t expect = id;
    /* a range older than RANGE_RING others was overwritten: nothing to say */
    if (id && atomic_compare_exchange_strong(&r->id, &expect, 0) && sp_recording) {
        uint64_t now = sp_now();
        emit_marker(r->t0, now - r->t0, SP_MARK_RANGE, r->name, depth, r->domain);
    }
    errno = saved;
}

/* ---- messages of every kind ---------------------------------------------------------- */

/* Narrow a wide name: ASCII kept, the rest shown as '?'. */
static const char *narrow(const wchar_t *w, char *buf, size_t cap)
{
    size_t i = 0;
    for (; w && w[i] && i + 1 < cap; i++)
        buf[i] = (w[i] > 0 && w[i] < 0x80) ? (char)w[i] : '?';
    buf[i] = 0;
    return buf;
}

static const char *attr_name(const nvtxEventAttributes_t *a, char *buf, size_t cap)
{
    if (!a)
        return "";
    switch (a->messageType) {
    case NVTX_MESSAGE_TYPE_ASCII:
        return a->message.ascii ? a->message.ascii : "";
    case NVTX_MESSAGE_TYPE_UNICODE:
        return narrow(a->message.unicode, buf, cap);
    case NVTX_MESSAGE_TYPE_REGISTERED:
        /* our registered handles are the text itself (nvtxDomainRegisterStringA) */
        return a->message.registered ? (const char *)a->message.registered : "";
    default:
        return "";
    }
}

/* ---- domains ----------------------------------------------------------------------------- */

static atomic_uint domains_made;

static uint64_t domain_number(nvtxDomainHandle_t d)
{
    return (uint64_t)(uintptr_t)d;
}

static nvtxDomainHandle_t domain_create(const char *name)
{
    int saved = errno;
    unsigned n = atomic_fetch_add(&domains_made, 1) + 1;
    if (n > MAX_DOMAINS)
        n = MAX_DOMAINS; /* later domains share the last number */
    char label[DOMAIN_NAME_MAX];
    size_t len = strlen(name ? name : "");
    if (len > DOMAIN_NAME_MAX - 8)
        len = DOMAIN_NAME_MAX - 8;
    memcpy(label, "domain:", 7);
    memcpy(label + 7, name ? name : "", len);
    label[7 + len] = 0;
    record_mark(label, n);
    errno = saved;
    return (nvtxDomainHandle_t)(uintptr_t)n;
}

/* Registered strings live for the process: registration is rare and the
 * handle is the text, so a message never needs a lookup. */
static nvtxStringHandle_t register_string(const char *s)
{
    return (nvtxStringHandle_t)strdup(s ? s : "");
}

/* ---- handlers (the injection writes these into NVTX's tables) ------------------------ */

static int NVTX_API on_push_a(const char *message)
{
    record_push(message, 0);
    return depth - 1;
}

static int NVTX_API on_push_w(const wchar_t *message)
{
    char buf[WIDE_MAX];
    record_push(narrow(message, buf, sizeof buf), 0);
    return depth - 1;
}

static int NVTX_API on_push_ex(const nvtxEventAttributes_t *attr)
{
    char buf[WIDE_MAX];
    record_push(attr_name(attr, buf, sizeof buf), 0);
    return depth - 1;
}

static int NVTX_API on_pop(void)
{
    int before = depth;
    record_pop(0);
    return before > 0 ? before - 1 : -1;
}

static void NVTX_API on_mark_a(const char *message)
{
    record_mark(message, 0);
}

static void NVTX_API on_mark_ex(const nvtxEventAttributes_t *attr)
{
    char buf[WIDE_MAX];
    record_mark(attr_name(attr, buf, sizeof buf), 0);
}

static nvtxRangeId_t NVTX_API on_start_a(const char *message)
{
    return range_start(message, 0);
}

static nvtxRangeId_t NVTX_API on_start_ex(const nvtxEventAttributes_t *attr)
{
    char buf[WIDE_MAX];
    return range_start(attr_name(attr, buf, sizeof buf), 0);
}

static void NVTX_API on_end(nvtxRangeId_t id)
{
    range_end(id);
}

static int NVTX_API on_domain_push_ex(nvtxDomainHandle_t d, const nvtxEventAttributes_t *attr)
{
    char buf[WIDE_MAX];
    record_push(attr_name(attr, buf, sizeof buf), domain_number(d));
    return depth - 1;
}

static int NVTX_API on_domain_pop(nvtxDomainHandle_t d)
{
    int before = depth;
    record_pop(domain_number(d));
    return before > 0 ? before - 1 : -1;
}

static void NVTX_API on_domain_mark_ex(nvtxDomainHandle_t d, const nvtxEventAttributes_t *attr)
{
    char buf[WIDE_MAX];
    record_mark(attr_name(attr, buf, sizeof buf), domain_number(d));
}

static nvtxRangeId_t NVTX_API on_domain_start_ex(nvtxDomainHandle_t d,
                                                 const nvtxEventAttributes_t *attr)
{
    char buf[WIDE_MAX];
    return range_start(attr_name(attr, buf, sizeof buf), domain_number(d));
}

static void NVTX_API on_domain_end(nvtxDomainHandle_t d, nvtxRangeId_t id)
{
    (void)d;
    range_end(id);
}

static nvtxDomainHandle_t NVTX_API on_domain_create_a(const char *name)
{
    return domain_create(name);
}

static nvtxDomainHandle_t NVTX_API on_domain_create_w(const wchar_t *name)
{
    char buf[WIDE_MAX];
    return domain_create(narrow(name, buf, sizeof buf));
}

static void NVTX_API on_domain_destroy(nvtxDomainHandle_t d)
{
    (void)d;
}

static nvtxStringHandle_t NVTX_API on_register_a(nvtxDomainHandle_t d, const char *s)
{
    (void)d;
    return register_string(s);
}

static nvtxStringHandle_t NVTX_API on_register_w(nvtxDomainHandle_t d, const wchar_t *s)
{
    (void)d;
    char buf[WIDE_MAX];
    return register_string(narrow(s, buf, sizeof buf));
}

/* ---- the NVTX v3 injection entry point ---------------------------------------------- */

struct slot {
    unsigned id;
    NvtxFunctionPointer fn;
};

static void fill_table(const NvtxExportTableCallbacks *cb, NvtxCallbackModule module,
                       const struct slot *slots, size_t n)
{
    NvtxFunctionTable table = NULL;
    unsigned size = 0;
    if (!cb->GetModuleFunctionTable(module, &table, &size) || !table)
        return;
    for (size_t i = 0; i < n; i++)
        if (slots[i].id < size && table[slots[i].id])
            *table[slots[i].id] = slots[i].fn;
}

#define FN(f) ((NvtxFunctionPointer)(void (*)(void))(f))

SP_EXPORT int InitializeInjectionNvtx2(NvtxGetExportTableFunc_t get_export_table)
{
    const NvtxExportTableCallbacks *cb =
        get_export_table ? (const NvtxExportTableCallbacks *)get_export_table(NVTX_ETID_CALLBACKS)
                         : NULL;
    if (!cb || cb->struct_size < sizeof *cb)
        return 0;
    static const struct slot core[] = {
        {NVTX_CBID_CORE_MarkEx, FN(on_mark_ex)},
        {NVTX_CBID_CORE_MarkA, FN(on_mark_a)},
        {NVTX_CBID_CORE_RangeStartEx, FN(on_start_ex)},
        {NVTX_CBID_CORE_RangeStartA, FN(on_start_a)},
        {NVTX_CBID_CORE_RangeEnd, FN(on_end)},
        {NVTX_CBID_CORE_RangePushEx, FN(on_push_ex)},
        {NVTX_CBID_CORE_RangePushA, FN(on_push_a)},
        {NVTX_CBID_CORE_RangePushW, FN(on_push_w)},
        {NVTX_CBID_CORE_RangePop, FN(on_pop)},
    };
    static const struct slot core2[] = {
        {NVTX_CBID_CORE2_DomainMarkEx, FN(on_domain_mark_ex)},
        {NVTX_CBID_CORE2_DomainRangeStartEx, FN(on_domain_start_ex)},
        {NVTX_CBID_CORE2_DomainRangeEnd, FN(on_domain_end)},
        {NVTX_CBID_CORE2_DomainRangePushEx, FN(on_domain_push_ex)},
        {NVTX_CBID_CORE2_DomainRangePop, FN(on_domain_pop)},
        {NVTX_CBID_CORE2_DomainRegisterStringA, FN(on_register_a)},
        {NVTX_CBID_CORE2_DomainRegisterStringW, FN(on_register_w)},
        {NVTX_CBID_CORE2_DomainCreateA, FN(on_domain_create_a)},
        {NVTX_CBID_CORE2_DomainCreateW, FN(on_domain_create_w)},
        {NVTX_CBID_CORE2_DomainDestroy, FN(on_domain_destroy)},
    };
    fill_table(cb, NVTX_CB_MODULE_CORE, core, sizeof core / sizeof *core);
    fill_table(cb, NVTX_CB_MODULE_CORE2, core2, sizeof core2 / sizeof *core2);
    return 1;
}

/* ---- exported entry points (a linked libnvToolsExt) -------------------------------- */

/* Call the next definition too, when the job links one: another tool may
 * be listening behind it.  Resolved once (a missing one too), errno kept. */
static void *next_of(const char *name, void *volatile *cache, volatile int *done)
{
    if (SP_LIKELY(*done))
        return *cache;
    int saved = errno;
    *cache = sp_real(name);
    *done = 1;
    errno = saved;
    return *cache;
}

#define NEXT(type, name)              \
    static void *volatile next_cache; \
    static volatile int next_done;    \
    __typeof__(type) next = (__typeof__(type))next_of(name, &next_cache, &next_done)

SP_EXPORT int nvtxRangePushA(const char *message)
{
    NEXT(int (*)(const char *), "nvtxRangePushA");
    int r = on_push_a(message);
    return next ? next(message) : r;
}

SP_EXPORT int nvtxRangePushW(const wchar_t *message)
{
    NEXT(int (*)(const wchar_t *), "nvtxRangePushW");
    int r = on_push_w(message);
    return next ? next(message) : r;
}

SP_EXPORT int nvtxRangePushEx(const nvtxEventAttributes_t *attr)
{
    NEXT(int (*)(const nvtxEventAttributes_t *), "nvtxRangePushEx");
    int r = on_push_ex(attr);
    return next ? next(attr) : r;
}

SP_EXPORT int nvtxRangePop(void)
{
    NEXT(int (*)(void), "nvtxRangePop");
    int r = on_pop();
    return next ? next() : r;
}

SP_EXPORT void nvtxMarkA(const char *message)
{
    NEXT(void (*)(const char *), "nvtxMarkA");
    on_mark_a(message);
    if (next)
        next(message);
}

SP_EXPORT nvtxRangeId_t nvtxRangeStartA(const char *message)
{
    NEXT(nvtxRangeId_t(*)(const char *), "nvtxRangeStartA");
    if (!next)
        return on_start_a(message);
    nvtxRangeId_t id = next(message);
    if (id)
        range_started(id, message, 0); /* keyed by the id the job will hand back */
    return id;
}

SP_EXPORT void nvtxRangeEnd(nvtxRangeId_t id)
{
    NEXT(void (*)(nvtxRangeId_t), "nvtxRangeEnd");
    on_end(id);
    if (next)
        next(id);
}

SP_EXPORT int nvtxDomainRangePushEx(nvtxDomainHandle_t domain, const nvtxEventAttributes_t *attr)
{
    return on_domain_push_ex(domain, attr);
}

SP_EXPORT int nvtxDomainRangePop(nvtxDomainHandle_t domain)
{
    return on_domain_pop(domain);
}

SP_EXPORT nvtxDomainHandle_t nvtxDomainCreateA(const char *name)
{
    return on_domain_create_a(name);
}

SP_EXPORT nvtxStringHandle_t nvtxDomainRegisterStringA(nvtxDomainHandle_t domain, const char *s)
{
    return on_register_a(domain, s);
}

/* ---- attaching without the launcher ------------------------------------------- */

/* A job started with plain LD_PRELOAD=libscaleprof.so (the way README and
 * torchrun users do it) must see the same markers and GPU activity as one
 * started by `scaleprof run`: header-only NVTX finds us only through
 * NVTX_INJECTION64_PATH, and CUPTI attaches earliest through
 * CUDA_INJECTION64_PATH.  Both are read lazily (at the first NVTX call, at
 * CUDA initialisation), so setting them while the library loads - before
 * main, while the process has a single thread - is early enough.  A value
 * the job or the user set is never replaced. */
__attribute__((constructor)) static void point_injection_at_us(void)
{
    if (!sp_config()->enabled)
        return;
    Dl_info self;
    if (!dladdr((void *)point_injection_at_us, &self) || !self.dli_fname ||
        self.dli_fname[0] != '/')
        return;
    setenv("NVTX_INJECTION64_PATH", self.dli_fname, 0);
    setenv("CUDA_INJECTION64_PATH", self.dli_fname, 0);
}
