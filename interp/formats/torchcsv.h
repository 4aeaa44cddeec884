/*
 * torchcsv.h — PyTorch torch.distributed.pipelining schedules as CSV.
 *
 * The format (PyTorch's _dump_csv / _load_csv): one row per rank, rank 0
 * first, no header; one action per cell. An action is
 *
 *     <stage><TYPE>[<mb>]        e.g. 0F3, 2I0, 1W7, 3SEND_F2, 1REDUCE_GRAD
 *     (<a>;<b>;...)OVERLAP_F_B    compute actions run back to back
 *
 * TYPE  F forward, I input gradient (our B), W weight gradient, B full
 * backward (our BW); SEND_F / RECV_F activations, SEND_B / RECV_B
 * gradients; WAIT_SEND_F / WAIT_SEND_B (PyTorch 2.15 on: the wait that
 * retires a send); UNSHARD, RESHARD (FSDP), REDUCE_GRAD and, from 2.15,
 * WAIT_REDUCE_GRAD (end of step). SEND_F names the sending stage s, RECV_F
 * the receiving stage s+1; SEND_B names the sending stage s, RECV_B the
 * receiving stage s-1; a WAIT_SEND_* names its SEND's stage and microbatch.
 *
 * Dialects:
 *   compute_only   compute actions only; an empty cell is an idle step.
 *                  Our writer puts every pass in the first column after the
 *                  pass before it on its rank and after the passes it
 *                  depends on (PyTorch's lock-step executor reads columns as
 *                  time steps); the receiver adds the communication.
 *   compute_comms  fully lowered: our streams, one transfer per cell, no
 *                  empty cells. PyTorch has no offload action: OFFLOAD, DROP
 *                  and RELOAD are left out (the same schedule without
 *                  offload); OPTIM is outside PyTorch's schedule.
 *                  For PyTorch >= 2.15 (version >= SC_TORCH_WAITS) every SEND
 *                  gets its WAIT_SEND_* right before the first pass that,
 *                  under docs/semantics.md#the-semantics, already waits for the SEND's group
 *                  (a pass reading a RECV of that group or a later one), or
 *                  before the reductions at the end; each stage of the rank
 *                  ends with REDUCE_GRAD, WAIT_REDUCE_GRAD (one pending at a
 *                  time). So PyTorch blocks nowhere the proved streams do
 *                  not. For older versions: no waits, one REDUCE_GRAD per
 *                  stage at the end (2.14 waits for all sends at the end and
 *                  would read 0WAIT_SEND_F0 as a W).
 *
 * Reading accepts both dialects (a file with any SEND_/RECV_/WAIT_/
 * UNSHARD/RESHARD/REDUCE_GRAD cell is compute_comms), the waits of 2.15 and
 * both letter conventions: PyTorch up to about 2.5 wrote B for the input
 * gradient (followed later by W of the same stage and microbatch) and BW for
 * the full backward. A B whose (stage, microbatch) also has a W and no I is
 * read as the input gradient. The shape comes from the file: P = rows, S = 1
 * + largest stage of a compute action, m = 1 + largest microbatch; the
 * placement is where each stage's actions are. Costs are the defaults of
 * sc_prog_new (set others before sc_check). compute_only files become orders
 * (sc_prog_push, lowered by sc_lower); compute_comms files become streams as
 * given (sc_prog_push_stream: verified, never re-lowered), each instruction's
 * cell noted (sc_prog_note_cell, for messages) and the lowering target a
 * file (p2p.h: in the NCCL mode its cells are also proved as PyTorch posts
 * them, each alone; docs/modes.md#crossing-cells). A WAIT_SEND_* must
 * follow its SEND on the same rank, once; a WAIT_REDUCE_GRAD must follow the
 * REDUCE_GRAD of its stage with no other reduction between (PyTorch 2.15's
 * rules). A WAIT_SEND_* becomes a WAIT (docs/semantics.md#waits), which the
 * replay makes block until its SEND has completed; WAIT_REDUCE_GRAD is
 * dropped (REDUCE, with FSDP OPTIM, waits for the reductions). A file with
 * UNSHARD has FSDP (docs/fsdp.md#interchange): its UNSHARD, RESHARD and
 * REDUCE_GRAD become those instructions; without, REDUCE_GRAD is our REDUCE.
 * The compute_comms writer writes a program's own WAITs and FSDP
 * instructions where they are (an import written again keeps them) and
 * places the others as above.
 *
 * A malformed file is refused with one message naming the row (from 1,
 * rank = row - 1) and the cell (from 1, empty cells counted):
 *   SC_ERR_ARG      bad token, empty file, empty cell in compute_comms,
 *                   a wait without its send or reduction
 *   SC_ERR_PROGRAM  unknown stage, stage on two ranks, a rank without
 *                   stages, pass twice, W before its input gradient,
 *                   backward before its forward, missing microbatch
 *
 *     char err[512];
 *     sc_status st;
 *     sc_prog *pg = sc_torchcsv_read(text, len, &dialect, &st, err, sizeof err);
 *     if (!pg) fprintf(stderr, "%s: %s\n", path, err);
 *
 * Writers need a program whose passes verify (compute_only) or that is
 * lowered and verified (compute_comms: sc_check first).
 *
 * Tested by: tests/unit/test_interchange.c, tests/interchange.sh.
 */
#ifndef SC_TORCHCSV_H
#define SC_TORCHCSV_H

#include <stdio.h>

#include "ir/ir.h"

typedef enum sc_torch_dialect {
    SC_TORCH_COMPUTE_ONLY,
    SC_TORCH_COMPUTE_COMMS
} sc_torch_dialect;

/* PyTorch versions as 100 * major + minor (2.15 -> 215). SC_TORCH_WAITS is the
 * first whose compute_comms dialect has WAIT_SEND_F/B and WAIT_REDUCE_GRAD;
 * SC_TORCH_CURRENT the newest checked
 * (docs/interchange.md#pytorch-pipelining-csv). */
#define SC_TORCH_WAITS 215
#define SC_TORCH_CURRENT 215

/* Writes pg in the dialect for PyTorch `version` to f. SC_ERR_ARG when the
 * program is not ready or holds more than one training step or an
 * optimizer synchronization (PyTorch's file is one step; message in
 * sc_errmsg), SC_ERR_NOMEM, or SC_ERR_ARG on a write error. */
sc_status sc_torchcsv_write(FILE *f, sc_prog *pg, sc_torch_dialect dialect, int version);

/* Reads CSV text. Returns the new program (caller frees), or NULL with the
 * status in *st and one line in err. *dialect gets the dialect found.
 * Linear in the text; its tables are interp's counted memory (ir/alloc.h). */
sc_prog *sc_torchcsv_read(const char *text, size_t len, sc_torch_dialect *dialect,
                          sc_status *st, char *err, size_t errlen);
/* The same, until deadline (CLOCK_MONOTONIC seconds, formats/readfile.h's
 * sc_clock_now; 0: none), checked every few thousand cells: past it,
 * SC_ERR_LIMIT with "time limit reached". */
sc_prog *sc_torchcsv_read_until(const char *text, size_t len, double deadline,
                                sc_torch_dialect *dialect, sc_status *st, char *err,
                                size_t errlen);

#endif
