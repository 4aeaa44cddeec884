/*
 * device.h — the kinds of device a run can use (`run --backend NAME`), one row
 * of a table each, and the transports they offer
 * (docs/run.md#devices-threads-mpi-ranks-gpus). The run driver asks a kind for
 * what it needs (how to open a device, how many there are, the --check
 * tolerance, whose memory to check, which transport to start) and never
 * compares a kind's name.
 *
 *     char err[256];
 *     const sc_device_kind *k = sc_device_kind_find("cuda", err, sizeof err);
 *     sc_backend *be;
 *     if (!k || k->open(0, 0, &be, err, sizeof err) != SC_OK)
 *         fprintf(stderr, "%s\n", err);    // unknown, or not here (why)
 *
 *   kind  devices       threads of one process      MPI ranks  --check  memory checked
 *   cpu   as many as    local                       mpi        1e-5     the machine's
 *         asked
 *   cuda  the GPUs      nccl, else cuda-local       nccl       1e-4     each GPU's free
 *         seen          (in order of preference)                        memory, first
 *
 * A transport kind says what it needs before it can start (one GPU per
 * device, transfers posted in one order between each pair, a library that
 * loads) and how to start it for threads or for one MPI rank; the driver
 * tries the preferred ones in order and says why it passed one over.
 *
 * The cuda kind and the GPU transports live in the CUDA module, loaded on
 * first use (cuda_load.c): naming them, or finding the kind, loads nothing.
 * The tables are constant; every entry is thread-safe as its backend or
 * transport says.
 *
 * Tested by: tests/unit/test_device.c.
 */
#ifndef SC_DEVICE_H
#define SC_DEVICE_H

#include <stddef.h>

#include "backend/backend.h"
#include "transport/transport.h"

/* The most bytes of a transport's id (transport kind's id_bytes). */
#define SC_TRANSPORT_ID_MAX 128

typedef struct sc_transport_kind {
    const char *name;      /* "local", "mpi", "cuda-local", "nccl": what a run reports */
    const char *label;     /* the library, in messages ("NCCL") */
    int gpu_each;          /* needs one GPU per device (per rank under MPI) */
    int in_order;          /* matches the transfers between two devices in posting order, not by
                            * tag: the program must post them in one order on both sides
                            * (sc_run_check_pair_order) */
    int lazy;              /* worth starting only when the program sends anything: its start-up
                            * (bootstrap, threads, buffers) would only add ways to fail */
    double start_bytes;    /* device memory it takes on each GPU when it starts */
    /* 1 when it can start in this process, else 0 and why (why may be NULL);
     * NULL: always. */
    int (*usable)(char *why, size_t whylen);
    /* P devices as threads of this process, with backends be[0..P-1]; NULL
     * when it does not serve threads. */
    sc_status (*threads_new)(int P, sc_backend *const *be, int max_tag, double timeout_s,
                             sc_transport **out, char *err, size_t errlen);
    /* Under MPI: id_bytes (at most SC_TRANSPORT_ID_MAX; 0: none) that rank 0
     * makes with id_new and every rank receives before rank_new. */
    size_t id_bytes;
    sc_status (*id_new)(unsigned char *id, char *err, size_t errlen);
    /* Device `rank` of P, this MPI rank's, with its backend be; NULL when it
     * does not serve ranks. */
    sc_status (*rank_new)(int P, int rank, sc_backend *be, const unsigned char *id, int max_tag,
                          double timeout_s, sc_transport **out, char *err, size_t errlen);
    void (*free)(sc_transport *tp); /* NULL: nothing */
} sc_transport_kind;

typedef struct sc_device_kind {
    const char *name;      /* --backend's word: "cpu", "cuda" */
    /* Device dev's backend (a kind that counts its devices takes dev modulo
     * them); mem_cap > 0 caps its memory in bytes (0: none). On failure one
     * line in err, SC_ERR_ARG (not here, and why) or SC_ERR_NOMEM. */
    sc_status (*open)(int dev, size_t mem_cap, sc_backend **out, char *err, size_t errlen);
    /* The devices this process sees (0: none, why in info); info, when not
     * NULL, gets the name of device 0 otherwise. NULL: not counted (any
     * number of devices share the machine). */
    int (*count)(char *info, size_t infolen);
    /* The 16 bytes that name device dev in every process (the same physical
     * device, the same bytes); 0 when unknown. NULL: none. */
    int (*uuid)(int dev, unsigned char uuid[16]);
    double tolerance;      /* --check's relative tolerance of loss and gradients (docs/run.md#check) */
    int host_memory;       /* the devices' memory is the machine's: the run's check of the
                            * machine's memory counts their tensors */
    int gpu_memory;        /* each device's free memory (backend meminfo) is checked before
                            * anything large is allocated */
    double start_bytes;    /* device memory its libraries take at their first use, beside the
                            * tensors (counted by that check) */
    /* Between threads of one process, in order of preference, NULL-ended:
     * the last one always starts; STAGECRAFT_TRANSPORT may name the one to
     * use when there are several. */
    const sc_transport_kind *const *threads;
    const sc_transport_kind *ranks; /* between MPI ranks */
} sc_device_kind;

/* The kind called name, or NULL with "unknown backend 'x' (known: cpu,
 * cuda)" in err. */
const sc_device_kind *sc_device_kind_find(const char *name, char *err, size_t errlen);

/* Opens device dev of kind `name` (sc_device_kind_find, then its open):
 * for programs that name their backend, like the tests. */
sc_status sc_backend_open(const char *name, int dev, size_t mem_cap, sc_backend **out, char *err,
                          size_t errlen);

#endif
