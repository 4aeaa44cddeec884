/*
 * memcap.h — a program's memory model (docs/guide.md#memory-model): the
 * units of each stage's record, w_keep, and the memory limit (memcap.c):
 * one cap for every device or one per device, and the bytes of a unit for
 * caps given in bytes. Included by ir.h.
 * Tested by: tests/unit/test_search.c, tests/unit/test_bound.c.
 */
#ifndef SC_MEMCAP_H
#define SC_MEMCAP_H

#include "ir.h"

/* Memory: units of activation one (s, mb) holds after F (s = -1: all), and
 * the fraction W still needs after B (0 <= w_keep <= 1). */
sc_status sc_prog_set_mem(sc_prog *pg, int s, double units);
sc_status sc_prog_set_w_keep(sc_prog *pg, double w_keep);
/* The fraction of stage s alone (a model whose stages keep different
 * shares, runtime/model's decoder); sc_prog_set_w_keep sets every stage's
 * again. The simulator and the memory check use it; schedulers and bounds
 * read sc_prog_w_keep. */
sc_status sc_prog_set_stage_w_keep(sc_prog *pg, int s, double w_keep);
double sc_prog_mem(const sc_prog *pg, int s);
double sc_prog_w_keep(const sc_prog *pg);
double sc_prog_mem_limit(const sc_prog *pg);
/* The memory limit (memcap.c): the peak, in units, any device may reach
 * (default INFINITY), a promise (docs/guide.md#memory-model): the compile
 * driver refuses a program whose streams pass it on any device (check/caps.h);
 * schedules with a memory knob use it (blocks, schedulers, sc_cap_fit).
 * Per-device caps: caps[d] > 0 for every device (INFINITY: no cap there);
 * mem_limit is then the smallest. The cap of device d (INFINITY: none);
 * whether the caps differ between devices. */
sc_status sc_prog_set_mem_limit(sc_prog *pg, double units);
sc_status sc_prog_set_mem_caps(sc_prog *pg, const double *caps);
double sc_prog_mem_cap(const sc_prog *pg, int d);
int sc_prog_mem_per_device(const sc_prog *pg);
/* Bytes of one unit of activation memory, for caps given in bytes: the
 * model's (flops.h) when the program has one, else what a cost file or a
 * run set (sc_prog_set_byte_unit); 0 when unknown. */
double sc_prog_byte_unit(const sc_prog *pg);
sc_status sc_prog_set_byte_unit(sc_prog *pg, double bytes);
/* Whether the last error refused the program for its cap (a peak above mem,
 * check/caps.h, or a block's steady state): the CLI names recipes that fit. */
int sc_prog_cap_refused(const sc_prog *pg);

#endif
