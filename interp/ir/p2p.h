/*
 * p2p.h — the runtime's point-to-point semantics that the verifier and the
 * simulator model (docs/semantics.md#modes): NCCL's, the default (a
 * device's groups run one at a time, in order), gloo's (each transfer on
 * its own: it completes once both halves are posted), or per-link (one
 * communicator per directed link: each transfer on its own, after the one
 * before it on its link). ir.c keeps the mode;
 * the replay (check/replay.c) reads it.
 * Tested by: tests/unit/test_interchange.c, tests/unit/test_replay.c.
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
 * compute_comms file (export --format torch-csv-comms; a compute_comms file
 * read, torchcsv.h), which has no groups and reads in the NCCL mode with
 * each run of adjacent transfer cells as one (docs/modes.md#files). Where
 * our placement and PyTorch's differ, a file target chooses by the file's
 * reading, the streams' figure breaking a tie. PyTorch posts each cell
 * alone, though, and on one NCCL communicator a rank's cells run one at a
 * time: in the NCCL mode a file is proved a second time that way, and
 * cells that wait on each other across ranks are a deadlock
 * (docs/modes.md#crossing-cells; check/replay.h). Setting another target
 * than the program's verifies it again (lowered anew unless its streams
 * were given). */
enum { SC_LOWER_STREAMS, SC_LOWER_FILE };
sc_status sc_prog_set_lower_target(sc_prog *pg, int target);
int sc_prog_lower_target(const sc_prog *pg);

/* NCCL's eager sends, for the proof of a file's cells: a send whose
 * message fits NCCL's buffers completes without its receiver. It is
 * modelled only where the user states both sizes: msg_bytes, the size of
 * every message of the program, and eager_bytes, the largest message a
 * send completes alone (0 and 0, the default: never eager). SC_ERR_ARG for
 * a negative or non-finite size; other values verify the program again. */
sc_status sc_prog_set_eager(sc_prog *pg, double eager_bytes, double msg_bytes);
/* Whether the program's sends complete alone: 0 < msg_bytes <= eager_bytes. */
int sc_prog_eager(const sc_prog *pg);

/* Where a given stream's instructions stand in the file they were read
 * from, for messages: the reader notes the cell (from 1, the file's
 * numbering) of the instruction it last pushed to device d's stream
 * (sc_prog_push_stream). sc_prog_cell gives instruction k's, 0 where none
 * was noted (a program not read from a file, or an instruction the reader
 * added). */
sc_status sc_prog_note_cell(sc_prog *pg, int d, int cell);
int sc_prog_cell(const sc_prog *pg, int d, size_t k);

/* A transfer as a PyTorch CSV names it, into buf: 0SEND_F1 (SEND_* names
 * the sending stage, RECV_* the receiving one; ours names the consumer). */
void sc_transfer_token(const sc_instr *in, char *buf, size_t len);

/* The names for a message: "nccl, gloo or per-link". */
#define SC_P2P_NAMES "nccl, gloo or per-link"

#endif
