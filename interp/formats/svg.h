/*
 * svg.h — a timeline as an SVG picture, drawn like the papers' figures.
 *
 * One band per device, top to bottom: a row of compute passes (F, B, W and
 * BW in their colours, a device's later chunks in darker shades, named in
 * the legend; the microbatch number in each cell wide enough for it), a
 * thin row of its transfers (on the link for tcomm before they complete, a
 * tick when tcomm is 0; a hairline while posted and waiting for the peer),
 * with offload a row of host copies, with collectives a row of the
 * collective channel, and the device's activation memory as a curve over
 * time, scaled to the largest peak. A time axis with grid lines and a
 * legend with makespan, bubble rate and peak memory come with it.
 *
 * Width: without one asked for, the shortest compute pass in the window
 * gets room for its microbatch number (at least 1000 pixels, at most
 * 20000), so p = 16, m = 64 is a readable picture, not a barcode. A window
 * [from, to] draws that part of the step only.
 *
 *     sc_svg_write(f, pg, sim, "zb-h1");
 *
 * The picture is plain SVG 1.1 (rects, lines, polylines, text); it renders
 * with rsvg-convert and in browsers. Returns SC_ERR_ARG when a program is
 * not lowered or on a write error.
 *
 * Tested by: tests/unit/test_interchange.c, tests/pictures.sh.
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

/* n programs, each with its title, stacked top to bottom on one time axis
 * (the window and the scale are the same for all: compare them by eye). */
sc_status sc_svg_write_stack(FILE *f, int n, const sc_prog *const *pgs, const sc_sim *const *sims,
                             const char *const *titles, const sc_svg_opts *opts);

#endif
