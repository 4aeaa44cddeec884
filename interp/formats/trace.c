/*
 * trace.c — Chrome trace JSON with flow arrows for transfers (trace.h).
 */
#include "trace.h"
#include "jsonw.h"

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

/* A metadata event: a process's or thread's name or sort index. */
static void meta(sc_jw *w, const char *name, int pid, int tid, const char *key, const char *text,
                 int index)
{
    sc_jw_object(w, NULL);
    sc_jw_str(w, "name", name);
    sc_jw_str(w, "ph", "M");
    sc_jw_int(w, "pid", pid);
    if (tid >= 0)
        sc_jw_int(w, "tid", tid);
    sc_jw_object(w, "args");
    if (text)
        sc_jw_str(w, key, text);
    else
        sc_jw_int(w, key, index);
    sc_jw_end(w);
    sc_jw_end(w);
}

/* A thread's name and its place in the order. */
static void thread(sc_jw *w, int pid, int tid, const char *name)
{
    meta(w, "thread_name", pid, tid, "name", name, 0);
    meta(w, "thread_sort_index", pid, tid, "sort_index", NULL, tid);
}

/* The head of an event: name, category (or none), phase; pid, tid (or
 * none), time. */
static void event(sc_jw *w, const char *name, const char *cat, const char *ph, int pid, int tid,
                  double ts)
{
    sc_jw_object(w, NULL);
    sc_jw_str(w, "name", name);
    if (cat)
        sc_jw_str(w, "cat", cat);
    sc_jw_str(w, "ph", ph);
    sc_jw_int(w, "pid", pid);
    if (tid >= 0)
        sc_jw_int(w, "tid", tid);
    sc_jw_num(w, "ts", ts);
}

/* A counter: memory or host units of a device at time ts. */
/* The common events are written whole, a fragment at a time (jsonw.h's
 * sc_jw_raw), byte for byte what the member-at-a-time writer gave: a
 * trace of thousands of passes spent most of its time on keys and
 * separators (bench/README.md, start-up and output). */
#define LIT(o, s) sc_out_write(o, s, sizeof s - 1)

static void counter(sc_jw *w, const char *what, int d, int pid, double ts, double units)
{
    sc_out *o = sc_jw_raw(w);
    LIT(o, "{\"name\": \"");
    sc_out_puts(o, what);
    LIT(o, " d");
    sc_out_int(o, d);
    LIT(o, "\", \"ph\": \"C\", \"pid\": ");
    sc_out_int(o, pid);
    LIT(o, ", \"ts\": ");
    sc_out_num(o, ts);
    LIT(o, ", \"args\": {\"units\": ");
    sc_out_num(o, units);
    LIT(o, "}}");
}

/* A pass or a transfer: its slice on thread tid from t0 to t1. */
static void slice(sc_jw *w, const char *name, const char *cat, int pid, int tid, double t0,
                  double t1, int stage, int mb)
{
    sc_out *o = sc_jw_raw(w);
    LIT(o, "{\"name\": ");
    sc_out_quote(o, name);
    LIT(o, ", \"cat\": ");
    sc_out_quote(o, cat);
    LIT(o, ", \"ph\": \"X\", \"pid\": ");
    sc_out_int(o, pid);
    LIT(o, ", \"tid\": ");
    sc_out_int(o, tid);
    LIT(o, ", \"ts\": ");
    sc_out_num(o, t0);
    LIT(o, ", \"dur\": ");
    sc_out_num(o, t1 - t0);
    LIT(o, ", \"args\": {\"stage\": ");
    sc_out_int(o, stage);
    LIT(o, ", \"mb\": ");
    sc_out_int(o, mb);
    LIT(o, "}}");
}

/* One end of a transfer's arrow: "s" leaves, "f" enters. */
static void flow_end(sc_jw *w, const char *what, int enters, long id, int pid, int tid, double ts)
{
    sc_out *o = sc_jw_raw(w);
    LIT(o, "{\"name\": \"");
    sc_out_puts(o, what);
    if (enters)
        LIT(o, "\", \"cat\": \"transfer\", \"ph\": \"f\", \"bp\": \"e\", \"id\": ");
    else
        LIT(o, "\", \"cat\": \"transfer\", \"ph\": \"s\", \"id\": ");
    sc_out_int(o, id);
    LIT(o, ", \"pid\": ");
    sc_out_int(o, pid);
    LIT(o, ", \"tid\": ");
    sc_out_int(o, tid);
    LIT(o, ", \"ts\": ");
    sc_out_num(o, ts);
    LIT(o, "}");
}

/* A step mark on the thread of device d (tid < 0: across the process). */
static void step_mark(sc_jw *w, const char *name, const char *scope, int pid, int tid, double ts,
                      int step)
{
    sc_jw_object(w, NULL);
    sc_jw_str(w, "name", name);
    sc_jw_str(w, "cat", "step");
    sc_jw_str(w, "ph", "i");
    sc_jw_str(w, "s", scope);
    sc_jw_int(w, "pid", pid);
    if (tid >= 0)
        sc_jw_int(w, "tid", tid);
    sc_jw_num(w, "ts", ts);
    sc_jw_object(w, "args");
    sc_jw_int(w, "step", step);
}

/* The process pid of timing t and its tracks: a compute and a comm thread
 * per device, with offload a host link's, with collectives a channel's;
 * with several steps a mark where each ends. */
static void tracks(sc_jw *w, const sc_prog *pg, const sc_timing *t, int pid, double us)
{
    const sc_sim *sim = t->sim;
    int P = sc_prog_devices(pg);
    char name[128];
    meta(w, "process_name", pid, -1, "name", t->label ? t->label : "timeline", 0);
    meta(w, "process_sort_index", pid, -1, "sort_index", NULL, pid);
    for (int d = 0; d < P; d++)
        for (int c = 0; c < 2; c++) {
            snprintf(name, sizeof name, "d%d%s", d, c ? " comm" : "");
            thread(w, pid, 2 * d + c, name);
        }
    for (int d = 0; d < P && sim->host; d++) { /* offload: the host link of each device */
        snprintf(name, sizeof name, "d%d host", d);
        thread(w, pid, 2 * P + d, name);
    }
    /* Steps: where the last device ends each (a line across the process). */
    for (int k = 0; k < sim->steps && sim->step_end && sim->steps > 1; k++) {
        snprintf(name, sizeof name, "step %d ends", k);
        step_mark(w, name, "p", pid, -1, sim->step_end[k] * us, k);
        sc_jw_num(w, "makespan", sim->step_makespan[k] * us);
        sc_jw_num(w, "bubble_rate", sim->step_bubble[k]);
        sc_jw_end(w);
        sc_jw_end(w);
    }
    int colls = 0; /* collectives: a thread per device for its channel */
    for (int d = 0; d < P && !colls; d++) {
        size_t n;
        const sc_instr *v = sc_prog_stream(pg, d, &n);
        for (size_t k = 0; k < n && !colls; k++)
            colls = sc_op_is_coll(v[k].op);
    }
    for (int d = 0; d < P && colls; d++) {
        snprintf(name, sizeof name, "d%d collectives", d);
        thread(w, pid, 3 * P + d, name);
    }
}

/* A collective on its channel's track tid: from its start cs (posted, the
 * channel free) to its completion t1. */
static void coll_event(sc_jw *w, const sc_prog *pg, const sc_instr *in, int pid, int tid,
                       double cs, double t0, double t1)
{
    char name[128];
    sc_coll c;
    sc_prog_instr_format(pg, in, name, sizeof name);
    sc_prog_coll(pg, in, &c);
    event(w, name, sc_op_name(in->op), "X", pid, tid, cs);
    sc_jw_num(w, "dur", t1 - cs);
    sc_jw_object(w, "args");
    sc_jw_num(w, "posted", t0);
    sc_jw_int(w, "stage", c.stage);
    sc_jw_int(w, "mb", c.mb);
    sc_jw_int(w, "step", c.step);
    sc_jw_num(w, "bytes", c.bytes);
    sc_jw_end(w);
    sc_jw_end(w);
}

/* A pair: one slot on d's compute track named by both halves; its memory
 * (g: its global index) with its F half's record at the start, both
 * halves' at the end. */
static void pair_event(sc_jw *w, const sc_prog *pg, const sc_sim *sim, const sc_instr *in, int pid,
                       int d, size_t k, size_t g, double t0, double t1)
{
    char name[128];
    sc_instr b = sc_pair_half(in);
    char with[48];
    sc_instr_format(in, name, sizeof name);
    snprintf(with, sizeof with, "%s s%d mb%d", sc_op_name(b.op), b.stage, b.mb);
    event(w, name, "FB", "X", pid, 2 * d, t0);
    sc_jw_num(w, "dur", t1 - t0);
    sc_jw_object(w, "args");
    sc_jw_int(w, "stage", in->stage);
    sc_jw_int(w, "mb", in->mb);
    sc_jw_str(w, "with", with);
    sc_jw_end(w);
    sc_jw_end(w);
    if (sim->mem) { /* its F half's record at the start, both halves' at the end */
        counter(w, "memory", d, pid, t0,
                (k ? sim->mem[g - 1] : 0) + sc_prog_pair_rise(pg, in));
        counter(w, "memory", d, pid, t1, sim->mem[g]);
    }
}

/* A copy to or from the host: a slice on the device's host track tid. */
static void host_copy(sc_jw *w, const sc_instr *in, int pid, int tid, double t0, double t1)
{
    char name[128];
    sc_instr_format(in, name, sizeof name);
    event(w, name, sc_op_name(in->op), "X", pid, tid, t0);
    sc_jw_num(w, "dur", t1 - t0);
    sc_jw_object(w, "args");
    sc_jw_int(w, "stage", in->stage);
    sc_jw_int(w, "mb", in->mb);
    sc_jw_num(w, "frac", (double)in->frac / SC_FRAC_ONE);
    sc_jw_end(w);
    sc_jw_end(w);
}

/* The arrow of a RECV (on track tid, t0..t1 in us) from its SEND (send:
 * the SENDs' indices), flow ids from *flow. The arrow leaves the SEND when
 * it is posted and enters the RECV no earlier, inside the RECV's slice (it
 * completes only after the SEND was posted). */
static void recv_arrow(sc_jw *w, const sc_prog *pg, const sc_sim *sim, const sc_instr *in,
                       const size_t *send, int pid, int tid, double t0, double t1, double us,
                       long *flow)
{
    size_t S = (size_t)sc_prog_stages(pg), m = (size_t)sc_prog_stream_microbatches(pg);
    size_t sk = send[((size_t)in->dir * S + (size_t)in->stage) * m + (size_t)in->mb];
    if (sk == NONE)
        return;
    int sd = in->peer; /* the sender's device */
    double ts = sim->t0[sim->offset[sd] + sk] * us, tf = (t0 + t1) / 2 > ts ? (t0 + t1) / 2 : ts;
    long id = ++*flow;
    const char *what = in->dir == SC_DIR_ACT ? "activation" : "gradient";
    flow_end(w, what, 0, id, pid, 2 * sd + 1, ts);
    flow_end(w, what, 1, id, pid, tid, tf);
}

/* Writes the events of one timing as process pid; flow ids from *flow. */
static void write_timing(sc_jw *w, const sc_prog *pg, const sc_timing *t, int pid,
                         const size_t *send, long *flow)
{
    const sc_sim *sim = t->sim;
    double us = t->us_per_unit > 0 ? t->us_per_unit : 1000;
    int P = sc_prog_devices(pg);
    char name[128];
    tracks(w, pg, t, pid, us);
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
                snprintf(name, sizeof name, "step %d validated", vstep);
                step_mark(w, name, "t", pid, 2 * d, t1, vstep);
                sc_jw_end(w);
                sc_jw_end(w);
                vstep++;
                continue;
            }
            if (sc_op_is_coll(in->op)) {
                /* From its start (posted, the channel free) to its completion. */
                double cs = t0 > cprev ? t0 : cprev;
                cprev = t1;
                coll_event(w, pg, in, pid, 3 * P + d, cs, t0, t1);
                continue;
            }
            if (sc_op_is_host(in->op) && sc_op_has(in->op, SC_OPF_OUT | SC_OPF_IN) && sim->host)
                host_copy(w, in, pid, 2 * P + d, t0, t1);
            /* Host memory grows when a copy to host starts and shrinks when
             * the backward reads the record back. */
            int to_host = sc_op_is_host(in->op) && sc_op_has(in->op, SC_OPF_OUT);
            if (sim->host && (to_host || sc_op_is_bgrad(in->op)))
                counter(w, "host", d, pid, to_host ? t0 : t1, sim->host[g]);
            sc_op_mem_effect e = sc_op_mem_of(in->op);
            if (sc_op_is_host(in->op) && e != SC_OPM_NONE && sim->mem) /* DROP, RELOAD */
                counter(w, "memory", d, pid, e == SC_OPM_ALLOC ? t0 : t1, sim->mem[g]);
            if (in->op == SC_OP_OPTIM && sc_prog_steps(pg) > 1) { /* a step boundary */
                snprintf(name, sizeof name, "end of step %d", step);
                step_mark(w, name, "t", pid, 2 * d, t1, step);
                sc_jw_end(w);
                sc_jw_end(w);
                step++;
            }
            if (sc_op_is_pair(in->op)) { /* one slot named by both halves */
                pair_event(w, pg, sim, in, pid, d, k, g, t0, t1);
                continue;
            }
            if (!sc_op_is_pass(in->op) && !sc_op_is_transfer(in->op))
                continue;
            sc_prog_instr_format(pg, in, name, sizeof name); /* with slices: "F s0 mb2.1" */
            int tid = 2 * d + !sc_op_is_pass(in->op);
            slice(w, name, sc_op_name(in->op), pid, tid, t0, t1, in->stage, in->mb);
            if (sc_op_is_pass(in->op) && sim->mem)
                counter(w, "memory", d, pid, sc_op_is_fwd(in->op) ? t0 : t1, sim->mem[g]);
            if (sc_op_is_recv(in->op))
                recv_arrow(w, pg, sim, in, send, pid, tid, t0, t1, us, flow);
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
    sc_out *o = malloc(sizeof *o);
    if (!o) {
        free(send);
        return SC_ERR_NOMEM;
    }
    sc_out_init(o, f);
    sc_jw w;
    sc_jw_init_out(&w, o);
    sc_jw_object(&w, NULL);
    sc_jw_str(&w, "displayTimeUnit", "ms");
    sc_jw_array(&w, "traceEvents"); /* an event a line */
    sc_jw_layout(&w, "\n  ", ",\n  ", "\n");
    for (int i = 0; i < n; i++)
        write_timing(&w, pg, &timings[i], i + 1, send, &flow);
    sc_jw_end(&w);
    sc_jw_end(&w);
    sc_out_putc(o, '\n');
    free(send);
    int bad = sc_out_flush(o);
    free(o);
    return bad ? SC_ERR_ARG : SC_OK;
}
