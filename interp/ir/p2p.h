/*
 * p2p.h — the runtime's point-to-point semantics that the verifier and the
 * simulator model (docs/semantics.md#modes): NCCL's, the default (a
 * device's groups run one at a time, in order), or gloo's (each transfer on
 * its own: it completes once both halves are posted). ir.c keeps the mode;
 * the replay (check/replay.c) reads it.
 */
#ifndef SC_P2P_H
#define SC_P2P_H

#include "ir.h"

enum { SC_P2P_NCCL, SC_P2P_GLOO };

/* Sets the mode (SC_ERR_ARG for another value); the program is verified
 * again. */
sc_status sc_prog_set_p2p(sc_prog *pg, int mode);
int sc_prog_p2p(const sc_prog *pg);

#endif
