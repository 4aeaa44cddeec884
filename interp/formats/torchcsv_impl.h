/*
 * torchcsv_impl.h — the PyTorch CSV reader's actions and state (internal to
 * formats/): torchcsv_read.c parses and resolves a file, torchcsv_rules.c
 * checks PyTorch's rules for waits and reductions on it.
 *
 * Tested by: tests/unit/test_interchange.c, tests/interchange.sh.
 */
#ifndef SC_TORCHCSV_IMPL_H
#define SC_TORCHCSV_IMPL_H

#include "torchcsv.h"

#include <stddef.h>

/* Action types of the CSV. Order matters: compute types first. */
#define TORCH_TYPES(X)                                                  \
    X(F, "F")                                                           \
    X(I, "I")                                                           \
    X(W, "W")                                                           \
    X(B, "B")         /* full backward; the input gradient in old files */ \
    X(BW, "BW")       /* full backward in old files */                 \
    X(SEND_F, "SEND_F")                                                 \
    X(RECV_F, "RECV_F")                                                 \
    X(SEND_B, "SEND_B")                                                 \
    X(RECV_B, "RECV_B")                                                 \
    X(WAIT_SEND_F, "WAIT_SEND_F")  /* PyTorch 2.15 on */                \
    X(WAIT_SEND_B, "WAIT_SEND_B")                                       \
    X(UNSHARD, "UNSHARD")                                               \
    X(RESHARD, "RESHARD")                                               \
    X(REDUCE_GRAD, "REDUCE_GRAD")                                       \
    X(WAIT_REDUCE_GRAD, "WAIT_REDUCE_GRAD")

enum {
#define X(name, text) T_##name,
    TORCH_TYPES(X)
#undef X
    T_COUNT
};
extern const char *const sc_tcsv_type_names[];

#define is_compute(t) ((t) <= T_BW)

typedef struct act {
    int type, stage, mb; /* mb = -1 when the token has none */
    int pair;            /* 1, 2: the first and second action of an OVERLAP_F_B that is a
                          * forward and a backward (an overlapped pair); 0 otherwise */
    int row, cell;       /* from 1 */
    const char *tok;     /* the cell's text, for messages */
    int toklen;
} act;

typedef struct reader {
    act *a;
    size_t n, cap;
    int rows;
    int comms;                  /* a non-compute action was seen */
    int empty_row, empty_cell;  /* the first empty cell, or 0 */
    sc_status st;
    char *err;
    size_t errlen;
    double deadline;            /* 0: none */
    unsigned long cells;        /* read so far, for the deadline's checks */
} reader;

/* Records the error (class st, message) in r; returns st. */
sc_status sc_tcsv_fail(reader *r, sc_status st, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* "row 2 (rank 1), cell 5 '1W3'" */
#define AT_FMT "row %d (rank %d), cell %d '%.*s'"
#define AT(x) (x)->row, (x)->row - 1, (x)->cell, (x)->toklen > 40 ? 40 : (x)->toklen, (x)->tok

/* PyTorch 2.15's waits (a file with any), row by row; sent[] has 2·S·m
 * zeros. */
sc_status sc_tcsv_check_waits(reader *r, const act *v, size_t n, int S, int m,
                              unsigned char *sent);
/* One REDUCE_GRAD per stage, after its backward passes; at[] has S zeros. */
sc_status sc_tcsv_check_reduces(reader *r, const act *v, size_t n, int S, const int *dev,
                                size_t *at);
/* Whether the file is forward-only (docs/interchange.md#forward-only): no
 * backward pass (I, W, B, BW) anywhere. Such a file has no gradient
 * transfer, FSDP action or reduction either: one is an error (*st, the
 * message in r; the result is then 0). */
int sc_tcsv_forward_only(reader *r, const act *v, size_t n, sc_status *st);

#endif
