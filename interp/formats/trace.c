/*
 * trace.c — Chrome trace JSON with flow arrows for transfers (trace.h).
 */
#include "trace.h"
#include "json.h"

#include <stdlib.h>

#define NONE ((size_t)-1)

/* Index in its device's stream of the SEND of each transfer key (dir,
 * stage, mb): key = (dir * S + stage) * m + mb. The sender is the RECV's
 * peer. */
static size_t *index_sends(const sc_prog *pg)
{
    size_t S = (size_t)sc_prog_stages(pg), m = (size_t)sc_prog_stream_microbatches(pg);
    size_t *send = malloc(2 * S * m * sizeof(size_t));
    if (!send)
        return NULL;
    for (size_t i = 0; i < 2 * S * m; i++)
        send[i] = NONE;
    for (int d = 0; d < sc_prog_devices(pg); d++) {
        size_t n;
        const sc_instr *v = sc_prog_stream(pg, d, &n);
        for (size_t k = 0; k < n; k++)
            if (sc_op_is_send(v[k].op))
                send[((size_t)v[k].dir * S + (size_t)v[k].stage) * m + (size_t)v[k].mb] = k;
    }
    return send;
}

static void event_head(FILE *f, int *first)
{
    fputs(*first ? "\n  " : ",\n  ", f);
    *first = 0;
}

/* Writes the events of one timing as process pid; flow ids from *flow. */
static void write_timing(FILE *f, const sc_prog *pg, const sc_timing *t, int pid,
                         const size_t *send, long *flow, int *first)
{
    const sc_sim *sim = t->sim;
    double us = t->us_per_unit > 0 ? t->us_per_unit : 1000;
    int P = sc_prog_devices(pg);
    size_t S = (size_t)sc_prog_stages(pg), m = (size_t)sc_prog_stream_microbatches(pg);
    event_head(f, first);
    fprintf(f, "{\"name\": \"process_name\", \"ph\": \"M\", \"pid\": %d, \"args\": {\"name\": ", pid);
    sc_json_string(f, t->label ? t->label : "timeline");
    fputs("}}", f);
    event_head(f, first);
    fprintf(f, "{\"name\": \"process_sort_index\", \"ph\": \"M\", \"pid\": %d, "
               "\"args\": {\"sort_index\": %d}}", pid, pid);
    for (int d = 0; d < P; d++)
        for (int c = 0; c < 2; c++) {
            event_head(f, first);
            fprintf(f, "{\"name\": \"thread_name\", \"ph\": \"M\", \"pid\": %d, \"tid\": %d, "
                       "\"args\": {\"name\": \"d%d%s\"}}", pid, 2 * d + c, d, c ? " comm" : "");
            event_head(f, first);
            fprintf(f, "{\"name\": \"thread_sort_index\", \"ph\": \"M\", \"pid\": %d, \"tid\": %d, "
                       "\"args\": {\"sort_index\": %d}}", pid, 2 * d + c, 2 * d + c);
        }
    for (int d = 0; d < P && sim->host; d++) { /* offload: the host link of each device */
        event_head(f, first);
        fprintf(f, "{\"name\": \"thread_name\", \"ph\": \"M\", \"pid\": %d, \"tid\": %d, "
                   "\"args\": {\"name\": \"d%d host\"}}", pid, 2 * P + d, d);
        event_head(f, first);
        fprintf(f, "{\"name\": \"thread_sort_index\", \"ph\": \"M\", \"pid\": %d, \"tid\": %d, "
                   "\"args\": {\"sort_index\": %d}}", pid, 2 * P + d, 2 * P + d);
    }
    /* Steps: where the last device ends each (a line across the process). */
    for (int k = 0; k < sim->steps && sim->step_end && sim->steps > 1; k++) {
        event_head(f, first);
        fprintf(f, "{\"name\": \"step %d ends\", \"cat\": \"step\", \"ph\": \"i\", \"s\": "
                   "\"p\", \"pid\": %d, \"ts\": %.15g, \"args\": {\"step\": %d, \"makespan\": "
                   "%.15g, \"bubble_rate\": %.15g}}", k, pid, sim->step_end[k] * us, k,
                sim->step_makespan[k] * us, sim->step_bubble[k]);
    }
    int colls = 0; /* collectives: a thread per device for its channel */
    for (int d = 0; d < P && !colls; d++) {
        size_t n;
        const sc_instr *v = sc_prog_stream(pg, d, &n);
        for (size_t k = 0; k < n && !colls; k++)
            colls = sc_op_is_coll(v[k].op);
    }
    for (int d = 0; d < P && colls; d++) {
        event_head(f, first);
        fprintf(f, "{\"name\": \"thread_name\", \"ph\": \"M\", \"pid\": %d, \"tid\": %d, "
                   "\"args\": {\"name\": \"d%d collectives\"}}", pid, 3 * P + d, d);
        event_head(f, first);
        fprintf(f, "{\"name\": \"thread_sort_index\", \"ph\": \"M\", \"pid\": %d, \"tid\": %d, "
                   "\"args\": {\"sort_index\": %d}}", pid, 3 * P + d, 3 * P + d);
    }
    for (int d = 0; d < P; d++) {
        size_t n;
        const sc_instr *v = sc_prog_stream(pg, d, &n);
        int step = 0, vstep = 0;
        double cprev = 0; /* the channel is free from */
        for (size_t k = 0; k < n; k++) {
            const sc_instr *in = &v[k];
            size_t g = sim->offset[d] + k;
            double t0 = sim->t0[g] * us, t1 = sim->t1[g] * us;
            if ((sc_op_is_compute(in->op) || sc_op_is_coll(in->op)) &&
                (in->flags & SC_IF_ROLLBACK) && t1 <= t0)
                continue; /* a rollback path that did not run (docs/steps.md) */
            if (in->op == SC_OP_VALIDATE) {
                event_head(f, first);
                fprintf(f, "{\"name\": \"step %d validated\", \"cat\": \"step\", \"ph\": \"i\", "
                           "\"s\": \"t\", \"pid\": %d, \"tid\": %d, \"ts\": %.15g, \"args\": "
                           "{\"step\": %d}}", vstep, pid, 2 * d, t1, vstep);
                vstep++;
                continue;
            }
            if (sc_op_is_coll(in->op)) {
                /* From its start (posted, the channel free) to its completion. */
                char cn[128];
                sc_coll c;
                sc_prog_instr_format(pg, in, cn, sizeof cn);
                sc_prog_coll(pg, in, &c);
                double cs = t0 > cprev ? t0 : cprev;
                cprev = t1;
                event_head(f, first);
                fputs("{\"name\": ", f);
                sc_json_string(f, cn);
                fprintf(f, ", \"cat\": \"%s\", \"ph\": \"X\", \"pid\": %d, \"tid\": %d, "
                           "\"ts\": %.15g, \"dur\": %.15g, \"args\": {\"posted\": %.15g, "
                           "\"stage\": %d, \"mb\": %d, \"step\": %d, \"bytes\": %.15g}}",
                        sc_op_name(in->op), pid, 3 * P + d, cs, t1 - cs, t0, c.stage, c.mb,
                        c.step, c.bytes);
                continue;
            }
            if (sc_op_is_host(in->op) && sc_op_has(in->op, SC_OPF_OUT | SC_OPF_IN) && sim->host) {
                char hn[96];
                sc_instr_format(in, hn, sizeof hn);
                event_head(f, first);
                fprintf(f, "{\"name\": \"%s\", \"cat\": \"%s\", \"ph\": \"X\", \"pid\": %d, "
                           "\"tid\": %d, \"ts\": %.15g, \"dur\": %.15g, \"args\": {\"stage\": %d, "
                           "\"mb\": %d, \"frac\": %.15g}}",
                        hn, sc_op_name(in->op), pid, 2 * P + d, t0, t1 - t0, in->stage, in->mb,
                        (double)in->frac / SC_FRAC_ONE);
            }
            /* Host memory grows when a copy to host starts and shrinks when
             * the backward reads the record back. */
            int to_host = sc_op_is_host(in->op) && sc_op_has(in->op, SC_OPF_OUT);
            if (sim->host && (to_host || sc_op_is_bgrad(in->op))) {
                event_head(f, first);
                fprintf(f, "{\"name\": \"host d%d\", \"ph\": \"C\", \"pid\": %d, \"ts\": %.15g, "
                           "\"args\": {\"units\": %.15g}}", d, pid, to_host ? t0 : t1,
                        sim->host[g]);
            }
            sc_op_mem_effect e = sc_op_mem_of(in->op);
            if (sc_op_is_host(in->op) && e != SC_OPM_NONE && sim->mem) { /* DROP, RELOAD */
                event_head(f, first);
                fprintf(f, "{\"name\": \"memory d%d\", \"ph\": \"C\", \"pid\": %d, \"ts\": %.15g, "
                           "\"args\": {\"units\": %.15g}}", d, pid, e == SC_OPM_ALLOC ? t0 : t1,
                        sim->mem[g]);
            }
            if (in->op == SC_OP_OPTIM && sc_prog_steps(pg) > 1) { /* a step boundary */
                event_head(f, first);
                fprintf(f, "{\"name\": \"end of step %d\", \"cat\": \"step\", \"ph\": \"i\", "
                           "\"s\": \"t\", \"pid\": %d, \"tid\": %d, \"ts\": %.15g, \"args\": "
                           "{\"step\": %d}}", step, pid, 2 * d, t1, step);
                step++;
            }
            if (sc_op_is_pair(in->op)) { /* one slot named by both halves */
                char pn[96];
                sc_instr b = sc_pair_half(in);
                sc_instr_format(in, pn, sizeof pn);
                event_head(f, first);
                fprintf(f, "{\"name\": \"%s\", \"cat\": \"FB\", \"ph\": \"X\", \"pid\": %d, "
                           "\"tid\": %d, \"ts\": %.15g, \"dur\": %.15g, \"args\": {\"stage\": %d, "
                           "\"mb\": %d, \"with\": \"%s s%d mb%d\"}}",
                        pn, pid, 2 * d, t0, t1 - t0, in->stage, in->mb, sc_op_name(b.op), b.stage,
                        b.mb);
                if (sim->mem) { /* its F half's record at the start, both halves' at the end */
                    event_head(f, first);
                    fprintf(f, "{\"name\": \"memory d%d\", \"ph\": \"C\", \"pid\": %d, "
                               "\"ts\": %.15g, \"args\": {\"units\": %.15g}}", d, pid, t0,
                            (k ? sim->mem[g - 1] : 0) + sc_prog_pair_rise(pg, in));
                    event_head(f, first);
                    fprintf(f, "{\"name\": \"memory d%d\", \"ph\": \"C\", \"pid\": %d, "
                               "\"ts\": %.15g, \"args\": {\"units\": %.15g}}", d, pid, t1,
                            sim->mem[g]);
                }
                continue;
            }
            if (!sc_op_is_pass(in->op) && !sc_op_is_transfer(in->op))
                continue;
            char name[96];
            sc_instr_format(in, name, sizeof name);
            int tid = 2 * d + !sc_op_is_pass(in->op);
            event_head(f, first);
            fprintf(f, "{\"name\": \"%s\", \"cat\": \"%s\", \"ph\": \"X\", \"pid\": %d, "
                       "\"tid\": %d, \"ts\": %.15g, \"dur\": %.15g, \"args\": {\"stage\": %d, "
                       "\"mb\": %d}}",
                    name, sc_op_name(in->op), pid, tid, t0, t1 - t0, in->stage, in->mb);
            if (sc_op_is_pass(in->op) && sim->mem) {
                event_head(f, first);
                fprintf(f, "{\"name\": \"memory d%d\", \"ph\": \"C\", \"pid\": %d, \"ts\": %.15g, "
                           "\"args\": {\"units\": %.15g}}", d, pid, sc_op_is_fwd(in->op) ? t0 : t1,
                        sim->mem[g]);
            }
            if (!sc_op_is_recv(in->op))
                continue;
            size_t sk = send[((size_t)in->dir * S + (size_t)in->stage) * m + (size_t)in->mb];
            if (sk == NONE)
                continue;
            /* The arrow leaves the SEND when it is posted and enters the
             * RECV no earlier, inside the RECV's slice (it completes only
             * after the SEND was posted). */
            int sd = in->peer; /* the sender's device */
            double ts = sim->t0[sim->offset[sd] + sk] * us, tf = (t0 + t1) / 2 > ts ? (t0 + t1) / 2 : ts;
            long id = ++*flow;
            event_head(f, first);
            fprintf(f, "{\"name\": \"%s\", \"cat\": \"transfer\", \"ph\": \"s\", \"id\": %ld, "
                       "\"pid\": %d, \"tid\": %d, \"ts\": %.15g}",
                    in->dir == SC_DIR_ACT ? "activation" : "gradient", id, pid, 2 * sd + 1, ts);
            event_head(f, first);
            fprintf(f, "{\"name\": \"%s\", \"cat\": \"transfer\", \"ph\": \"f\", \"bp\": \"e\", "
                       "\"id\": %ld, \"pid\": %d, \"tid\": %d, \"ts\": %.15g}",
                    in->dir == SC_DIR_ACT ? "activation" : "gradient", id, pid, tid, tf);
        }
    }
}

sc_status sc_trace_write(FILE *f, const sc_prog *pg, const sc_timing *timings, int n)
{
    if (!sc_prog_is_lowered(pg) || n < 1)
        return SC_ERR_ARG;
    size_t *send = index_sends(pg);
    if (!send)
        return SC_ERR_NOMEM;
    long flow = 0;
    int first = 1;
    fputs("{\"displayTimeUnit\": \"ms\", \"traceEvents\": [", f);
    for (int i = 0; i < n; i++)
        write_timing(f, pg, &timings[i], i + 1, send, &flow, &first);
    fputs("\n]}\n", f);
    free(send);
    return fflush(f) != 0 || ferror(f) ? SC_ERR_ARG : SC_OK;
}
