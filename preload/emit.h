/*
 * emit.h - the recorder's per-event fast path, inlined into the code of
 * the interposers that build an event on every call (io.c's reads, writes
 * and waits, cuda.c, nccl.c; the reads and writes use its pieces,
 * sp_emit_try_fast and sp_emit_leave_own, around append.h's put).
 *
 * sp_emit_raw() (preload.h) is the same path behind a call: any event,
 * any caller.  The inline form lets the event stay a local: nothing out
 * of line ever receives its address, so the encoder (format/append.h,
 * codec.h) reads each field from where the interposer computed it, and
 * the fields that are constant in a shape (an op, a zero) are stored as
 * constant bytes.  The bytes in the trace are the same either way.
 *
 * What a recorded event costs the calling thread here, when its slot has
 * room:
 *
 *   - one thread-local load (the thread's own in-flight counter), one
 *     plain increment of it, a compiler barrier;
 *   - one load: sp_emit_gate, a word that is 0 only while the core is
 *     READY, sp_recording is set and nothing needs the slow path
 *     (sp_emit_detour: a CPU sampler to start after fork, a step window to
 *     look up live; a thread on another's storage); core.c, which writes
 *     those (rarely), keeps the word's bits in step with them;
 *   - the writer's reserve (one compare), the encoder, one release store
 *     (append.h);
 *   - the counter's decrement, a release store.
 *
 * No lock, no lock-prefixed instruction, no call, and nothing that can
 * change errno: every out-of-line step the path may take (the slow enter,
 * the writer's reserve of a new slot) saves and restores errno itself, so
 * an interposer whose real call succeeded need not touch errno at all.
 * Anything else (the trace is not open yet, the thread has no counter of
 * its own, membarrier is missing, the step window, the CPU sampler) is
 * sp_emit_enter_slow's, which does what sp_emit_raw always did before
 * appending and hands back a ticket for the same append.
 *
 * The in-flight counter is core.c's protocol with the closer (its top
 * comment): the counter is raised before the state is read, and the
 * closer publishes CLOSING (and the gate's STATE bit) before its
 * membarrier and waits for the counters to drain, so either the emitter
 * sees the bit or the closer sees the emitter.  A thread gets the fast
 * path's counter only when it owns one (the first SP_OWNED_SLOTS threads) and membarrier is
 * registered (the closer's barrier replaces the emitter's fence); the
 * others take the slow path every time, with a fence or an atomic add.
 */
#ifndef SP_EMIT_H
#define SP_EMIT_H

#include <stdatomic.h>
#include <stdint.h>

#include "append.h"
#include "preload.h"

/* The library's own (preload.h). */
#pragma GCC visibility push(hidden)

/* core.c's lifecycle states (its top comment). */
enum { SP_CORE_UNINIT,
       SP_CORE_OPENING,
       SP_CORE_READY,
       SP_CORE_CLOSING,
       SP_CORE_CLOSED,
       SP_CORE_OFF };

extern _Atomic int sp_core_state;
extern struct sp_writer *sp_core_writer;
/* sp_core_writer's generation (append.h's struct sp_writer_head), the
 * value a thread's ready word is compared with: one load where the
 * writer's address and its first word were two.  SP_CORE_NO_GEN while
 * there is no writer: no ready word is ever that (0, or a generation,
 * which counts writers from 1). */
extern uint64_t sp_core_gen;
#define SP_CORE_NO_GEN UINT64_MAX

/* The fast path's one test: 0 while the core is READY, recording is on
 * and nothing sends events to the slow path; else the bits say which is
 * not so.  Written only by core.c, with atomic or/and of one bit, after
 * the variable it mirrors: the STATE bit is cleared just before the state
 * becomes READY (so an emitter that sees the word 0 also sees the writer)
 * and set again when READY leaves: by the closer, right after its CAS and
 * before its membarrier, and in a forked child.
 * OFF and DETOUR follow sp_recording and sp_emit_detour (a racing pair of
 * writers may leave either's value, as it may in the variables); LENT is
 * set before the first child on a thread's storage is made, and stays. */
#define SP_GATE_STATE 1u  /* sp_core_state is not READY */
#define SP_GATE_OFF 2u    /* sp_recording is 0 */
#define SP_GATE_DETOUR 4u /* sp_emit_detour is set */
#define SP_GATE_LENT 8u   /* sp_tls_lent: set for good, never cleared */
extern _Atomic unsigned sp_emit_gate;

/* Non-zero while events must go through sp_emit_enter_slow: the CPU
 * sampler waits to be started (a forked child), or this process follows
 * another's step window (SCALEPROF_STEPS in a data-loader worker). */
extern volatile int sp_emit_detour;

/* The calling thread's own in-flight counter, when the fast path may use
 * it; NULL until its first event (and for good when it may not). */
#define sp_inflight_mine (sp_writer_tls.host_ptr) /* beside the slot state (append.h) */

/* A ticket for one append: the counter raised, with bit 0 set when it is
 * a shared one (lowered with an atomic subtraction); 0: record nothing. */
typedef uintptr_t sp_emit_ticket;
#define SP_TICKET_SHARED ((uintptr_t)1)

/* Out of line (core.c): everything sp_emit_raw checks before appending
 * (opening the trace on the first event, starting the CPU sampler, the
 * step window, the thread's counter), then the counter raised.  Preserves
 * errno. */
sp_emit_ticket sp_emit_enter_slow(void);

/* Out of line (core.c): sp_writer_reserve_slow for the core's writer,
 * preserving errno. */
int sp_emit_reserve_slow(uint64_t t);

/* The thread's own counter, raised and lowered by `d` (+1, -1): ours
 * alone, so a plain read-modify-write; a signal handler nesting here
 * completes before we resume, so it cannot lose its update.  The closer
 * reads the word whole.  On x86-64 that is one instruction (an add to
 * memory, without lock: no other thread writes the word) where two
 * atomic accesses would be three; as a release store of the new value,
 * ordered after everything before it, since the asm is a compiler barrier
 * and x86 keeps stores in order.  The sanitizer builds (SP_EMIT_OUTLINE)
 * keep the atomics, which they can see. */
static inline __attribute__((always_inline)) void sp_inflight_add_own(_Atomic long *c, long d)
{
#if defined(__x86_64__) && !defined(SP_EMIT_OUTLINE)
    __asm__ volatile("addq %1, %0"
                     : "+m"(*(volatile long *)c)
                     : "er"(d)
                     : "memory");
#else
    atomic_store_explicit(c, atomic_load_explicit(c, memory_order_relaxed) + d, memory_order_release);
#endif
}

/* Raise the thread's in-flight counter and check that the event may be
 * appended; 0 when it may not (nothing to undo then). */
static inline __attribute__((always_inline)) sp_emit_ticket sp_emit_enter(void)
{
    _Atomic long *c = sp_inflight_mine;
    if (SP_LIKELY(c != NULL)) {
        sp_inflight_add_own(c, 1);
        atomic_signal_fence(memory_order_seq_cst); /* the closer's membarrier does the rest */
        if (SP_LIKELY(atomic_load_explicit(&sp_emit_gate, memory_order_acquire) == 0))
            return (sp_emit_ticket)c;
        sp_inflight_add_own(c, -1);
    }
    return sp_emit_enter_slow();
}

/* The fast path alone, for an interposer that hands every other case to
 * an out-of-line path of its own (io.c's reads): the thread's own counter,
 * raised, when the event may be appended now with no call at all (the
 * gate is open and the thread's slot has room: sp_writer_put may follow
 * at once, then sp_emit_leave_own); NULL, with nothing raised, when not.
 * The caller holds the re-entry guard, so that no signal handler's event
 * fills the slot between the check and the put. */
static inline __attribute__((always_inline)) _Atomic long *sp_emit_try_fast(void)
{
    _Atomic long *c = sp_inflight_mine;
    if (SP_UNLIKELY(c == NULL))
        return NULL;
    sp_inflight_add_own(c, 1);
    atomic_signal_fence(memory_order_seq_cst); /* as in sp_emit_enter */
    if (SP_LIKELY(atomic_load_explicit(&sp_emit_gate, memory_order_acquire) == 0) &&
        SP_LIKELY(sp_writer_tls.ready == sp_core_gen))
        return c;
    sp_inflight_add_own(c, -1);
    return NULL;
}

/* sp_emit_leave for sp_emit_try_fast's counter: the thread's own. */
static inline __attribute__((always_inline)) void sp_emit_leave_own(_Atomic long *c)
{
    sp_inflight_add_own(c, -1);
}

static inline __attribute__((always_inline)) void sp_emit_leave(sp_emit_ticket ticket)
{
    _Atomic long *c = (_Atomic long *)(ticket & ~SP_TICKET_SHARED);
    if (SP_UNLIKELY(ticket & SP_TICKET_SHARED))
        atomic_fetch_sub_explicit(c, 1, memory_order_release);
    else
        sp_inflight_add_own(c, -1);
}

/* sp_emit_raw, inline: append `ev` (a local of the caller's, whose
 * address goes nowhere else) to this process's trace.  Does nothing when
 * not recording; never blocks; preserves errno (see the top comment).
 *
 * Builds with the sanitizers (meson defines SP_EMIT_OUTLINE there) call
 * sp_emit_raw instead: instrumented, an inlined copy of the encoder takes
 * the compiler seconds, and the interposers hold fifty; those builds test
 * the reader, the analyzer and the importer. */
#ifdef SP_EMIT_OUTLINE
static inline void sp_emit_inline(const struct sp_event *ev)
{
    sp_emit_raw(ev);
}
#else
static inline __attribute__((always_inline)) void sp_emit_inline(const struct sp_event *ev)
{
    sp_emit_ticket ticket = sp_emit_enter();
    if (!ticket)
        return;
    /* append.h's sp_writer_reserve, with a slow path that keeps errno */
    if (SP_LIKELY(sp_writer_tls.ready == sp_core_gen) ||
        sp_emit_reserve_slow(ev->t))
        sp_writer_put(ev);
    sp_emit_leave(ticket);
}
#endif

#pragma GCC visibility pop

#endif
