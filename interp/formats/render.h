/*
 * render.h — text views of a program: the instruction dump and the ASCII
 * timeline of a simulation.
 *
 * Both return a NUL-terminated string allocated with malloc (the caller
 * frees it), or NULL when out of memory.
 *
 * Timeline: one row per device; one column is `unit` time (the shortest
 * pass, widened so that the makespan fits in `width` columns). A column
 * shows the pass running at its middle: F, B, W, or X for BW, '.' when
 * idle. When the width forces a column wider than the shortest pass, a
 * column may hold several passes and shows their letter only when they
 * are all of one kind, '+' when they are of several: the view never shows
 * a run of passes the schedule does not have. With color, cells are painted
 * by kind (ANSI) and show the microbatch number modulo 10 instead of the
 * letter.
 *
 * Tested by: tests/unit/test_interp.c, tests/pictures.sh.
 */
#ifndef SC_RENDER_H
#define SC_RENDER_H

#include "ir/ir.h"
#include "sim/sim.h"

/* Widths are clamped to 10..SC_RENDER_MAX_WIDTH columns. */
#define SC_RENDER_MAX_WIDTH 10000

char *sc_render_dump(const sc_prog *pg);
char *sc_render_timeline(const sc_prog *pg, const sc_sim *sim, int width, int color);
/* The same, of the time window [from, to] (to <= from: to the makespan). */
char *sc_render_timeline_window(const sc_prog *pg, const sc_sim *sim, int width, int color,
                                double from, double to);

#endif
