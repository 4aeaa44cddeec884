/*
 * cli_torch.c — what an export for PyTorch says beside the file (cli.h):
 * the version switch of the CSV dialect, the stage -> rank placement, how
 * PyTorch loads the file and torchtitan's settings (docs/interchange.md#pytorch-pipelining-csv).
 */
#include "cli.h"
#include "ir/ep.h"
#include "ir/p2p.h"
#include "ir/recompute_cfg.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/export_out.h"
#include "formats/torchcsv.h"

int sc_cli_torch_version(const char *s, int *v)
{
    sc_eng_err e;
    sc_eng_err *prev = sc_eng_catch(&e);
    int rc = sc_eng_torch_version(s, v);
    sc_eng_release(prev);
    return rc ? sc_cli_fail(rc, e.msg) : 0;
}

/* Recomputation (docs/recompute.md#pytorch): PyTorch's schedules have no
 * such pass; how to get it there. */
static void recompute_note(sc_prog *pg)
{
    const sc_recompute_info *ri = sc_prog_recompute_info(pg);
    if (!ri || !ri->records)
        return;
    const sc_recompute_cfg *c = sc_prog_recompute(pg);
    fprintf(stderr, "stagecraft: note: recompute: PyTorch's schedules have no recomputation pass, "
            "so the file leaves out the R of the %d records recomputed (per rank:", ri->records);
    for (int d = 0; d < sc_prog_devices(pg); d++)
        fprintf(stderr, "%s %d", d ? "," : "", ri->count[d]);
    fprintf(stderr, "); PyTorch recomputes with activation checkpointing on the stage module "
            "instead (torch.utils.checkpoint.checkpoint around the forward of %s, or "
            "checkpoint_wrapper): every microbatch of a wrapped stage, inside its backward, "
            "not per record%s\n",
            c->frac < 1 ? "the layers that recompute_frac covers" : "the recomputed stages",
            c->policy == SC_RECOMPUTE_ALL ? "" : " (this program recomputes only some records: "
            "checkpoint the stages it recomputes most)");
}

/* Expert parallelism (docs/interchange.md#expert-parallelism): PyTorch's
 * schedules have no all-to-all action; where PyTorch runs them. */
static void ep_note(sc_prog *pg)
{
    int ep = sc_prog_ep(pg), n = 0;
    for (int d = 0; ep > 1 && d < sc_prog_devices(pg); d++) {
        size_t k;
        const sc_instr *v = sc_prog_stream(pg, d, &k);
        for (size_t i = 0; i < k; i++)
            n += v[i].op == SC_OP_DISPATCH;
    }
    if (!n)
        return;
    fprintf(stderr, "stagecraft: note: ep = %d: PyTorch's schedules have no all-to-all action, "
            "so the file leaves out the DISPATCH and COMBINE of the %d passes with experts and "
            "the dense gradients' all-reduce over each EP group; in PyTorch the MoE layers run "
            "their all-to-alls inside each stage's F, I and B (torchtitan: "
            "--parallelism.expert_parallel_degree %d; an OVERLAP_F_B pair hides one half's "
            "under the other's compute), and the dense gradients are reduced with the "
            "data-parallel ones\n", ep, n, ep);
}

int sc_cli_torch_note(sc_prog *pg, const char *out, int comms, int version, int titan)
{
    int P = sc_prog_devices(pg), S = sc_prog_stages(pg), m = sc_prog_microbatches(pg);
    int kind = sc_eng_placement_kind(pg);
    const char *file = out && strcmp(out, "-") ? out : "FILE";
    sc_eng_err e;
    sc_eng_err *prev = sc_eng_catch(&e);
    int rc = sc_eng_torch_check(pg, comms, titan); /* the export checked it too: a no-op there */
    sc_eng_release(prev);
    if (rc)
        return sc_cli_fail(rc, e.msg);
    fprintf(stderr, "stagecraft: note: placement (stage -> rank, %s):",
            kind == 1 ? "loop" : kind == 2 ? "V" : "table");
    for (int d = 0; d < P; d++) {
        fprintf(stderr, "%s rank %d:", d ? "," : "", d);
        for (int s = 0; s < S; s++)
            if (sc_prog_stage_device(pg, s) == d)
                fprintf(stderr, " %d", s);
    }
    fputc('\n', stderr);
    recompute_note(pg);
    ep_note(pg);
    if (comms) {
        fprintf(stderr, "stagecraft: note: PyTorch %s: each rank builds its stages and runs "
                "_PipelineScheduleRuntime(stages, n_microbatches=%d, ...)._load_csv(\"%s\", "
                "format=\"compute_comms\")\n",
                version >= SC_TORCH_WAITS ? ">= 2.15" : "<= 2.14", m, file);
        /* The mode it was verified in (docs/semantics.md#modes): the file
         * itself has no room for it (every row is a rank to PyTorch). */
        if (sc_prog_p2p(pg) == SC_P2P_LINK)
            fprintf(stderr, "stagecraft: note: verified in the per-link mode: set "
                    "torch.distributed.config.pipeline_per_edge_p2p = True "
                    "(TORCH_DISTRIBUTED_PIPELINE_PER_EDGE_P2P=1) on every rank before building "
                    "its stages; a file named *.per-link.csv states the mode, and stagecraft import reads it "
                    "in it (docs/modes.md#files)\n");
        else if (sc_prog_p2p(pg) == SC_P2P_GLOO)
            fprintf(stderr, "stagecraft: note: verified in gloo's mode: run it on gloo; a file named "
                    "*.gloo.csv states the mode, and stagecraft import reads it in it "
                    "(docs/modes.md#files)\n");
        return 0;
    }
    /* torchtitan's class for the V placement with overlapped pairs: its
     * DualPipeV (whose OVERLAP_F_B actions it runs). */
    const char *cls = kind == 2 ? (sc_prog_has_pairs(pg) ? "DualPipeV" : "ZBVZeroBubble")
                      : S == P ? "1F1B" : "Interleaved1F1B";
    char extra[160] = "";
    if (kind == 0)
        snprintf(extra, sizeof extra, " (torchtitan cannot place these stages: its classes "
                 "place loop or V)");
    else if (kind == 1 && S != P && S != 2 * P)
        snprintf(extra, sizeof extra, ", and --parallelism.pipeline_parallel_layers_per_stage "
                 "giving %d stages", S);
    fprintf(stderr, "stagecraft: note: PyTorch: _PipelineScheduleRuntime(stages, n_microbatches=%d, "
            "...)._load_csv(\"%s\"); torchtitan: --parallelism.pipeline_parallel_schedule_csv %s%s%s "
            "--parallelism.pipeline_parallel_degree %d, with --training.local_batch_size = %d x "
            "--parallelism.pipeline_parallel_microbatch_size%s\n",
            m, file, file, kind ? " --parallelism.pipeline_parallel_schedule " : "", kind ? cls : "",
            P, m, extra);
    return 0;
}
