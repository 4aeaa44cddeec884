/*
 * plan_svg.c — the plan's front as a picture (plan.h): peak memory across,
 * makespan up; plain SVG 1.1 like formats/svg.c's timelines (rects, lines,
 * circles, polylines, text), so it renders with rsvg-convert and browsers.
 */
#include "plan/plan.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

enum { W = 760, H = 460, LEFT = 80, RIGHT = 30, TOP = 50, BOTTOM = 60 };

static void text(FILE *f, const char *s)
{
    for (; *s; s++)
        switch (*s) {
        case '<': fputs("&lt;", f); break;
        case '>': fputs("&gt;", f); break;
        case '&': fputs("&amp;", f); break;
        case '"': fputs("&quot;", f); break;
        default:
            if ((unsigned char)*s >= 0x20)
                fputc(*s, f);
        }
}

/* A round step that cuts span into about n parts. */
static double nice(double span, int n)
{
    double raw = span / n, p = pow(10, floor(log10(raw))), m = raw / p;
    return p * (m < 1.5 ? 1 : m < 3.5 ? 2 : m < 7.5 ? 5 : 10);
}

typedef struct frame { double x0, x1, y0, y1; } frame;
static double X(const frame *fr, double x) { return LEFT + (x - fr->x0) / (fr->x1 - fr->x0) * (W - LEFT - RIGHT); }
static double Y(const frame *fr, double y) { return H - BOTTOM - (y - fr->y0) / (fr->y1 - fr->y0) * (H - TOP - BOTTOM); }

int sc_plan_svg(FILE *f, const sc_plan *pl, const char *title, const char *mem_unit)
{
    int n = sc_plan_count(pl), nf = 0, front[4096];
    /* Bytes are written in GiB: 3.9155e+10 on an axis reads as noise. */
    int gib = strcmp(mem_unit, "bytes") == 0;
    double div = gib ? 1073741824.0 : 1;
    const char *unit = gib ? "GiB" : mem_unit, *sp = gib ? " GiB" : "";
    frame fr = {INFINITY, 0, INFINITY, -INFINITY};
    for (int i = 0; i < n; i++) {
        const sc_plan_cand *c = sc_plan_cand_at(pl, i);
        if (c->error[0])
            continue;
        fr.x0 = fmin(fr.x0, c->peak);
        fr.x1 = fmax(fr.x1, c->peak);
        fr.y0 = fmin(fr.y0, c->makespan);
        fr.y1 = fmax(fr.y1, c->makespan);
    }
    /* Across: from a little below the smallest peak (0 when that is near)
     * to a little past the largest peak or the cap. */
    fr.x1 = fmax(fr.x1, sc_plan_cap(pl));
    if (!isfinite(fr.x0) || fr.x0 < 0.3 * fr.x1)
        fr.x0 = 0;
    double span = fr.x1 - fr.x0;
    fr.x0 = fr.x0 > 0 ? fmax(0, fr.x0 - 0.1 * fmax(span, 1)) : 0;
    fr.x1 += 0.08 * fmax(span, 1);
    if (!isfinite(fr.y0))
        fr.y0 = 0, fr.y1 = 1;
    double pad = fmax((fr.y1 - fr.y0) * 0.08, fr.y1 * 0.01 + 1e-12);
    fr.y0 -= pad, fr.y1 += pad;
    fprintf(f, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
               "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
               "font-family=\"sans-serif\" font-size=\"12\">\n"
               "<rect width=\"%d\" height=\"%d\" fill=\"white\"/>\n", W, H, W, H);
    fputs("<text x=\"20\" y=\"24\" font-size=\"15\">", f);
    text(f, title);
    fputs("</text>\n", f);
    /* Axes, ticks and grid. */
    double sx = nice((fr.x1 - fr.x0) / div, 8) * div, sy = nice(fr.y1 - fr.y0, 6);
    for (double x = ceil(fr.x0 / sx) * sx; x <= fr.x1 + 1e-9; x += sx)
        fprintf(f, "<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\" stroke=\"#eee\"/>"
                   "<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">%g</text>\n",
                X(&fr, x), TOP, X(&fr, x), H - BOTTOM, X(&fr, x), H - BOTTOM + 16, x / div);
    for (double y = ceil(fr.y0 / sy) * sy; y <= fr.y1 + 1e-9; y += sy)
        fprintf(f, "<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" stroke=\"#eee\"/>"
                   "<text x=\"%d\" y=\"%.1f\" text-anchor=\"end\">%g</text>\n",
                LEFT, Y(&fr, y), W - RIGHT, Y(&fr, y), LEFT - 6, Y(&fr, y) + 4, y);
    fprintf(f, "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"none\" stroke=\"#444\"/>\n",
            LEFT, TOP, W - LEFT - RIGHT, H - TOP - BOTTOM);
    fprintf(f, "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\">peak memory per device (%s)</text>\n",
            (LEFT + W - RIGHT) / 2, H - 18, unit);
    fprintf(f, "<text transform=\"translate(18 %d) rotate(-90)\" text-anchor=\"middle\">makespan"
               "</text>\n", (TOP + H - BOTTOM) / 2);
    if (sc_plan_cap(pl) > 0) {
        double cx = X(&fr, sc_plan_cap(pl));
        fprintf(f, "<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\" stroke=\"#c00\" "
                   "stroke-dasharray=\"6 4\"/><text x=\"%.1f\" y=\"%d\" fill=\"#c00\" "
                   "text-anchor=\"end\">cap %.4g%s</text>\n",
                cx, TOP, cx, H - BOTTOM, cx - 4, TOP + 14, sc_plan_cap(pl) / div, sp);
    }
    /* Every candidate, then the front as a staircase (a point holds until a
     * larger one is faster). */
    for (int i = 0; i < n; i++) {
        const sc_plan_cand *c = sc_plan_cand_at(pl, i);
        if (!c->error[0] && !c->front)
            fprintf(f, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"3\" fill=\"#bbb\"/>\n",
                    X(&fr, c->peak), Y(&fr, c->makespan));
    }
    if (n <= 4096)
        nf = sc_plan_front(pl, front);
    fputs("<polyline fill=\"none\" stroke=\"#1f5fbf\" stroke-width=\"1.5\" points=\"", f);
    for (int j = 0; j < nf; j++) {
        const sc_plan_cand *c = sc_plan_cand_at(pl, front[j]);
        if (j)
            fprintf(f, "%.1f,%.1f ", X(&fr, c->peak),
                    Y(&fr, sc_plan_cand_at(pl, front[j - 1])->makespan));
        fprintf(f, "%.1f,%.1f ", X(&fr, c->peak), Y(&fr, c->makespan));
    }
    fputs("\"/>\n", f);
    char name[200];
    double ly = -100, lx = -1000; /* the last label's place */
    for (int j = 0; j < nf; j++) {
        const sc_plan_cand *c = sc_plan_cand_at(pl, front[j]);
        sc_plan_name(c, name, sizeof name);
        int right = X(&fr, c->peak) > 0.7 * W; /* labels stay inside */
        double y = Y(&fr, c->makespan) - 6;
        if (fabs(y - ly) < 13 && fabs(X(&fr, c->peak) - lx) < 250)
            y = ly + 14; /* two points close by: the second label under the first */
        ly = y, lx = X(&fr, c->peak);
        fprintf(f, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"4\" fill=\"#1f5fbf\"/>"
                   "<text x=\"%.1f\" y=\"%.1f\" font-size=\"11\"%s>",
                X(&fr, c->peak), Y(&fr, c->makespan), X(&fr, c->peak) + (right ? -10 : 6),
                y, right ? " text-anchor=\"end\"" : "");
        text(f, name);
        fputs("</text>\n", f);
    }
    int pk = sc_plan_pick(pl);
    if (pk >= 0) {
        const sc_plan_cand *c = sc_plan_cand_at(pl, pk);
        sc_plan_name(c, name, sizeof name);
        fprintf(f, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"8\" fill=\"none\" stroke=\"#c00\" "
                   "stroke-width=\"2\"/>\n", X(&fr, c->peak), Y(&fr, c->makespan));
        fputs("<text x=\"20\" y=\"40\" fill=\"#c00\">pick: ", f);
        text(f, name);
        fprintf(f, ", makespan %g, peak %.4g%s</text>\n", c->makespan, c->peak / div, sp);
    }
    fputs("</svg>\n", f);
    return ferror(f) ? -1 : 0;
}
