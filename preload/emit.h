/*
 * emit.h - the recorder's per-event fast path, inlined into the code of
 * the interposers that build an event on every call (io.c's reads and
 * waits, cuda.c, nccl.c).
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
 *   - three loads: the core's state, sp_recording, sp_emit_detour (the
 *     flag that sends every event through the slow path while something
 *     needs doing there: a CPU sampler to start after fork, a step window
 *     to look up live);
 *   - the writer's reserve (one compare), the encoder, one release store
 *     (append.h);
 *   - the counter's decrement, a release store.
 *
 * No lock, no lock-prefixed instruction, no call.  Anything else (the
 * trace is not open yet, the thread has no counter of its own, membarrier
 * is missing, the step window, the CPU sampler) is sp_emit_enter_slow's,
 * which does what sp_emit_raw always did before appending and hands back
 * a ticket for the same append.
 *
 * The in-flight counter is core.c's protocol with the closer (its top
 * comment): the counter is raised before the state is read, and the
 * closer publishes CLOSING before its membarrier and waits for the
 * counters to drain, so either the emitter sees CLOSING or the closer
 * sees the emitter.  A thread gets the fast path's counter only when it
 * owns one (the first SP_OWNED_SLOTS threads) and membarrier is
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

/* Non-zero while events must go through sp_emit_enter_slow: the CPU
 * sampler waits to be started (a forked child), or this process follows
 * another's step window (SCALEPROF_STEPS in a data-loader worker). */
extern volatile int sp_emit_detour;

/* The calling thread's own in-flight counter, when the fast path may use
 * it; NULL until its first event (and for good when it may not). */
extern __thread _Atomic long *sp_inflight_mine __attribute__((tls_model("initial-exec")));

/* A ticket for one append: the counter raised, with bit 0 set when it is
 * a shared one (lowered with an atomic subtraction); 0: record nothing. */
typedef uintptr_t sp_emit_ticket;
#define SP_TICKET_SHARED ((uintptr_t)1)

/* Out of line (core.c): everything sp_emit_raw checks before appending
 * (opening the trace on the first event, starting the CPU sampler, the
 * step window, the thread's counter), then the counter raised. */
sp_emit_ticket sp_emit_enter_slow(void);

/* Raise the thread's in-flight counter and check that the event may be
 * appended; 0 when it may not (nothing to undo then). */
static inline __attribute__((always_inline)) sp_emit_ticket sp_emit_enter(void)
{
    _Atomic long *c = sp_inflight_mine;
    if (SP_LIKELY(c != NULL)) {
        /* Ours alone; a signal handler nesting here completes before we
         * resume, so load-then-store cannot lose its update. */
        atomic_store_explicit(c, atomic_load_explicit(c, memory_order_relaxed) + 1, memory_order_relaxed);
        atomic_signal_fence(memory_order_seq_cst); /* the closer's membarrier does the rest */
        if (SP_LIKELY(atomic_load_explicit(&sp_core_state, memory_order_acquire) == SP_CORE_READY &&
                      sp_recording && !sp_emit_detour))
            return (sp_emit_ticket)c;
        atomic_store_explicit(c, atomic_load_explicit(c, memory_order_relaxed) - 1, memory_order_release);
    }
    return sp_emit_enter_slow();
}

static inline __attribute__((always_inline)) void sp_emit_leave(sp_emit_ticket ticket)
{
    _Atomic long *c = (_Atomic long *)(ticket & ~SP_TICKET_SHARED);
    if (SP_UNLIKELY(ticket & SP_TICKET_SHARED))
        atomic_fetch_sub_explicit(c, 1, memory_order_release);
    else
        atomic_store_explicit(c, atomic_load_explicit(c, memory_order_relaxed) - 1, memory_order_release);
}

/* sp_emit_raw, inline: append `ev` (a local of the caller's, whose
 * address goes nowhere else) to this process's trace.  Does nothing when
 * not recording; never blocks; leaves errno to the caller, which restores
 * it next (the slow path may change it).
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
    if (SP_LIKELY(sp_writer_reserve(sp_core_writer, ev->t)))
        sp_writer_put(ev);
    sp_emit_leave(ticket);
}
#endif

#pragma GCC visibility pop

#endif
