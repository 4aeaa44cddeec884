/*
 * ptrace_impl.h — what the two halves of the trace reader share: the
 * spans and devices read (ptrace.c) and turned into costs (ptrace_costs.c).
 * Everything here lives in interp's counted memory (ir/alloc.h).
 */
#ifndef SC_PTRACE_IMPL_H
#define SC_PTRACE_IMPL_H

#include "ptrace.h"

/* The actions of PyTorch's runtime (schedules.py, _ComputationType) as
 * they matter here: the passes, the posts of transfers, the waits. */
enum { PT_F, PT_I, PT_W, PT_B, PT_SEND_F, PT_RECV_F, PT_SEND_B, PT_RECV_B, PT_WAIT, PT_OTHER };

typedef struct pt_span {
    int dev, stage, mb, kind, step; /* mb -1: the action has none */
    double ts, end, first;          /* microseconds; first: its first operator's start, or NAN */
    int file, event;                /* where it is, for messages */
} pt_span;

typedef struct pt_dev {
    int file, rank;                 /* rank: the file's distributedInfo.rank, or -1 */
    double pid;
    int id;                         /* its index before order_devices sorts them */
} pt_dev;

struct sc_ptrace {
    pt_span *sp;
    int n, cap;
    pt_dev *dv;
    int ndev, devcap;
    int *slot;                      /* (file, pid) -> device + 1, open addressing; 0 empty */
    int nslot;                      /* a power of two, at least twice ndev */
    char **files;
    int *rank;                      /* per file: its rank, or -1 */
    int nfiles;
    char backend[32], host[64];
};

/* The name of an action kind, for messages ("F", "SEND_F", ...). */
const char *sc_pt_kind_name(int kind);

#endif
