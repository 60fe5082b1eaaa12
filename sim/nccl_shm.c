/*
 * nccl_shm.c: the shared-memory meeting place of one communicator.
 *
 * The segment "/simnccl-<hash of unique id>" is created by whichever rank
 * comes first and sized from nranks, so every rank computes the same layout:
 *
 *   header | host hash per rank | collective slots | host-exchange slots |
 *   p2p channels (nranks x nranks) | collective data | p2p data
 *
 * Pages of tmpfs are only allocated when touched, so the generous data areas
 * cost nothing unless used.  The last rank to join unlinks the name: from
 * then on only the mappings keep it alive, and a crashed job leaves nothing.
 *
 * Collective number `seq` uses slot seq % SIM_NCCL_SLOTS, whose counter
 * `arrived` only grows; all ranks have arrived at seq when it reaches
 * nranks * (seq / SLOTS + 1).  Reuse is safe because no rank can be two
 * collectives ahead of another: finishing seq+1 needs every rank to have
 * left seq.  Waits are futex waits with a short timeout so that an aborted
 * communicator is noticed.
 */
#include "nccl_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/futex.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define SIM_SHM_POLL_NS (20 * SIM_NS_PER_MS)
#define SIM_SHM_ALIGN 4096

static size_t sim_align(size_t n) { return (n + SIM_SHM_ALIGN - 1) & ~(size_t)(SIM_SHM_ALIGN - 1); }

static void sim_futex_wait(_Atomic uint32_t *addr, uint32_t seen)
{
    struct timespec ts = {0, (long)SIM_SHM_POLL_NS};
    syscall(SYS_futex, (uint32_t *)addr, FUTEX_WAIT, seen, &ts, NULL, 0);
}

static void sim_futex_wake(_Atomic uint32_t *addr)
{
    syscall(SYS_futex, (uint32_t *)addr, FUTEX_WAKE, INT_MAX, NULL, NULL, 0);
}

static void sim_shm_plan(struct sim_shm_layout *l, int nranks)
{
    size_t n = (size_t)nranks;
    l->slot_bytes = sizeof(struct sim_shm_slot) + n * sizeof(uint64_t);
    l->host_slot_bytes = l->slot_bytes;
    l->p2p_data_max = nranks <= SIM_NCCL_P2P_DATA_RANKS ? SIM_NCCL_P2P_DATA_MAX : 0;
    l->hosts = sim_align(sizeof(struct sim_shm_header));
    l->coll = l->hosts + sim_align(n * sizeof(uint64_t));
    l->host_slots = l->coll + sim_align(SIM_NCCL_SLOTS * l->slot_bytes);
    l->p2p = l->host_slots + sim_align(SIM_NCCL_SLOTS * l->host_slot_bytes);
    l->coll_data = l->p2p + sim_align(n * n * sizeof(struct sim_shm_p2p));
    l->p2p_data = l->coll_data + SIM_NCCL_SLOTS * n * SIM_NCCL_DATA_MAX;
    l->size = l->p2p_data + n * n * SIM_NCCL_P2P_SLOTS * l->p2p_data_max;
}

static int sim_shm_map(struct sim_comm *c)
{
    char name[64];
    snprintf(name, sizeof name, "/simnccl-%s", c->hash_hex);
    int fd = shm_open(name, O_RDWR | O_CREAT, 0600);
    if (fd < 0)
        return -1;
    struct stat st;
    if (fstat(fd, &st) == 0 && (size_t)st.st_size < c->layout.size &&
        ftruncate(fd, (off_t)c->layout.size) != 0) {
        close(fd);
        return -1;
    }
    void *p = mmap(NULL, c->layout.size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (p == MAP_FAILED)
        return -1;
    c->shm = p;
    return 0;
}

static struct sim_shm_header *sim_shm_header(struct sim_comm *c)
{
    return (struct sim_shm_header *)c->shm;
}

uint64_t sim_shm_host_hash(struct sim_comm *c, int rank)
{
    return ((uint64_t *)(c->shm + c->layout.hosts))[rank];
}

int sim_shm_join(struct sim_comm *c)
{
    sim_shm_plan(&c->layout, c->nranks);
    if (sim_shm_map(c) != 0)
        return -1;
    struct sim_shm_header *h = sim_shm_header(c);
    uint32_t expected = 0;
    if (!atomic_compare_exchange_strong(&h->nranks, &expected, (uint32_t)c->nranks) &&
        expected != (uint32_t)c->nranks) {
        fprintf(stderr, "sim(nccl): rank %d joins with nranks %d, others with %u\n", c->rank,
                c->nranks, expected);
        sim_shm_release(c);
        return -1;
    }
    char host[256];
    sim_host_name(host, sizeof host);
    ((uint64_t *)(c->shm + c->layout.hosts))[c->rank] = sim_hash64(host, strlen(host));
    uint32_t joined = atomic_fetch_add(&h->joined, 1) + 1;
    if (joined == (uint32_t)c->nranks) { /* everyone has it mapped now */
        char name[64];
        snprintf(name, sizeof name, "/simnccl-%s", c->hash_hex);
        shm_unlink(name);
    }
    sim_futex_wake(&h->joined);
    return 0;
}

int sim_shm_wait_joined(struct sim_comm *c)
{
    struct sim_shm_header *h = sim_shm_header(c);
    uint32_t seen;
    while ((seen = atomic_load(&h->joined)) < (uint32_t)c->nranks) {
        if (atomic_load(&c->aborted))
            return -1;
        sim_futex_wait(&h->joined, seen);
    }
    c->cross_node = 0;
    for (int r = 1; r < c->nranks; r++)
        if (sim_shm_host_hash(c, r) != sim_shm_host_hash(c, 0))
            c->cross_node = 1;
    return 0;
}

void sim_shm_release(struct sim_comm *c)
{
    if (c->shm)
        munmap(c->shm, c->layout.size);
    c->shm = NULL;
}

struct sim_shm_slot *sim_shm_coll_slot(struct sim_comm *c, uint64_t seq)
{
    return (struct sim_shm_slot *)(c->shm + c->layout.coll +
                                   (seq % SIM_NCCL_SLOTS) * c->layout.slot_bytes);
}

char *sim_shm_coll_data(struct sim_comm *c, uint64_t seq, int rank)
{
    size_t slot = seq % SIM_NCCL_SLOTS;
    return c->shm + c->layout.coll_data +
           (slot * (size_t)c->nranks + (size_t)rank) * SIM_NCCL_DATA_MAX;
}

/* Only the last rank to arrive wakes the others: waking every waiter on
 * every arrival costs O(nranks^2) wake-ups, which 32 ranks on two cores feel. */
void sim_shm_arrive(struct sim_comm *c, struct sim_shm_slot *s, uint64_t seq, uint64_t value)
{
    uint32_t target = (uint32_t)c->nranks * (uint32_t)(seq / SIM_NCCL_SLOTS + 1);
    s->value[c->rank] = value;
    uint32_t now = atomic_fetch_add_explicit(&s->arrived, 1, memory_order_acq_rel) + 1;
    if (now == target)
        sim_futex_wake(&s->arrived);
}

/* Waits until all ranks arrived at SEQ in slot S; -1 when aborted. */
int sim_shm_wait_all(struct sim_comm *c, struct sim_shm_slot *s, uint64_t seq)
{
    uint32_t target = (uint32_t)c->nranks * (uint32_t)(seq / SIM_NCCL_SLOTS + 1);
    uint32_t seen;
    while ((int32_t)((seen = atomic_load_explicit(&s->arrived, memory_order_acquire)) - target) < 0) {
        if (atomic_load(&c->aborted))
            return -1;
        sim_futex_wait(&s->arrived, seen);
    }
    return 0;
}

/* A host-side all-gather of one number per rank (used by ncclCommSplit). */
int sim_shm_exchange(struct sim_comm *c, uint64_t value, uint64_t *all)
{
    uint64_t seq = c->host_seq++;
    struct sim_shm_slot *s = (struct sim_shm_slot *)(c->shm + c->layout.host_slots +
                                                     (seq % SIM_NCCL_SLOTS) * c->layout.host_slot_bytes);
    sim_shm_arrive(c, s, seq, value);
    if (sim_shm_wait_all(c, s, seq) != 0)
        return -1;
    memcpy(all, s->value, (size_t)c->nranks * sizeof(uint64_t));
    return 0;
}

struct sim_shm_p2p *sim_shm_p2p_chan(struct sim_comm *c, int from, int to)
{
    return (struct sim_shm_p2p *)(c->shm + c->layout.p2p) + (size_t)from * (size_t)c->nranks + (size_t)to;
}

char *sim_shm_p2p_data(struct sim_comm *c, int from, int to, uint64_t seq)
{
    if (!c->layout.p2p_data_max)
        return NULL;
    size_t chan = (size_t)from * (size_t)c->nranks + (size_t)to;
    return c->shm + c->layout.p2p_data +
           (chan * SIM_NCCL_P2P_SLOTS + seq % SIM_NCCL_P2P_SLOTS) * c->layout.p2p_data_max;
}

/* The sender (SENDER != 0) or receiver of operation SEQ arrived at time T. */
void sim_shm_p2p_arrive(struct sim_shm_p2p *ch, int sender, uint64_t seq, uint64_t t)
{
    _Atomic uint32_t *count = sender ? &ch->sent : &ch->received;
    uint64_t *times = sender ? ch->send_ns : ch->recv_ns;
    times[seq % SIM_NCCL_P2P_SLOTS] = t;
    atomic_store_explicit(count, (uint32_t)(seq + 1), memory_order_release);
    sim_futex_wake(count);
}

/* Waits for the other side of operation SEQ; its arrival in *PEER_NS. */
int sim_shm_p2p_wait(struct sim_comm *c, struct sim_shm_p2p *ch, int sender, uint64_t seq,
                     uint64_t *peer_ns)
{
    _Atomic uint32_t *count = sender ? &ch->received : &ch->sent;
    uint32_t seen;
    while ((int32_t)((seen = atomic_load_explicit(count, memory_order_acquire)) - (uint32_t)(seq + 1)) < 0) {
        if (atomic_load(&c->aborted))
            return -1;
        sim_futex_wait(count, seen);
    }
    *peer_ns = (sender ? ch->recv_ns : ch->send_ns)[seq % SIM_NCCL_P2P_SLOTS];
    return 0;
}
