/*
 * nccl_internal.h: what the files of the simulated libnccl.so.2 share.
 *
 * A communicator is one rank's view of a POSIX shared-memory segment named
 * after a hash of the ncclUniqueId; every rank (process) maps the same
 * segment.  Collectives meet there by per-communicator sequence number, p2p
 * operations by per-(sender, receiver) sequence number.  Waiting is done with
 * futexes on counters in the segment (see nccl_shm.c).
 */
#ifndef SIM_NCCL_INTERNAL_H
#define SIM_NCCL_INTERNAL_H

#include <nccl.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "sim_common.h"
#include "sim_private.h"

#define SIM_NCCL_MAX_RANKS 4096
#define SIM_NCCL_SLOTS 8               /* in-flight collectives per comm */
#define SIM_NCCL_DATA_MAX (256 * 1024) /* bytes per rank really exchanged */
#define SIM_NCCL_P2P_SLOTS 4
#define SIM_NCCL_P2P_DATA_MAX (64 * 1024)
#define SIM_NCCL_P2P_DATA_RANKS 64 /* above this many ranks, p2p moves no data */

/* Where the parts of a segment lie; identical on all ranks (from nranks). */
struct sim_shm_layout {
    size_t hosts, coll, host_slots, p2p, coll_data, p2p_data, size;
    size_t slot_bytes, host_slot_bytes, p2p_data_max;
};

struct sim_shm_header {
    _Atomic uint32_t joined; /* futex: ranks that finished joining */
    _Atomic uint32_t nranks; /* set by the first to join; all must agree */
};

/* One meeting point of a ring of SIM_NCCL_SLOTS; `arrived` only grows. */
struct sim_shm_slot {
    _Atomic uint32_t arrived; /* futex */
    uint32_t pad;
    uint64_t value[]; /* per rank: arrival time, or exchanged info */
};

/* One ordered (sender, receiver) pair. */
struct sim_shm_p2p {
    _Atomic uint32_t sent, received; /* futexes: operations arrived so far */
    uint64_t send_ns[SIM_NCCL_P2P_SLOTS], recv_ns[SIM_NCCL_P2P_SLOTS];
};

struct sim_comm {
    ncclUniqueId id;
    uint64_t hash;
    char hash_hex[17];
    int nranks, rank, device;
    char *shm;
    struct sim_shm_layout layout;
    uint64_t coll_seq, host_seq, split_seq;
    uint64_t *send_seq, *recv_seq; /* per peer */
    int cross_node;
    _Atomic int aborted;
    _Atomic int async_error;
    _Atomic int refs;
};

/* nccl_shm.c */
int sim_shm_join(struct sim_comm *c);
int sim_shm_wait_joined(struct sim_comm *c);
void sim_shm_release(struct sim_comm *c);
struct sim_shm_slot *sim_shm_coll_slot(struct sim_comm *c, uint64_t seq);
char *sim_shm_coll_data(struct sim_comm *c, uint64_t seq, int rank);
void sim_shm_arrive(struct sim_comm *c, struct sim_shm_slot *s, uint64_t seq, uint64_t value);
int sim_shm_wait_all(struct sim_comm *c, struct sim_shm_slot *s, uint64_t seq);
int sim_shm_exchange(struct sim_comm *c, uint64_t value, uint64_t *all);
struct sim_shm_p2p *sim_shm_p2p_chan(struct sim_comm *c, int from, int to);
char *sim_shm_p2p_data(struct sim_comm *c, int from, int to, uint64_t seq);
void sim_shm_p2p_arrive(struct sim_shm_p2p *ch, int sender, uint64_t seq, uint64_t t);
int sim_shm_p2p_wait(struct sim_comm *c, struct sim_shm_p2p *ch, int sender, uint64_t seq,
                     uint64_t *peer_ns);
uint64_t sim_shm_host_hash(struct sim_comm *c, int rank);

/* nccl.c */
void sim_comm_unref(struct sim_comm *c);
ncclResult_t sim_nccl_set_error(ncclResult_t r, const char *fmt, ...);

/* nccl_group.c */
size_t sim_nccl_type_size(ncclDataType_t t);
/* Inside ncclGroupStart..End on this thread; a communicator whose init
 * waits for its peers at the outermost ncclGroupEnd (-1: out of memory). */
int sim_nccl_in_group(void);
int sim_nccl_defer_init(struct sim_comm *c);

#endif
