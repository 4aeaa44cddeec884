/*
 * svg.c — the timeline picture (svg.h).
 */
#include "svg.h"

#include <math.h>
#include <string.h>

/* Geometry, in pixels. */
enum {
    LEFT = 56, RIGHT = 70, TOP = 58, PLOT_W = 1000,
    ROW_H = 22, XFER_H = 8, MEM_H = 26, GAP = 4, BAND_GAP = 10
};
#define BAND_H (ROW_H + GAP + XFER_H + GAP + MEM_H + BAND_GAP)

static void xml_text(FILE *f, const char *s)
{
    for (; *s; s++) {
        switch (*s) {
        case '&': fputs("&amp;", f); break;
        case '<': fputs("&lt;", f); break;
        case '>': fputs("&gt;", f); break;
        case '"': fputs("&quot;", f); break;
        default:
            if ((unsigned char)*s >= 0x20)
                fputc(*s, f);
        }
    }
}

/* Colour of a pass: by kind, darker for later chunks of a device. */
static void colour(int op, int chunk, char out[8])
{
    static const unsigned rgb[] = {0x4a90d9, 0xf5a623, 0x6bbf3b, 0xa561c9}; /* F B W BW */
    unsigned c = rgb[op <= SC_OP_BW ? op : 0];
    double k = 1.0 - 0.28 * (chunk > 2 ? 2 : chunk);
    unsigned r = (unsigned)(((c >> 16) & 255) * k), g = (unsigned)(((c >> 8) & 255) * k),
             b = (unsigned)((c & 255) * k);
    snprintf(out, 8, "#%02x%02x%02x", r, g, b);
}

static double tick_step(double span)
{
    double raw = span / 10, p = pow(10, floor(log10(raw > 0 ? raw : 1)));
    return raw <= p ? p : raw <= 2 * p ? 2 * p : raw <= 5 * p ? 5 * p : 10 * p;
}

/* Steps (SPEC.md §21): a dark tick where each device ends a step (its
 * OPTIM), and a dashed line with a label where the last device does. */
static void step_marks(FILE *f, const sc_prog *pg, const sc_sim *sim, const sc_instr *v,
                       size_t n, int d, int y, double sx)
{
    if (sc_prog_steps(pg) < 2)
        return;
    for (size_t k = 0, step = 0; k < n; k++) {
        if (v[k].op != SC_OP_OPTIM)
            continue;
        double x = LEFT + sim->t1[sim->offset[d] + k] * sx;
        fprintf(f, "<line class=\"step\" x1=\"%.2f\" y1=\"%d\" x2=\"%.2f\" y2=\"%d\" "
                   "stroke=\"#222\" stroke-width=\"2\"><title>d%d: end of step %zu</title>"
                   "</line>\n", x, y - 2, x, y + ROW_H + 2, d, step++);
    }
}

static void step_lines(FILE *f, const sc_prog *pg, const sc_sim *sim, int ya, double sx)
{
    if (sc_prog_steps(pg) < 2 || !sim->step_end)
        return;
    for (int k = 0; k < sim->steps; k++) {
        double x = LEFT + sim->step_end[k] * sx;
        fprintf(f, "<g class=\"step-end\"><line x1=\"%.2f\" y1=\"%d\" x2=\"%.2f\" y2=\"%d\" "
                   "stroke=\"#555\" stroke-dasharray=\"4,3\"/><text x=\"%.2f\" y=\"%d\" "
                   "font-size=\"10\" text-anchor=\"end\" fill=\"#555\">step %d (%.4g, bubble "
                   "%.1f%%)</text></g>\n", x, TOP - 6, x, ya, x - 2, TOP - 8, k,
                sim->step_makespan[k], 100 * sim->step_bubble[k]);
    }
}

sc_status sc_svg_write(FILE *f, const sc_prog *pg, const sc_sim *sim, const char *title)
{
    return sc_svg_write_opts(f, pg, sim, title, NULL);
}

sc_status sc_svg_write_opts(FILE *f, const sc_prog *pg, const sc_sim *sim, const char *title,
                            const sc_svg_opts *opts)
{
    if (!sc_prog_is_lowered(pg) || !sim)
        return SC_ERR_ARG;
    (void)opts;
    int P = sc_prog_devices(pg);
    double span = sim->makespan > 0 ? sim->makespan : 1, sx = PLOT_W / span, peak = 0;
    for (int d = 0; d < P; d++)
        peak = sim->peak_mem[d] > peak ? sim->peak_mem[d] : peak;
    /* With offload, each band has a row of host copies under its transfers;
     * with collectives, a row of the device's collective channel. */
    int host = sim->host != NULL, coll = sim->coll_busy != NULL;
    int band = BAND_H + (host ? XFER_H + GAP : 0) + (coll ? XFER_H + GAP : 0);
    int width = LEFT + PLOT_W + RIGHT, height = TOP + P * band + 30;
    fprintf(f, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
               "<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" width=\"%d\" "
               "height=\"%d\" viewBox=\"0 0 %d %d\" font-family=\"Helvetica, Arial, sans-serif\">\n",
            width, height, width, height);
    fprintf(f, "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n<text x=\"%d\" y=\"18\" "
               "font-size=\"14\" font-weight=\"bold\">", LEFT);
    xml_text(f, title ? title : "schedule");
    fprintf(f, "</text>\n<text x=\"%d\" y=\"18\" font-size=\"12\" text-anchor=\"end\">makespan "
               "%.6g, bubble %.2f%%, peak memory %.4g units</text>\n",
            LEFT + PLOT_W, sim->makespan, 100 * sim->bubble_rate, peak);
    static const char *const legend[] = {"F forward", "B input grad", "W weight grad", "BW B+W"};
    for (int i = 0; i < 4; i++) {
        char c[8];
        colour(i, 0, c);
        fprintf(f, "<rect x=\"%d\" y=\"28\" width=\"12\" height=\"12\" fill=\"%s\"/><text x=\"%d\" "
                   "y=\"38\" font-size=\"11\">%s</text>\n", LEFT + i * 110, c, LEFT + i * 110 + 16,
                legend[i]);
    }
    fprintf(f, "<rect x=\"%d\" y=\"32\" width=\"12\" height=\"5\" fill=\"#777\"/><text x=\"%d\" "
               "y=\"38\" font-size=\"11\">transfer</text><polyline points=\"%d,38 %d,30\" "
               "stroke=\"#c0392b\" fill=\"none\"/><text x=\"%d\" y=\"38\" font-size=\"11\">memory"
               "</text>\n", LEFT + 440, LEFT + 456, LEFT + 530, LEFT + 542, LEFT + 546);
    if (host)
        fprintf(f, "<rect x=\"%d\" y=\"32\" width=\"12\" height=\"5\" fill=\"#16a085\"/><text "
                   "x=\"%d\" y=\"38\" font-size=\"11\">offload</text><rect x=\"%d\" y=\"32\" "
                   "width=\"12\" height=\"5\" fill=\"#8e44ad\"/><text x=\"%d\" y=\"38\" "
                   "font-size=\"11\">reload</text>\n",
                LEFT + 600, LEFT + 616, LEFT + 670, LEFT + 686);
    if (coll)
        fprintf(f, "<rect x=\"%d\" y=\"32\" width=\"12\" height=\"5\" fill=\"#d35400\"/><text "
                   "x=\"%d\" y=\"38\" font-size=\"11\">all-reduce</text><rect x=\"%d\" y=\"32\" "
                   "width=\"12\" height=\"5\" fill=\"#2c3e50\"/><text x=\"%d\" y=\"38\" "
                   "font-size=\"11\">broadcast</text>\n",
                LEFT + 740, LEFT + 756, LEFT + 830, LEFT + 846);
    for (int d = 0; d < P; d++) {
        size_t n;
        const sc_instr *v = sc_prog_stream(pg, d, &n);
        int y = TOP + d * band, yx = y + ROW_H + GAP, yh = yx + XFER_H + GAP;
        int yc = yh + (host ? XFER_H + GAP : 0);
        int ym = yx + XFER_H + GAP + MEM_H + (host ? XFER_H + GAP : 0) + (coll ? XFER_H + GAP : 0);
        double cfree = 0; /* the collective channel is free from */
        fprintf(f, "<g id=\"d%d\">\n<text x=\"%d\" y=\"%d\" font-size=\"12\" text-anchor=\"end\">"
                   "d%d</text>\n<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"#f4f4f4\"/>\n",
                d, LEFT - 8, y + ROW_H / 2 + 4, d, LEFT, y, PLOT_W, ROW_H);
        for (size_t k = 0; k < n; k++) {
            const sc_instr *in = &v[k];
            size_t g = sim->offset[d] + k;
            double x0 = LEFT + sim->t0[g] * sx, w = (sim->t1[g] - sim->t0[g]) * sx;
            char name[96];
            sc_instr_format(in, name, sizeof name);
            if (sc_op_is_compute(in->op)) {
                char c[8];
                colour(in->op, sc_prog_chunk(pg, in->stage), c);
                fprintf(f, "<rect x=\"%.2f\" y=\"%d\" width=\"%.2f\" height=\"%d\" fill=\"%s\" "
                           "stroke=\"white\" stroke-width=\"0.5\"><title>%s</title></rect>\n",
                        x0, y, w, ROW_H, c, name); /* compute names need no escaping */
                if (w >= 9)
                    fprintf(f, "<text x=\"%.2f\" y=\"%d\" font-size=\"%d\" text-anchor=\"middle\" "
                               "fill=\"white\">%d</text>\n", x0 + w / 2, y + ROW_H / 2 + 4,
                            w >= 16 ? 11 : 8, in->mb);
            } else if (sc_op_is_transfer(in->op)) {
                fprintf(f, "<rect x=\"%.2f\" y=\"%d\" width=\"%.2f\" height=\"%d\" fill=\"%s\" "
                           "fill-opacity=\"0.6\"><title>",
                        x0, yx, w > 0.5 ? w : 0.5, XFER_H, in->op == SC_OP_SEND ? "#777" : "#444");
                xml_text(f, name); /* "-> d1" */
                fputs("</title></rect>\n", f);
            } else if (sc_op_is_coll(in->op)) {
                /* From its start (posted, the channel free) to its completion. */
                double cs = sim->t0[g] > cfree ? sim->t0[g] : cfree;
                cfree = sim->t1[g];
                char cn[128];
                sc_prog_instr_format(pg, in, cn, sizeof cn);
                fprintf(f, "<rect x=\"%.2f\" y=\"%d\" width=\"%.2f\" height=\"%d\" fill=\"%s\" "
                           "fill-opacity=\"0.8\"><title>%s</title></rect>\n",
                        LEFT + cs * sx, yc, (sim->t1[g] - cs) * sx > 0.5 ? (sim->t1[g] - cs) * sx : 0.5,
                        XFER_H, in->op == SC_OP_ALLREDUCE ? "#d35400" : "#2c3e50", cn);
            } else if (in->op == SC_OP_OFFLOAD || in->op == SC_OP_RELOAD) {
                fprintf(f, "<rect x=\"%.2f\" y=\"%d\" width=\"%.2f\" height=\"%d\" fill=\"%s\" "
                           "fill-opacity=\"0.8\"><title>%s</title></rect>\n",
                        x0, yh, w > 0.5 ? w : 0.5, XFER_H,
                        in->op == SC_OP_OFFLOAD ? "#16a085" : "#8e44ad", name);
            }
        }
        step_marks(f, pg, sim, v, n, d, y, sx);
        /* Memory: a step curve, scaled to the largest peak. */
        fprintf(f, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"#ccc\"/>\n<polyline "
                   "fill=\"none\" stroke=\"#c0392b\" stroke-width=\"1.2\" points=\"%d,%d",
                LEFT, ym, LEFT + PLOT_W, ym, LEFT, ym);
        double prev = 0;
        for (size_t k = 0; k < n && sim->mem; k++) {
            if (!sc_op_is_compute(v[k].op) && v[k].op != SC_OP_DROP && v[k].op != SC_OP_RELOAD)
                continue;
            size_t g = sim->offset[d] + k;
            /* Memory rises when F starts or RELOAD is posted, falls when a
             * pass or a DROP ends. */
            double t = v[k].op == SC_OP_F || v[k].op == SC_OP_RELOAD ? sim->t0[g] : sim->t1[g];
            double x = LEFT + t * sx, m = sim->mem[g];
            double y0 = ym - (peak > 0 ? prev / peak : 0) * (MEM_H - 2);
            double y1 = ym - (peak > 0 ? m / peak : 0) * (MEM_H - 2);
            fprintf(f, " %.2f,%.2f %.2f,%.2f", x, y0, x, y1);
            prev = m;
        }
        fprintf(f, " %d,%.2f\"/>\n<text x=\"%d\" y=\"%d\" font-size=\"10\" fill=\"#c0392b\">peak "
                   "%.4g</text>\n</g>\n", LEFT + PLOT_W, ym - (peak > 0 ? prev / peak : 0) * (MEM_H - 2),
                LEFT + PLOT_W + 4, ym - MEM_H / 2, sim->peak_mem[d]);
    }
    int ya = TOP + P * band;
    step_lines(f, pg, sim, ya, sx);
    double step = tick_step(span);
    fprintf(f, "<g font-size=\"10\" fill=\"#333\"><line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" "
               "stroke=\"#333\"/>\n", LEFT, ya, LEFT + PLOT_W, ya);
    for (double t = 0; t <= span + 1e-9 * span; t += step)
        fprintf(f, "<line x1=\"%.2f\" y1=\"%d\" x2=\"%.2f\" y2=\"%d\" stroke=\"#333\"/><text "
                   "x=\"%.2f\" y=\"%d\" text-anchor=\"middle\">%.6g</text>\n",
                LEFT + t * sx, ya, LEFT + t * sx, ya + 4, LEFT + t * sx, ya + 15, t);
    fprintf(f, "<text x=\"%d\" y=\"%d\">time</text></g>\n</svg>\n", LEFT + PLOT_W + 6, ya + 15);
    return fflush(f) != 0 || ferror(f) ? SC_ERR_ARG : SC_OK;
}
