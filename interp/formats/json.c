/*
 * json.c — the JSON dump of a program (json.h).
 */
#include "json.h"

void sc_json_string(FILE *f, const char *s)
{
    fputc('"', f);
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            fprintf(f, "\\%c", c);
        else if (c < 0x20)
            fprintf(f, "\\u%04x", c);
        else
            fputc(c, f);
    }
    fputc('"', f);
}

typedef double (*stage_num)(const sc_prog *, int);

static void stage_array(FILE *f, const sc_prog *pg, const char *key, stage_num get)
{
    fprintf(f, ",\n  \"%s\": [", key);
    for (int s = 0; s < sc_prog_stages(pg); s++)
        fprintf(f, "%s%.15g", s ? ", " : "", get(pg, s));
    fputc(']', f);
}

static void dev_array(FILE *f, const char *sep, const char *key, const double *v, int P)
{
    fprintf(f, "%s\"%s\": [", sep, key);
    for (int d = 0; d < P; d++)
        fprintf(f, "%s%.15g", d ? ", " : "", v[d]);
    fputc(']', f);
}

sc_status sc_json_write(FILE *f, const sc_prog *pg, const sc_sim *sim, const char *name)
{
    if (!sc_prog_is_lowered(pg))
        return SC_ERR_ARG;
    int P = sc_prog_devices(pg), S = sc_prog_stages(pg);
    fprintf(f, "{\n  \"format\": \"stagecraft.program\",\n  \"version\": 1,\n  \"name\": ");
    sc_json_string(f, name ? name : "");
    fprintf(f, ",\n  \"devices\": %d,\n  \"stages\": %d,\n  \"microbatches\": %d", P, S,
            sc_prog_microbatches(pg));
    if (sc_prog_steps(pg) > 1 || sc_prog_optim_sync(pg) != SC_SYNC_NONE) /* docs/steps.md */
        fprintf(f, ",\n  \"steps\": %d,\n  \"optim_sync\": \"%s\"", sc_prog_steps(pg),
                sc_sync_name(sc_prog_optim_sync(pg)));
    fprintf(f, ",\n  \"placement\": [");
    for (int s = 0; s < S; s++)
        fprintf(f, "%s%d", s ? ", " : "", sc_prog_stage_device(pg, s));
    fputc(']', f);
    stage_array(f, pg, "tf", sc_prog_tf);
    stage_array(f, pg, "tb", sc_prog_tb);
    stage_array(f, pg, "tw", sc_prog_tw);
    stage_array(f, pg, "mem", sc_prog_mem);
    fprintf(f, ",\n  \"tcomm\": %.15g,\n  \"w_keep\": %.15g,\n  \"streams\": [", sc_prog_tcomm(pg),
            sc_prog_w_keep(pg));
    for (int d = 0; d < P; d++) {
        size_t n;
        const sc_instr *v = sc_prog_stream(pg, d, &n);
        fprintf(f, "%s\n    [", d ? "," : "");
        int group = -1;
        for (size_t k = 0; k < n; k++) {
            const sc_instr *in = &v[k];
            fprintf(f, "%s\n      {\"op\": \"%s\"", k ? "," : "", sc_op_name(in->op));
            group += sc_starts_group(v, k);
            switch (sc_op_class_of(in->op)) { /* the operands of its class */
            case SC_OPK_XFER:
                fprintf(f, ", \"dir\": \"%s\", \"stage\": %d, \"mb\": %d, \"peer\": %d, "
                           "\"group\": %d",
                        in->dir == SC_DIR_ACT ? "act" : "grad", in->stage, in->mb, in->peer, group);
                break;
            case SC_OPK_STAGE:
                fprintf(f, ", \"stage\": %d, \"mb\": %d", in->stage, in->mb);
                if (sc_op_has(in->op, SC_OPF_FRAC)) /* R */
                    fprintf(f, ", \"frac\": %.15g", (double)in->frac / SC_FRAC_ONE);
                break;
            case SC_OPK_VOCAB: /* the device's vocabulary shard */
                fprintf(f, ", \"shard\": %d, \"mb\": %d", in->stage, in->mb);
                break;
            case SC_OPK_HOST:
                fprintf(f, ", \"stage\": %d, \"mb\": %d, \"frac\": %.15g", in->stage, in->mb,
                        (double)in->frac / SC_FRAC_ONE);
                break;
            case SC_OPK_COLL: {
                sc_coll c;
                sc_prog_coll(pg, in, &c);
                if (sc_op_has(c.op, SC_OPF_REDUCES))
                    fprintf(f, ", \"red\": \"%s\"", sc_red_name(c.red));
                else
                    fprintf(f, ", \"root\": %d", c.root);
                fprintf(f, ", \"what\": \"%s\", \"part\": %d, \"stage\": %d, \"mb\": %d, "
                           "\"step\": %d, \"group\": %d, \"bytes\": %.15g",
                        sc_op_name(c.what), c.part, c.stage, c.mb, c.step, c.group, c.bytes);
                break;
            }
            case SC_OPK_STEP: break;
            }
            /* post-validation, docs/steps.md#optimizer-synchronization */
            if ((sc_op_is_compute(in->op) || sc_op_is_coll(in->op)) &&
                (in->flags & SC_IF_ROLLBACK))
                fprintf(f, ", \"rollback\": true");
            else if (sc_op_is_fwd(in->op) && (in->flags & SC_IF_REDO_IN))
                fprintf(f, ", \"redo_in\": true");
            if (sim) {
                size_t g = sim->offset[d] + k;
                fprintf(f, ", \"t0\": %.15g, \"t1\": %.15g", sim->t0[g], sim->t1[g]);
                if ((sc_op_is_pass(in->op) || (sc_op_is_host(in->op) &&
                                                sc_op_mem_of(in->op) != SC_OPM_NONE)) && sim->mem)
                    fprintf(f, ", \"mem\": %.15g", sim->mem[g]);
                if (sim->host && ((sc_op_is_host(in->op) && sc_op_has(in->op, SC_OPF_OUT)) ||
                                  sc_op_is_bgrad(in->op)))
                    fprintf(f, ", \"host\": %.15g", sim->host[g]);
            }
            fputc('}', f);
        }
        fprintf(f, "%s]", n ? "\n    " : "");
    }
    fprintf(f, "\n  ]");
    if (sim) {
        double peak = 0;
        for (int d = 0; d < P; d++)
            peak = sim->peak_mem[d] > peak ? sim->peak_mem[d] : peak;
        fprintf(f, ",\n  \"simulation\": {\"makespan\": %.15g, \"bubble_rate\": %.15g, ",
                sim->makespan, sim->bubble_rate);
        fprintf(f, "\"peak_memory_max\": %.15g,\n    ", peak);
        dev_array(f, "", "peak_memory", sim->peak_mem, P);
        dev_array(f, ", ", "busy", sim->busy, P);
        dev_array(f, ", ", "start", sim->start, P);
        dev_array(f, ", ", "end", sim->end, P);
        if (sim->host_peak) {
            fprintf(f, ",\n    ");
            dev_array(f, "", "host_peak", sim->host_peak, P);
        }
        if (sim->step_end && (sc_prog_steps(pg) > 1 || sc_prog_optim_sync(pg) != SC_SYNC_NONE)) {
            fprintf(f, ",\n    ");
            dev_array(f, "", "step_makespan", sim->step_makespan, sim->steps);
            dev_array(f, ", ", "step_bubble_rate", sim->step_bubble, sim->steps);
        }
        if (sim->coll_busy) {
            fprintf(f, ",\n    ");
            dev_array(f, "", "coll_busy", sim->coll_busy, P);
        }
        fputc('}', f);
    }
    fprintf(f, "\n}\n");
    return fflush(f) != 0 || ferror(f) ? SC_ERR_ARG : SC_OK;
}
