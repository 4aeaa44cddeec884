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

/* What the lowering is for (docs/semantics.md#lowering-per-mode): the
 * streams, as check, sim and show run them (the default), or a PyTorch
 * compute_comms file (export --format torch-csv-comms), which has no groups
 * and reads in the NCCL mode with each run of adjacent transfer cells as one
 * (docs/modes.md#files). Where our placement and PyTorch's differ, a file
 * target chooses by the file's reading, the streams' figure breaking a tie.
 * Setting another target than the program's verifies it again (lowered
 * anew unless its streams were given). */
enum { SC_LOWER_STREAMS, SC_LOWER_FILE };
sc_status sc_prog_set_lower_target(sc_prog *pg, int target);
int sc_prog_lower_target(const sc_prog *pg);

/* The names for a message: "nccl, gloo or per-link". */
#define SC_P2P_NAMES "nccl, gloo or per-link"

#endif
