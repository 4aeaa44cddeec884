/*
 * svg.c — the timeline picture (svg.h).
 *
 * Scale: one time unit is `sx` pixels for every program drawn (a stack
 * shares one axis). Without a width asked for, sx gives the shortest
 * compute pass in the window room for its microbatch number, so that the
 * picture grows with the schedule instead of turning into a barcode.
 */
#include "svg.h"
#include "outbuf.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Geometry, in pixels. */
enum {
    LEFT = 56, RIGHT = 74, ROW_H = 22, XFER_H = 8, MEM_H = 26, GAP = 4, BAND_GAP = 10,
    HEAD_H = 74, TITLE_H = 24, AXIS_H = 34,
    MIN_PLOT = 1000, MAX_PLOT = 20000, /* the plot's width without an asked width */
    DIGIT_PX = 7                       /* a digit at font-size 11, with some air */
};
#define BAND_H (ROW_H + GAP + XFER_H + GAP + MEM_H + BAND_GAP)

/* The colour and the legend of a pass kind (its look, ir.h; a kind that is
 * no pass is never drawn: F's). */
static unsigned kind_style(int op, const char **name)
{
    const sc_op_look *l = sc_op_look_of(op);
    if (!l->legend)
        l = sc_op_look_of(SC_OP_F);
    *name = l->legend;
    return l->rgb;
}

static void xml_text(sc_out *f, const char *s)
{
    for (; *s; s++) {
        switch (*s) {
        case '&': sc_out_puts(f, "&amp;"); break;
        case '<': sc_out_puts(f, "&lt;"); break;
        case '>': sc_out_puts(f, "&gt;"); break;
        case '"': sc_out_puts(f, "&quot;"); break;
        default:
            if ((unsigned char)*s >= 0x20 && *s != 0x7f)
                sc_out_putc(f, *s);
        }
    }
}

/* Colour of a pass: by kind; a device's later chunks darker, from the full
 * colour (chunk 0) to 55% of it (chunk nch-1). */
static void colour(int op, int chunk, int nch, char out[8])
{
    const char *name;
    unsigned c = kind_style(op, &name);
    double k = nch > 1 ? 1.0 - 0.45 * chunk / (nch - 1) : 1.0;
    unsigned r = (unsigned)(((c >> 16) & 255) * k), g = (unsigned)(((c >> 8) & 255) * k),
             b = (unsigned)((c & 255) * k);
    snprintf(out, 8, "#%02x%02x%02x", r, g, b);
}

static double tick_step(double span, double px)
{
    /* About one tick per 80 pixels, on round numbers. */
    double raw = span / fmax(2, floor(px / 80)), p = pow(10, floor(log10(raw > 0 ? raw : 1)));
    return raw <= p ? p : raw <= 2 * p ? 2 * p : raw <= 5 * p ? 5 * p : 10 * p;
}

static int max_chunks(const sc_prog *pg)
{
    int c = 1;
    for (int d = 0; d < sc_prog_devices(pg); d++)
        c = sc_prog_chunks(pg, d) > c ? sc_prog_chunks(pg, d) : c;
    return c;
}

static int digits(int x)
{
    int n = 1;
    while (x >= 10)
        x /= 10, n++;
    return n;
}

/* What a stack shares: the window, the scale, the devices' band height. */
typedef struct frame {
    double from, to, sx;
    int plot, chunks;
    int kinds[SC_OP_COUNT], host, coll; /* kinds: the passes drawn */
} frame;

static double px(const frame *fr, double t) { return LEFT + (t - fr->from) * fr->sx; }

/* The part of [a, b] inside the window, in pixels; 0 when none. */
static int clip(const frame *fr, double a, double b, double *x0, double *w)
{
    if (b < fr->from || a > fr->to || (b == fr->from && a < b) || (a == fr->to && a < b))
        return 0;
    a = fmax(a, fr->from);
    b = fmin(b, fr->to);
    *x0 = px(fr, a);
    *w = (b - a) * fr->sx;
    return 1;
}

static int band_height(const frame *fr)
{
    return BAND_H + (fr->host ? XFER_H + GAP : 0) + (fr->coll ? XFER_H + GAP : 0);
}

static void legend(sc_out *f, const frame *fr, double tcomm_all)
{
    int x = LEFT, y = 30;
    for (int k = 0; k < SC_OP_COUNT; k++) {
        if (!fr->kinds[k])
            continue;
        const char *name;
        kind_style(k, &name);
        for (int c = 0; c < (sc_op_is_vocab(k) || sc_op_is_pair(k) ? 1 : fr->chunks); c++) {
            /* a shard, a pair's outline: no chunk */
            char col[8];
            colour(k, c, fr->chunks, col);
            sc_out_printf(f, "<rect x=\"%d\" y=\"%d\" width=\"10\" height=\"12\" fill=\"%s\"><title>"
                       "%s, chunk %d</title></rect>\n", x, y, col, name, c);
            x += 10;
        }
        sc_out_printf(f, "<text x=\"%d\" y=\"%d\" font-size=\"11\">%s</text>\n", x + 4, y + 10, name);
        x += 4 + 7 * (int)strlen(name) + 14;
    }
    if (fr->chunks > 1)
        sc_out_printf(f, "<text x=\"%d\" y=\"%d\" font-size=\"11\" fill=\"#555\">shades: chunk 0 to %d, "
                   "later chunks darker</text>\n", x, y + 10, fr->chunks - 1);
    /* Second line: transfers, memory, host link, collectives. */
    x = LEFT;
    y = 50;
    sc_out_printf(f, "<rect x=\"%d\" y=\"%d\" width=\"12\" height=\"6\" fill=\"#555\"/><text x=\"%d\" "
               "y=\"%d\" font-size=\"11\">transfer on the link%s</text>\n",
            x, y + 2, x + 16, y + 9, tcomm_all > 0 ? "" : " (tcomm = 0: a tick)");
    x += 16 + 7 * 20 + (tcomm_all > 0 ? 0 : 7 * 19) + 14;
    sc_out_printf(f, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"#aaa\" stroke-width=\"1\"/>"
               "<text x=\"%d\" y=\"%d\" font-size=\"11\">posted, waiting for the peer</text>\n",
            x, y + 5, x + 12, y + 5, x + 16, y + 9);
    x += 16 + 7 * 28 + 14;
    sc_out_printf(f, "<polyline points=\"%d,%d %d,%d %d,%d\" stroke=\"#c0392b\" fill=\"none\"/><text "
               "x=\"%d\" y=\"%d\" font-size=\"11\">activation memory</text>\n",
            x, y + 10, x + 6, y + 10, x + 12, y + 2, x + 16, y + 9);
    x += 16 + 7 * 17 + 14;
    if (fr->host) {
        sc_out_printf(f, "<rect x=\"%d\" y=\"%d\" width=\"12\" height=\"3\" fill=\"#16a085\"/><text "
                   "x=\"%d\" y=\"%d\" font-size=\"11\">offload</text><rect x=\"%d\" y=\"%d\" "
                   "width=\"12\" height=\"3\" fill=\"#e84393\"/><text x=\"%d\" y=\"%d\" "
                   "font-size=\"11\">reload</text>\n",
                x, y + 2, x + 16, y + 9, x + 76, y + 5, x + 92, y + 9);
        x += 150;
    }
    if (fr->coll)
        sc_out_printf(f, "<rect x=\"%d\" y=\"%d\" width=\"12\" height=\"6\" fill=\"#d35400\"/><text "
                   "x=\"%d\" y=\"%d\" font-size=\"11\">all-reduce</text><rect x=\"%d\" y=\"%d\" "
                   "width=\"12\" height=\"6\" fill=\"#2c3e50\"/><text x=\"%d\" y=\"%d\" "
                   "font-size=\"11\">broadcast</text>\n",
                x, y + 2, x + 16, y + 9, x + 96, y + 2, x + 112, y + 9);
}

/* A transfer as it is: on the link for tcomm before it completes (a tick
 * when tcomm is 0), and, before that, posted and waiting for its peer. */
static void transfer(sc_out *f, const frame *fr, const char *name, double t0, double t1,
                     double tcomm, int y, int send)
{
    double on = fmax(t0, t1 - tcomm), x0, w;
    const char *fill = send ? "#777" : "#444";
    if (on > t0 && clip(fr, t0, on, &x0, &w)) {
        sc_out_printf(f, "<line x1=\"%.2f\" y1=\"%d\" x2=\"%.2f\" y2=\"%d\" stroke=\"#aaa\" "
                   "stroke-width=\"1\"><title>", x0, y + XFER_H / 2, x0 + w, y + XFER_H / 2);
        xml_text(f, name);
        sc_out_printf(f, ": posted at %.6g, waits for its peer until %.6g</title></line>\n", t0, on);
    }
    if (!clip(fr, on, t1, &x0, &w))
        return;
    if (t1 - on <= 0)
        sc_out_printf(f, "<rect x=\"%.2f\" y=\"%d\" width=\"1\" height=\"%d\" fill=\"%s\"><title>",
                x0 - 0.5, y, XFER_H, fill);
    else
        sc_out_printf(f, "<rect x=\"%.2f\" y=\"%d\" width=\"%.2f\" height=\"%d\" fill=\"%s\" "
                   "fill-opacity=\"0.8\"><title>", x0, y, w > 1 ? w : 1, XFER_H, fill);
    xml_text(f, name); /* "-> d1" */
    sc_out_printf(f, ": on the link %.6g to %.6g</title></rect>\n", on, t1);
}

/* The bands of one program, from y; `which` names its groups in a stack
 * (id "d3" alone, "p1.d3" in a stack). */
/* Steps (docs/steps.md): a dark tick where each device ends a step (its
 * OPTIM), and a dashed line where the last device does, labelled with the
 * step's figures (in a stack, where titles sit above each program, the
 * figures are the line's tooltip). Only what falls in the window. */
static void step_marks(sc_out *f, const frame *fr, const sc_prog *pg, const sc_sim *sim,
                       const sc_instr *v, size_t n, int d, int y)
{
    if (sc_prog_steps(pg) < 2)
        return;
    for (size_t k = 0, step = 0; k < n; k++) {
        if (v[k].op != SC_OP_OPTIM)
            continue;
        double t = sim->t1[sim->offset[d] + k];
        step++;
        if (t < fr->from || t > fr->to)
            continue;
        sc_out_printf(f, "<line class=\"step\" x1=\"%.2f\" y1=\"%d\" x2=\"%.2f\" y2=\"%d\" "
                   "stroke=\"#222\" stroke-width=\"2\"><title>d%d: end of step %zu</title>"
                   "</line>\n", px(fr, t), y - 2, px(fr, t), y + ROW_H + 2, d, step - 1);
    }
}

static void step_lines(sc_out *f, const frame *fr, const sc_prog *pg, const sc_sim *sim, int y0,
                       int ya, int labels)
{
    if (sc_prog_steps(pg) < 2 || !sim->step_end)
        return;
    for (int k = 0; k < sim->steps; k++) {
        double t = sim->step_end[k], x = px(fr, t);
        if (t < fr->from || t > fr->to)
            continue;
        sc_out_printf(f, "<g class=\"step-end\"><line x1=\"%.2f\" y1=\"%d\" x2=\"%.2f\" y2=\"%d\" "
                   "stroke=\"#555\" stroke-dasharray=\"4,3\"><title>step %d (%.4g, bubble %.1f%%)"
                   "</title></line>", x, y0 - 6, x, ya, k, sim->step_makespan[k],
                100 * sim->step_bubble[k]);
        if (labels)
            sc_out_printf(f, "<text x=\"%.2f\" y=\"%d\" font-size=\"10\" text-anchor=\"end\" "
                       "fill=\"#555\">step %d (%.4g, bubble %.1f%%)</text>", x - 2, y0 - 8, k,
                    sim->step_makespan[k], 100 * sim->step_bubble[k]);
        sc_out_puts(f, "</g>\n");
    }
}

/* Device d's memory (its stream v[n]) as a step curve in the window at
 * baseline ym, scaled to the largest peak; its own peak beside it. */
static void memory_curve(sc_out *f, const frame *fr, const sc_prog *pg, const sc_sim *sim,
                         const sc_instr *v, size_t n, int d, int ym, double peak)
{
    sc_out_printf(f, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"#ccc\"/>\n<polyline "
               "fill=\"none\" stroke=\"#c0392b\" stroke-width=\"1.2\" points=\"",
            LEFT, ym, LEFT + fr->plot, ym);
    double prev = 0, scale = peak > 0 ? (MEM_H - 2) / peak : 0;
    int started = 0;
    for (size_t k = 0; k < n && sim->mem; k++) {
        sc_op_mem_effect e = sc_op_mem_of(v[k].op);
        if (!sc_op_is_pass(v[k].op) && !sc_op_is_pair(v[k].op) && e == SC_OPM_NONE)
            continue;
        size_t g = sim->offset[d] + k;
        if (sc_op_is_pair(v[k].op) && sim->t0[g] >= fr->from && sim->t0[g] <= fr->to) {
            /* A pair: its F half's record when it starts (the rest below). */
            double up = prev + sc_prog_pair_rise(pg, &v[k]);
            if (!started)
                sc_out_printf(f, "%d,%.2f", LEFT, ym - prev * scale);
            started = 1;
            sc_out_printf(f, " %.2f,%.2f %.2f,%.2f", px(fr, sim->t0[g]), ym - prev * scale,
                    px(fr, sim->t0[g]), ym - up * scale);
            prev = up;
        }
        /* Memory rises when F starts or RELOAD is posted, falls when a
         * pass or a DROP ends. */
        int rise = sc_op_is_fwd(v[k].op) || (sc_op_is_host(v[k].op) && e == SC_OPM_ALLOC);
        double t = rise ? sim->t0[g] : sim->t1[g];
        double m = sim->mem[g];
        if (t > fr->to)
            break;
        if (t >= fr->from) {
            if (!started)
                sc_out_printf(f, "%d,%.2f", LEFT, ym - prev * scale);
            started = 1;
            sc_out_printf(f, " %.2f,%.2f %.2f,%.2f", px(fr, t), ym - prev * scale, px(fr, t),
                    ym - m * scale);
        }
        prev = m;
    }
    if (!started)
        sc_out_printf(f, "%d,%.2f", LEFT, ym - prev * scale);
    sc_out_printf(f, " %d,%.2f\"/>\n<text x=\"%d\" y=\"%d\" font-size=\"10\" fill=\"#c0392b\">peak "
               "%.4g</text>\n", LEFT + fr->plot, ym - prev * scale, LEFT + fr->plot + 4,
            ym - MEM_H / 2, sim->peak_mem[d]);
}

/* An overlapped pair's slot at x0, width w, row y: F above, B or BW below,
 * outlined; both microbatches where they fit. */
static void pair_slot(sc_out *f, const frame *fr, const sc_prog *pg, const sc_instr *in,
                      const char *name, double t0, double t1, double x0, double w, int y)
{
    sc_instr h[2];
    sc_instr_halves(in, h);
    for (int i = 0; i < 2; i++) {
        char c[8];
        colour(h[i].op, sc_prog_chunk(pg, h[i].stage), fr->chunks, c);
        sc_out_printf(f, "<rect x=\"%.2f\" y=\"%.1f\" width=\"%.2f\" height=\"%.1f\" "
                   "fill=\"%s\"/>\n", x0, y + i * ROW_H / 2.0, w, ROW_H / 2.0, c);
    }
    sc_out_printf(f, "<rect x=\"%.2f\" y=\"%d\" width=\"%.2f\" height=\"%d\" fill=\"none\" "
               "stroke=\"#222\" stroke-width=\"1.2\"><title>%s (%.6g to %.6g)</title>"
               "</rect>\n", x0, y, w, ROW_H, name, t0, t1);
    if (w >= DIGIT_PX * (digits(h[0].mb) + digits(h[1].mb) + 1) + 4)
        sc_out_printf(f, "<text x=\"%.2f\" y=\"%d\" font-size=\"11\" text-anchor=\"middle\" "
                   "fill=\"white\">%d+%d</text>\n", x0 + w / 2, y + ROW_H / 2 + 4,
                h[0].mb, h[1].mb);
}

/* A pass's slot at x0, width w, row y, in its kind's and chunk's colour;
 * the microbatch where it fits. */
static void pass_slot(sc_out *f, const frame *fr, const sc_prog *pg, const sc_instr *in,
                      const char *name, double t0, double t1, double x0, double w, int y)
{
    char c[8];
    colour(in->op, sc_op_is_vocab(in->op) ? 0 : sc_prog_chunk(pg, in->stage), fr->chunks, c);
    sc_out_printf(f, "<rect x=\"%.2f\" y=\"%d\" width=\"%.2f\" height=\"%d\" fill=\"%s\" "
               "stroke=\"white\" stroke-width=\"0.5\"><title>%s (%.6g to %.6g)</title>"
               "</rect>\n", x0, y, w, ROW_H, c, name, t0, t1);
    /* The microbatch where it fits (with slices: "2.1", slices.h). */
    char lab[24];
    sc_prog_mb_format(pg, in->mb, lab, sizeof lab);
    if (w >= DIGIT_PX * (double)strlen(lab) + 4)
        sc_out_printf(f, "<text x=\"%.2f\" y=\"%d\" font-size=\"11\" text-anchor=\"middle\" "
                   "fill=\"white\">%s</text>\n", x0 + w / 2, y + ROW_H / 2 + 4, lab);
}

static void program(sc_out *f, const frame *fr, const sc_prog *pg, const sc_sim *sim, int y0,
                    int which)
{
    int P = sc_prog_devices(pg), band = band_height(fr);
    double peak = 0, tcomm = sc_prog_tcomm(pg);
    for (int d = 0; d < P; d++)
        peak = sim->peak_mem[d] > peak ? sim->peak_mem[d] : peak;
    for (int d = 0; d < P; d++) {
        size_t n;
        const sc_instr *v = sc_prog_stream(pg, d, &n);
        int y = y0 + d * band, yx = y + ROW_H + GAP, yh = yx + XFER_H + GAP;
        int yc = yh + (fr->host ? XFER_H + GAP : 0), ym = yc + (fr->coll ? XFER_H + GAP : 0) + MEM_H;
        double cfree = 0, x0, w; /* the collective channel is free from */
        if (which < 0)
            sc_out_printf(f, "<g id=\"d%d\">\n", d);
        else
            sc_out_printf(f, "<g id=\"p%d.d%d\">\n", which, d);
        sc_out_printf(f, "<text x=\"%d\" y=\"%d\" font-size=\"12\" text-anchor=\"end\">d%d</text>\n"
                   "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"#f4f4f4\"/>\n",
                LEFT - 8, y + ROW_H / 2 + 4, d, LEFT, y, fr->plot, ROW_H);
        for (size_t k = 0; k < n; k++) {
            const sc_instr *in = &v[k];
            size_t g = sim->offset[d] + k;
            double t0 = sim->t0[g], t1 = sim->t1[g];
            char name[128];
            sc_prog_instr_format(pg, in, name, sizeof name);
            if (sc_op_is_pair(in->op)) {
                if (clip(fr, t0, t1, &x0, &w))
                    pair_slot(f, fr, pg, in, name, t0, t1, x0, w, y);
            } else if (sc_op_is_pass(in->op)) {
                if (clip(fr, t0, t1, &x0, &w))
                    pass_slot(f, fr, pg, in, name, t0, t1, x0, w, y);
            } else if (sc_op_is_transfer(in->op)) {
                transfer(f, fr, name, t0, t1, tcomm, yx, sc_op_has(in->op, SC_OPF_OUT));
            } else if (sc_op_is_coll(in->op)) {
                /* From its start (posted, the channel free) to its completion. */
                double cs = t0 > cfree ? t0 : cfree;
                cfree = t1;
                if (clip(fr, cs, t1, &x0, &w))
                    sc_out_printf(f, "<rect x=\"%.2f\" y=\"%d\" width=\"%.2f\" height=\"%d\" fill=\"%s\" "
                               "fill-opacity=\"0.8\"><title>%s</title></rect>\n",
                            x0, yc, w > 0.5 ? w : 0.5, XFER_H,
                            sc_op_has(in->op, SC_OPF_REDUCES) ? "#d35400" : "#2c3e50", name);
            } else if (sc_op_is_host(in->op) && sc_op_has(in->op, SC_OPF_OUT | SC_OPF_IN) &&
                       clip(fr, t0, t1, &x0, &w)) { /* a copy on the host link */
                int out = sc_op_has(in->op, SC_OPF_OUT); /* the upper half; RELOAD the lower */
                sc_out_printf(f, "<rect x=\"%.2f\" y=\"%d\" width=\"%.2f\" height=\"%d\" fill=\"%s\" "
                           "fill-opacity=\"0.8\"><title>%s</title></rect>\n",
                        x0, out ? yh : yh + XFER_H / 2, w > 0.5 ? w : 0.5, XFER_H / 2,
                        out ? "#16a085" : "#e84393", name);
            }
        }
        step_marks(f, fr, pg, sim, v, n, d, y);
        memory_curve(f, fr, pg, sim, v, n, d, ym, peak);
        sc_out_puts(f, "</g>\n");
    }
    step_lines(f, fr, pg, sim, y0, y0 + P * band, which < 0);
}

sc_status sc_svg_write(FILE *f, const sc_prog *pg, const sc_sim *sim, const char *title)
{
    return sc_svg_write_opts(f, pg, sim, title, NULL);
}

sc_status sc_svg_write_opts(FILE *f, const sc_prog *pg, const sc_sim *sim, const char *title,
                            const sc_svg_opts *opts)
{
    return sc_svg_write_stack(f, 1, &pg, &sim, &title, opts);
}

/* The shortest compute pass in fr's window (into *shortest), the largest
 * microbatch drawn (*maxmb), and the kinds drawn (fr->kinds). */
static void scan_window(frame *fr, int n, const sc_prog *const *pgs, const sc_sim *const *sims,
                        double *shortest, int *maxmb)
{
    for (int i = 0; i < n; i++)
        for (int d = 0; d < sc_prog_devices(pgs[i]); d++) {
            size_t k, m;
            const sc_instr *v = sc_prog_stream(pgs[i], d, &m);
            for (k = 0; k < m; k++) {
                size_t g = sims[i]->offset[d] + k;
                double a = sims[i]->t0[g], b = sims[i]->t1[g];
                if ((!sc_op_is_pass(v[k].op) && !sc_op_is_pair(v[k].op)) || b <= fr->from ||
                    a >= fr->to)
                    continue;
                fr->kinds[v[k].op] = 1;
                if (sc_op_is_pair(v[k].op)) { /* its halves' colours */
                    fr->kinds[SC_OP_F] = 1;
                    fr->kinds[sc_pair_half(&v[k]).op] = 1;
                }
                if (b > a)
                    *shortest = fmin(*shortest, b - a);
                *maxmb = v[k].mb > *maxmb ? v[k].mb : *maxmb;
            }
        }
}

/* The document's start and its heading: the title (or how many schedules),
 * one schedule's figures, the window of time drawn. */
static void write_heading(sc_out *f, const frame *fr, int n, const sc_sim *const *sims,
                          const char *const *titles, double span, int width, int height)
{
    sc_out_printf(f, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
               "<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" width=\"%d\" "
               "height=\"%d\" viewBox=\"0 0 %d %d\" font-family=\"Helvetica, Arial, sans-serif\">\n",
            width, height, width, height);
    sc_out_printf(f, "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n<text x=\"%d\" y=\"18\" "
               "font-size=\"14\" font-weight=\"bold\">", LEFT);
    if (n == 1)
        xml_text(f, titles && titles[0] ? titles[0] : "schedule");
    else
        sc_out_printf(f, "%d schedules on one time axis", n);
    sc_out_printf(f, "</text>\n<text x=\"%d\" y=\"18\" font-size=\"12\" text-anchor=\"end\">",
            LEFT + fr->plot);
    if (n == 1) {
        double peak = 0;
        for (int d = 0; d < sims[0]->P; d++)
            peak = fmax(peak, sims[0]->peak_mem[d]);
        sc_out_printf(f, "makespan %.6g, bubble %.2f%%, peak memory %.4g units", sims[0]->makespan,
                100 * sims[0]->bubble_rate, peak);
    }
    if (fr->from > 0 || fr->to < span)
        sc_out_printf(f, "%stime %.6g to %.6g of %.6g", n == 1 ? "; " : "", fr->from, fr->to, span);
    sc_out_puts(f, "</text>\n");
}

/* sc_svg_write_stack into the buffered writer (outbuf.h). */
static sc_status write_stack(sc_out *f, int n, const sc_prog *const *pgs,
                             const sc_sim *const *sims, const char *const *titles,
                             const sc_svg_opts *opts)
{
    sc_svg_opts o = opts ? *opts : (sc_svg_opts){0};
    frame fr = {0};
    double span = 0, shortest = INFINITY, tcomm_all = 0;
    int maxmb = 0;
    if (n < 1)
        return SC_ERR_ARG;
    for (int i = 0; i < n; i++) {
        if (!pgs[i] || !sims[i] || !sc_prog_is_lowered(pgs[i]))
            return SC_ERR_ARG;
        span = fmax(span, sims[i]->makespan);
        fr.chunks = max_chunks(pgs[i]) > fr.chunks ? max_chunks(pgs[i]) : fr.chunks;
        fr.host |= sims[i]->host != NULL;
        fr.coll |= sims[i]->coll_busy != NULL;
        tcomm_all = fmax(tcomm_all, sc_prog_tcomm(pgs[i]));
    }
    fr.from = o.from > 0 ? o.from : 0;
    fr.to = o.to > fr.from ? o.to : fmax(span, fr.from + 1);
    scan_window(&fr, n, pgs, sims, &shortest, &maxmb);
    double window = fr.to - fr.from;
    if (o.width > 0) {
        fr.plot = o.width;
    } else {
        double need = isfinite(shortest) ? (DIGIT_PX * digits(maxmb) + 6) / shortest : 0;
        double w = fmax(MIN_PLOT, ceil(need * window));
        fr.plot = (int)fmin(w, MAX_PLOT);
    }
    fr.sx = fr.plot / window;
    int band = band_height(&fr), height = HEAD_H, width = LEFT + fr.plot + RIGHT;
    for (int i = 0; i < n; i++)
        height += (n > 1 ? TITLE_H : 0) + sc_prog_devices(pgs[i]) * band;
    height += AXIS_H;
    write_heading(f, &fr, n, sims, titles, span, width, height);
    legend(f, &fr, tcomm_all);
    /* Grid lines at the ticks, under everything, across all programs. */
    double step = tick_step(window, fr.plot), t = ceil(fr.from / step - 1e-9) * step;
    for (; t <= fr.to + 1e-9 * window; t += step)
        sc_out_printf(f, "<line x1=\"%.2f\" y1=\"%d\" x2=\"%.2f\" y2=\"%d\" stroke=\"#e4e4e4\"/>\n",
                px(&fr, t), HEAD_H - 6, px(&fr, t), height - AXIS_H);
    int y = HEAD_H;
    for (int i = 0; i < n; i++) {
        if (n > 1) {
            double peak = 0;
            for (int d = 0; d < sims[i]->P; d++)
                peak = fmax(peak, sims[i]->peak_mem[d]);
            sc_out_printf(f, "<text x=\"%d\" y=\"%d\" font-size=\"13\" font-weight=\"bold\">", LEFT,
                    y + 15);
            xml_text(f, titles && titles[i] ? titles[i] : "schedule");
            sc_out_printf(f, "</text><text x=\"%d\" y=\"%d\" font-size=\"12\" text-anchor=\"end\">"
                       "makespan %.6g, bubble %.2f%%, peak memory %.4g units</text>\n",
                    LEFT + fr.plot, y + 15, sims[i]->makespan, 100 * sims[i]->bubble_rate, peak);
            y += TITLE_H;
        }
        program(f, &fr, pgs[i], sims[i], y, n > 1 ? i : -1);
        y += sc_prog_devices(pgs[i]) * band;
    }
    sc_out_printf(f, "<g font-size=\"10\" fill=\"#333\"><line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" "
               "stroke=\"#333\"/>\n", LEFT, y, LEFT + fr.plot, y);
    for (t = ceil(fr.from / step - 1e-9) * step; t <= fr.to + 1e-9 * window; t += step)
        sc_out_printf(f, "<line x1=\"%.2f\" y1=\"%d\" x2=\"%.2f\" y2=\"%d\" stroke=\"#333\"/><text "
                   "x=\"%.2f\" y=\"%d\" text-anchor=\"middle\">%.6g</text>\n",
                px(&fr, t), y, px(&fr, t), y + 4, px(&fr, t), y + 15, fabs(t) < 1e-12 ? 0 : t);
    /* The unit right of the axis, clear of the last tick's centred label. */
    sc_out_printf(f, "<text x=\"%d\" y=\"%d\">%s</text></g>\n</svg>\n", LEFT + fr.plot + 22, y + 15,
            sc_prog_seconds(pgs[0]) ? "time (s)" : "time");
    return SC_OK;
}

sc_status sc_svg_write_stack(FILE *f, int n, const sc_prog *const *pgs, const sc_sim *const *sims,
                             const char *const *titles, const sc_svg_opts *opts)
{
    sc_out *o = malloc(sizeof *o);
    if (!o)
        return SC_ERR_NOMEM;
    sc_out_init(o, f);
    sc_status st = write_stack(o, n, pgs, sims, titles, opts);
    if (sc_out_flush(o) != 0 && st == SC_OK)
        st = SC_ERR_ARG;
    free(o);
    return st;
}
