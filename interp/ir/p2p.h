/*
 * p2p.h — the runtime's point-to-point semantics that the verifier and the
 * simulator model (docs/semantics.md#modes): NCCL's, the default (a
 * device's groups run one at a time, in order), gloo's (each transfer on
 * its own: it completes once both halves are posted), or per-link (one
 * communicator per directed link: each transfer on its own, after the one
 * before it on its link). ir.c keeps the mode;
 * the replay (check/replay.c) reads it.
 */
#ifndef SC_P2P_H
#define SC_P2P_H

#include "ir.h"

enum { SC_P2P_NCCL, SC_P2P_GLOO, SC_P2P_LINK };

/* Sets the mode (SC_ERR_ARG for another value); the program is verified
 * again. */
sc_status sc_prog_set_p2p(sc_prog *pg, int mode);
int sc_prog_p2p(const sc_prog *pg);

/* The mode's name ("nccl", "gloo", "per-link"; the recipe field comm and
 * --comm); the mode of a name, or -1. */
const char *sc_p2p_name(int mode);
int sc_p2p_parse(const char *name);

/* The names for a message: "nccl, gloo or per-link". */
#define SC_P2P_NAMES "nccl, gloo or per-link"

#endif
