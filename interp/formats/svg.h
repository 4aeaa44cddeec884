/*
 * svg.h — a timeline as an SVG picture, drawn like the papers' figures.
 *
 * One band per device, top to bottom: a row of compute passes (F, B, W and
 * BW in their colours, later chunks of a device in a darker shade, the
 * microbatch number in each cell), a thin row of its transfers (sends and
 * receives, from posting to completion), and the device's activation
 * memory as a curve over time, scaled to the largest peak. A time axis and
 * a legend with makespan, bubble rate and peak memory come with it.
 *
 *     sc_svg_write(f, pg, sim, "zb-h1");
 *
 * The picture is plain SVG 1.1 (rects, polylines, text); it renders with
 * rsvg-convert and in browsers. Returns SC_ERR_ARG when the program is not
 * lowered or on a write error.
 */
#ifndef SC_SVG_H
#define SC_SVG_H

#include <stdio.h>

#include "ir/ir.h"
#include "sim/sim.h"

sc_status sc_svg_write(FILE *f, const sc_prog *pg, const sc_sim *sim, const char *title);

/* Options of the picture (zero: the defaults). */
typedef struct sc_svg_opts {
    int width;        /* width of the plot in pixels; 0: from the content */
    double from, to;  /* the time window drawn; to <= from: the whole step */
} sc_svg_opts;

sc_status sc_svg_write_opts(FILE *f, const sc_prog *pg, const sc_sim *sim, const char *title,
                            const sc_svg_opts *opts);

#endif
