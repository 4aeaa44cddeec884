/*
 * render.c — instruction dump and ASCII timeline (render.h).
 */
#include "render.h"
#include "ir/recompute_cfg.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A growable string. */
typedef struct buf {
    char *s;
    size_t n, cap;
    int oom;
} buf;

/* One character, without formatting (a timeline is millions of them). */
static void bputc(buf *b, char c)
{
    if (b->oom)
        return;
    if (!b->s || b->n + 1 >= b->cap) {
        size_t cap = b->cap ? 2 * b->cap : 256;
        char *s = realloc(b->s, cap);
        if (!s) {
            b->oom = 1;
            return;
        }
        b->s = s;
        b->cap = cap;
    }
    b->s[b->n++] = c;
    b->s[b->n] = 0;
}

static void bprintf(buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void bprintf(buf *b, const char *fmt, ...)
{
    if (b->oom)
        return;
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        int k = vsnprintf(b->s ? b->s + b->n : NULL, b->s ? b->cap - b->n : 0, fmt, ap);
        va_end(ap);
        if (k < 0) {
            b->oom = 1;
            return;
        }
        if (b->s && b->n + (size_t)k < b->cap) {
            b->n += (size_t)k;
            return;
        }
        size_t cap = b->cap ? b->cap : 256;
        while (cap <= b->n + (size_t)k)
            cap *= 2;
        char *s = realloc(b->s, cap);
        if (!s) {
            b->oom = 1;
            return;
        }
        b->s = s;
        b->cap = cap;
    }
}

static char *finish(buf *b)
{
    if (b->oom || !b->s) {
        free(b->s);
        return NULL;
    }
    return b->s;
}

char *sc_render_dump(const sc_prog *pg)
{
    buf b = {0};
    int P = sc_prog_devices(pg);
    int steps = sc_prog_steps(pg), sync = sc_prog_optim_sync(pg);
    int K = sc_prog_slices(pg); /* slices.h: the records are (microbatch, slice) */
    bprintf(&b, "# stagecraft program: %d devices, %d stages, %d microbatches, ", P,
            sc_prog_stages(pg), sc_prog_microbatches(pg) / K);
    if (K > 1)
        bprintf(&b, "%d slices each (mbM.J: slice J of microbatch M), ", K);
    if (steps > 1 || sync != SC_SYNC_NONE)
        bprintf(&b, "%d step%s (optim_sync %s), ", steps, steps == 1 ? "" : "s",
                sc_sync_name(sync));
    bprintf(&b, "%zu instructions\n", sc_prog_total_instructions(pg));
    for (int d = 0; d < P; d++) {
        size_t n;
        const sc_instr *v = sc_prog_stream(pg, d, &n);
        if (!v)
            v = sc_prog_order(pg, d, &n);
        bprintf(&b, "device %d (stages", d);
        for (int c = 0; c < sc_prog_chunks(pg, d); c++)
            bprintf(&b, " %d", sc_prog_stage_of(pg, d, c));
        bprintf(&b, "):\n");
        int step = 0, vstep = 0;
        for (size_t k = 0; k < n; k++) {
            char t[128];
            sc_prog_instr_format(pg, &v[k], t, sizeof t);
            /* A group that follows another without a pass between. */
            int split = sc_starts_group(v, k) && k > 0 && sc_op_is_transfer(v[k - 1].op);
            bprintf(&b, "%6zu  %s%s", k, t, split ? "  (new group)" : "");
            if (v[k].op == SC_OP_OPTIM && steps > 1)
                bprintf(&b, "  (end of step %d)", step++);
            if (v[k].op == SC_OP_VALIDATE)
                bprintf(&b, "  (of step %d)", vstep++);
            int cond = sc_op_is_compute(v[k].op) || sc_op_is_coll(v[k].op);
            if (cond && (v[k].flags & SC_IF_ROLLBACK)) /* docs/steps.md#optimizer-synchronization */
                bprintf(&b, "  (rollback path)");
            else if (sc_op_is_fwd(v[k].op) && (v[k].flags & SC_IF_REDO_IN))
                bprintf(&b, "  (after a rollback: reads the redone input)");
            bprintf(&b, "\n");
        }
    }
    return finish(&b);
}

/* The colour (an SGR background code) and the letter of a pass kind in a
 * timeline: its look (ir.h); BW's, magenta and 'X', for a kind without. */
static int color_of(int op)
{
    int c = sc_op_look_of(op)->ansi;
    return c ? c : sc_op_look_of(SC_OP_BW)->ansi;
}

static char letter_of(int op)
{
    char c = sc_op_look_of(op)->letter;
    return c ? c : sc_op_look_of(SC_OP_BW)->letter;
}

/* What a timeline draws: passes and overlapped pairs. */
static int drawn(int op) { return sc_op_is_pass(op) || sc_op_is_pair(op); }

/* A column of pass k: its letter, or for a pair (one slot, both labels)
 * its F half's in the slot's first column ('f') and its backward half's
 * ('b' or 'x') in the others; in colour, each half's colour and
 * microbatch, underlined. */
static void pass_cell(buf *b, const sc_instr *in, int first, int color)
{
    if (!sc_op_is_pair(in->op)) {
        if (color)
            bprintf(b, "\033[30;%dm%d\033[0m", color_of(in->op), in->mb % 10);
        else
            bputc(b, letter_of(in->op));
        return;
    }
    sc_instr h = first ? (sc_instr){.op = SC_OP_F, .mb = in->mb} : sc_pair_half(in);
    if (color)
        bprintf(b, "\033[30;%dm\033[4m%d\033[0m", color_of(h.op), h.mb % 10);
    else
        bputc(b, h.op == SC_OP_F ? 'f' : h.op == SC_OP_B ? 'b' : 'x');
}

/* The row of a device's host copies under its timeline ("  h |>>..<|"):
 * whether an OFFLOAD (>) or a RELOAD (<) copy runs in each column (copies
 * are often shorter than a column: any overlap counts). Nothing (0) when
 * the device has none. */
static int host_row(buf *b, const sc_instr *v, size_t n, const sc_sim *sim, size_t base,
                    long cols, double from, double unit)
{
    size_t k[2] = {0, 0};
    unsigned way[2] = {SC_OPF_OUT, SC_OPF_IN}; /* OFFLOAD, RELOAD */
    int any = 0;
    for (size_t i = 0; i < n && !any; i++)
        any = sc_op_is_host(v[i].op);
    if (!any || !sim->host)
        return 0;
    bprintf(b, "  h |");
    for (long c = 0; c < cols; c++) {
        double a = from + c * unit, e = from + (c + 1) * unit;
        int on[2] = {0, 0};
        /* The copies of one channel follow each other in stream order. */
        for (int ch = 0; ch < 2; ch++) {
            while (k[ch] < n && (!sc_op_is_host(v[k[ch]].op) || !sc_op_has(v[k[ch]].op, way[ch]) ||
                                 sim->t1[base + k[ch]] <= a))
                k[ch]++;
            on[ch] = k[ch] < n && sim->t0[base + k[ch]] < e;
        }
        bputc(b, on[0] && on[1] ? '*' : on[0] ? '>' : on[1] ? '<' : '.');
    }
    return 1;
}

/* The row of a device's collective channel ("  c |..==^.|"): an all-reduce
 * (=) or a broadcast (^) runs in the column, from its start (posted, and
 * the channel free) to its completion. Nothing (0) without collectives. */
static int coll_row(buf *b, const sc_instr *v, size_t n, const sc_sim *sim, size_t base,
                    long cols, double from, double unit)
{
    if (!sim->coll_busy)
        return 0;
    bprintf(b, "  c |");
    size_t k = 0;
    double free_at = 0, cs = 0;
    while (k < n && !sc_op_is_coll(v[k].op))
        k++;
    if (k < n)
        cs = sim->t0[base + k];
    for (long c = 0; c < cols; c++) {
        double a = from + c * unit, e = from + (c + 1) * unit;
        /* Skip the collectives that ended before this column. */
        while (k < n && sim->t1[base + k] <= a) {
            free_at = sim->t1[base + k];
            for (k++; k < n && !sc_op_is_coll(v[k].op); k++)
                ;
            if (k < n)
                cs = sim->t0[base + k] > free_at ? sim->t0[base + k] : free_at;
        }
        int on = k < n && cs < e && sim->t1[base + k] > cs;
        bputc(b, on ? (sc_op_has(v[k].op, SC_OPF_REDUCES) ? '=' : '^') : '.');
    }
    return 1;
}

char *sc_render_timeline(const sc_prog *pg, const sc_sim *sim, int width, int color)
{
    return sc_render_timeline_window(pg, sim, width, color, 0, 0);
}

/* One cell of a compressed row, where a column may hold several passes:
 * the letter (or digit) when every pass in it is of one kind, '+' when
 * they are of several, '.' when there is none. Never a pass that is not
 * there. k: the first pass not yet ended before the column. */
static void mixed_cell(buf *b, const sc_instr *v, size_t n, const sc_sim *sim, size_t base,
                       size_t *k, double a, double e, int color)
{
    double eps = 1e-9 * (e - a);
    while (*k < n && (!drawn(v[*k].op) || sim->t1[base + *k] <= a + eps))
        (*k)++;
    int kind = -1, several = 0;
    size_t one = 0;
    for (size_t i = *k; i < n && sim->t0[base + i] < e - eps; i++) {
        if (!drawn(v[i].op) || sim->t1[base + i] <= a + eps)
            continue;
        if (kind < 0)
            kind = v[i].op, one = i;
        else if (v[i].op != kind)
            several = 1;
    }
    if (kind < 0)
        bputc(b, '.');
    else if (several)
        bputc(b, '+');
    else
        pass_cell(b, &v[one], 1, color);
}

/* The shortest drawn pass (INFINITY when none takes time). */
static double shortest_pass(const sc_prog *pg, const sc_sim *sim)
{
    double unit = INFINITY;
    for (int d = 0; d < sim->P; d++) {
        size_t n;
        const sc_instr *v = sc_prog_stream(pg, d, &n);
        for (size_t k = 0; k < n; k++) {
            size_t g = sim->offset[d] + k;
            double t = sim->t1[g] - sim->t0[g];
            if (drawn(v[k].op) && t > 0 && t < unit)
                unit = t;
        }
    }
    return unit;
}

/* Device d's row of cols cells from time `from`, unit a cell: the pass at
 * each cell's middle, or (compressed) what a cell holds. */
static void device_row(buf *b, const sc_instr *v, size_t n, const sc_sim *sim, int d, long cols,
                       double from, double unit, int compressed, int color)
{
    bprintf(b, "d%-3d|", d);
    size_t k = 0;
    for (long c = 0; c < cols; c++) {
        if (compressed) {
            mixed_cell(b, v, n, sim, sim->offset[d], &k, from + c * unit, from + (c + 1) * unit,
                       color);
            continue;
        }
        double mid = from + (c + 0.5) * unit;
        /* Passes are in time order on a device: advance to the one that
         * ends after mid. */
        while (k < n && (!drawn(v[k].op) || sim->t1[sim->offset[d] + k] <= mid))
            k++;
        if (k < n && sim->t0[sim->offset[d] + k] <= mid)
            pass_cell(b, &v[k], sim->t0[sim->offset[d] + k] > mid - unit, color);
        else
            bputc(b, '.');
    }
}

char *sc_render_timeline_window(const sc_prog *pg, const sc_sim *sim, int width, int color,
                                double from, double to)
{
    buf b = {0};
    int P = sim->P;
    if (width < 10)
        width = 10;
    if (width > SC_RENDER_MAX_WIDTH)
        width = SC_RENDER_MAX_WIDTH;
    if (!(from >= 0) || !isfinite(from))
        from = 0;
    if (!(to > from) || !isfinite(to))
        to = sim->makespan > from ? sim->makespan : from + 1;
    int window = from > 0 || to < sim->makespan;
    /* Shortest pass sets the unit, unless the window would not fit. */
    double unit = shortest_pass(pg, sim);
    if (!isfinite(unit) || to - from <= 0)
        unit = 1;
    /* In double first: a tiny pass makes the count overflow a long. */
    double ncols = ceil((to - from) / unit - 1e-9);
    long cols = width;
    int compressed = 0;
    if (ncols <= width) {
        cols = (long)ncols;
    } else {
        unit = (to - from) / width;
        compressed = 1; /* a column may hold several passes */
    }
    if (cols < 1)
        cols = 1;
    for (int d = 0; d < P; d++) {
        size_t n;
        const sc_instr *v = sc_prog_stream(pg, d, &n);
        device_row(&b, v, n, sim, d, cols, from, unit, compressed, color);
        bprintf(&b, "| busy %.4g  peak %.4g\n", sim->busy[d], sim->peak_mem[d]);
        if (host_row(&b, v, n, sim, sim->offset[d], cols, from, unit))
            bprintf(&b, "|  host %.4g\n", sim->host_peak ? sim->host_peak[d] : 0);
        if (coll_row(&b, v, n, sim, sim->offset[d], cols, from, unit))
            bprintf(&b, "|  collectives %.4g\n", sim->coll_busy[d]);
    }
    const char *u = sc_prog_seconds(pg) ? " s" : " time";
    bprintf(&b, "makespan %.6g%s  bubble %.2f%%  1 column = %.4g%s", sim->makespan,
            sc_prog_seconds(pg) ? " s" : "", 100.0 * sim->bubble_rate, unit, u);
    if (color)
        bprintf(&b, "  \033[30;%dmF\033[0m \033[30;%dmB\033[0m \033[30;%dmW\033[0m"
                    " \033[30;%dmBW\033[0m (digits: microbatch)",
                color_of(SC_OP_F), color_of(SC_OP_B), color_of(SC_OP_W), color_of(SC_OP_BW));
    else
        bprintf(&b, "  F forward, B input grad, W weight grad, X fused B+W, . idle");
    if (sc_vocab_split(sc_prog_vocab(pg)))
        bprintf(&b, "; S output layer, T its weight grad, E embedding, e its grad");
    if (sc_prog_recompute_info(pg) && sc_prog_recompute_info(pg)->records)
        bprintf(&b, "; R recompute");
    if (sc_prog_has_pairs(pg))
        bprintf(&b, "; an overlapped pair: f its F, then b its B or x its BW");
    if (compressed)
        bprintf(&b, ", + passes of several kinds (a wider --width or --from/--to shows each)");
    if (window)
        bprintf(&b, "; shown: time %.6g to %.6g", from, to);
    if (sim->host)
        bprintf(&b, "; host link: > to the host, < back, * both");
    if (sim->coll_busy)
        bprintf(&b, "; collectives: = all-reduce, ^ broadcast");
    bprintf(&b, "\n");
    return finish(&b);
}
