/*
 * json.c — the JSON dump of a program (json.h).
 */
#include "json.h"
#include "jsonw.h"
#include "ir/p2p.h"

#include <stdlib.h>

/* The per-stage numbers of one field. */
typedef double (*stage_num)(const sc_prog *, int);

static void stage_array(sc_jw *w, const sc_prog *pg, const char *key, stage_num get)
{
    sc_jw_array(w, key);
    for (int s = 0; s < sc_prog_stages(pg); s++)
        sc_jw_num(w, NULL, get(pg, s));
    sc_jw_end(w);
}

/* An instruction's operands, those of its class (group: a transfer's). */
static void operands(sc_jw *w, const sc_prog *pg, const sc_instr *in, int group)
{
    switch (sc_op_class_of(in->op)) {
    case SC_OPK_XFER:
        sc_jw_str(w, "dir", in->dir == SC_DIR_ACT ? "act" : "grad");
        sc_jw_int(w, "stage", in->stage);
        sc_jw_int(w, "mb", in->mb);
        sc_jw_int(w, "peer", in->peer);
        sc_jw_int(w, "group", group);
        break;
    case SC_OPK_WAIT: /* its SEND's operands */
        sc_jw_str(w, "dir", in->dir == SC_DIR_ACT ? "act" : "grad");
        sc_jw_int(w, "stage", in->stage);
        sc_jw_int(w, "mb", in->mb);
        sc_jw_int(w, "peer", in->peer);
        break;
    case SC_OPK_STAGE:
        sc_jw_int(w, "stage", in->stage);
        sc_jw_int(w, "mb", in->mb);
        if (sc_op_has(in->op, SC_OPF_FRAC)) /* R: its fraction of the record */
            sc_jw_num(w, "frac", (double)in->frac / SC_FRAC_ONE);
        break;
    case SC_OPK_VOCAB: /* the device's vocabulary shard */
        sc_jw_int(w, "shard", in->stage);
        sc_jw_int(w, "mb", in->mb);
        break;
    case SC_OPK_FSDP: /* the stage's parameters */
        sc_jw_int(w, "stage", in->stage);
        break;
    case SC_OPK_HOST:
        sc_jw_int(w, "stage", in->stage);
        sc_jw_int(w, "mb", in->mb);
        sc_jw_num(w, "frac", (double)in->frac / SC_FRAC_ONE);
        break;
    case SC_OPK_COLL: {
        sc_coll c;
        sc_prog_coll(pg, in, &c);
        if (sc_op_has(c.op, SC_OPF_REDUCES))
            sc_jw_str(w, "red", sc_red_name(c.red));
        else if (sc_op_has(c.op, SC_OPF_ROOTED)) /* an all-to-all has neither */
            sc_jw_int(w, "root", c.root);
        sc_jw_str(w, "what", sc_op_name(c.what));
        sc_jw_int(w, "part", c.part);
        sc_jw_int(w, "stage", c.stage);
        sc_jw_int(w, "mb", c.mb);
        sc_jw_int(w, "step", c.step);
        sc_jw_int(w, "group", c.group);
        sc_jw_num(w, "bytes", c.bytes);
        break;
    }
    case SC_OPK_PAIR: { /* docs/semantics.md#overlapped-pairs */
        sc_instr b = sc_pair_half(in);
        sc_jw_int(w, "stage", in->stage);
        sc_jw_int(w, "mb", in->mb);
        sc_jw_object(w, "with");
        sc_jw_str(w, "op", sc_op_name(b.op));
        sc_jw_int(w, "stage", b.stage);
        sc_jw_int(w, "mb", b.mb);
        sc_jw_end(w);
        break;
    }
    case SC_OPK_STEP: break;
    }
    if (sc_prog_slices(pg) > 1 && in->mb >= 0 && !sc_op_is_pair(in->op)) /* docs/slices.md */
        sc_jw_int(w, "slice", sc_prog_slice_of(pg, in->mb));
}

/* One instruction: its kind's fields, then its times (with a simulation). */
static void instr(sc_jw *w, const sc_prog *pg, const sc_sim *sim, int d, const sc_instr *v,
                  size_t k, int group)
{
    const sc_instr *in = &v[k];
    sc_jw_object(w, NULL);
    sc_jw_str(w, "op", sc_op_name(in->op));
    operands(w, pg, in, group);
    if ((sc_op_is_compute(in->op) || sc_op_is_coll(in->op)) &&
        (in->flags & SC_IF_ROLLBACK)) /* post-validation, docs/steps.md#optimizer-synchronization */
        sc_jw_bool(w, "rollback", 1);
    else if (sc_op_is_fwd(in->op) && (in->flags & SC_IF_REDO_IN))
        sc_jw_bool(w, "redo_in", 1);
    if (sim) {
        size_t g = sim->offset[d] + k;
        sc_jw_num(w, "t0", sim->t0[g]);
        sc_jw_num(w, "t1", sim->t1[g]);
        if ((sc_op_is_pass(in->op) || sc_op_is_pair(in->op) ||
             (sc_op_is_host(in->op) && sc_op_mem_of(in->op) != SC_OPM_NONE)) && sim->mem)
            sc_jw_num(w, "mem", sim->mem[g]);
        if (sim->host && ((sc_op_is_host(in->op) && sc_op_has(in->op, SC_OPF_OUT)) ||
                          sc_op_is_bgrad(in->op)))
            sc_jw_num(w, "host", sim->host[g]);
    }
    sc_jw_end(w);
}

/* The totals of the simulation: one line, then the per-device lists on
 * lines of their own. */
static void totals(sc_jw *w, const sc_prog *pg, const sc_sim *sim)
{
    int P = sc_prog_devices(pg);
    double peak = 0;
    for (int d = 0; d < P; d++)
        peak = sim->peak_mem[d] > peak ? sim->peak_mem[d] : peak;
    static const char *const line = ",\n    ";
    sc_jw_object(w, "simulation");
    sc_jw_num(w, "makespan", sim->makespan);
    sc_jw_num(w, "bubble_rate", sim->bubble_rate);
    sc_jw_num(w, "peak_memory_max", peak);
    sc_jw_sep(w, line);
    sc_jw_nums(w, "peak_memory", sim->peak_mem, P);
    sc_jw_nums(w, "busy", sim->busy, P);
    sc_jw_nums(w, "start", sim->start, P);
    sc_jw_nums(w, "end", sim->end, P);
    if (sim->host_peak) {
        sc_jw_sep(w, line);
        sc_jw_nums(w, "host_peak", sim->host_peak, P);
    }
    if (sim->step_end && (sc_prog_steps(pg) > 1 || sc_prog_optim_sync(pg) != SC_SYNC_NONE)) {
        sc_jw_sep(w, line);
        sc_jw_nums(w, "step_makespan", sim->step_makespan, sim->steps);
        sc_jw_nums(w, "step_bubble_rate", sim->step_bubble, sim->steps);
    }
    if (sim->coll_busy) {
        sc_jw_sep(w, line);
        sc_jw_nums(w, "coll_busy", sim->coll_busy, P);
    }
    sc_jw_end(w);
}

sc_status sc_json_write(FILE *f, const sc_prog *pg, const sc_sim *sim, const char *name)
{
    if (!sc_prog_is_lowered(pg))
        return SC_ERR_ARG;
    int P = sc_prog_devices(pg), S = sc_prog_stages(pg);
    sc_out *o = malloc(sizeof *o);
    if (!o)
        return SC_ERR_NOMEM;
    sc_out_init(o, f);
    sc_jw w;
    sc_jw_init_out(&w, o);
    sc_jw_object(&w, NULL); /* a member a line */
    sc_jw_layout(&w, "\n  ", ",\n  ", "\n");
    sc_jw_str(&w, "format", "stagecraft.program");
    sc_jw_int(&w, "version", 1);
    sc_jw_str(&w, "name", name ? name : "");
    sc_jw_int(&w, "devices", P);
    sc_jw_int(&w, "stages", S);
    sc_jw_int(&w, "microbatches", sc_prog_microbatches(pg));
    if (sc_prog_steps(pg) > 1 || sc_prog_optim_sync(pg) != SC_SYNC_NONE) { /* docs/steps.md */
        sc_jw_int(&w, "steps", sc_prog_steps(pg));
        sc_jw_str(&w, "optim_sync", sc_sync_name(sc_prog_optim_sync(pg)));
    }
    if (sc_prog_forward_only(pg)) /* docs/guide.md#forward-only */
        sc_jw_bool(&w, "forward_only", 1);
    if (sc_prog_slices(pg) > 1) /* docs/slices.md: record mb is slice mb % K of mb / K */
        sc_jw_int(&w, "slices", sc_prog_slices(pg));
    sc_jw_array(&w, "placement");
    for (int s = 0; s < S; s++)
        sc_jw_int(&w, NULL, sc_prog_stage_device(pg, s));
    sc_jw_end(&w);
    stage_array(&w, pg, "tf", sc_prog_tf);
    stage_array(&w, pg, "tb", sc_prog_tb);
    stage_array(&w, pg, "tw", sc_prog_tw);
    stage_array(&w, pg, "mem", sc_prog_mem);
    sc_jw_num(&w, "tcomm", sc_prog_tcomm(pg));
    sc_jw_num(&w, "w_keep", sc_prog_w_keep(pg));
    if (sc_prog_lengths(pg)) { /* docs/lengths.md: the costs above are for length_ref */
        sc_jw_nums(&w, "lengths", sc_prog_lengths(pg), sc_prog_microbatches(pg));
        sc_jw_num(&w, "length_ref", sc_prog_length_ref(pg));
    }
    sc_jw_str(&w, "comm", sc_p2p_name(sc_prog_p2p(pg))); /* docs/semantics.md#modes */
    sc_jw_array(&w, "streams"); /* a device a line, an instruction a line */
    sc_jw_layout(&w, "\n    ", ",\n    ", "\n  ");
    for (int d = 0; d < P; d++) {
        size_t n;
        const sc_instr *v = sc_prog_stream(pg, d, &n);
        sc_jw_array(&w, NULL);
        sc_jw_layout(&w, "\n      ", ",\n      ", "\n    ");
        int group = -1;
        for (size_t k = 0; k < n; k++) {
            group += sc_starts_group(v, k);
            instr(&w, pg, sim, d, v, k, group);
        }
        sc_jw_end(&w);
    }
    sc_jw_end(&w);
    if (sim)
        totals(&w, pg, sim);
    sc_jw_end(&w);
    sc_out_putc(o, '\n');
    int bad = sc_out_flush(o);
    free(o);
    return bad ? SC_ERR_ARG : SC_OK;
}
