/*
 * run_report.h — what `stagecraft run` prints about time when the costs are
 * seconds (a cost file, or a profile): the prediction beside the
 * measurement (docs/costs.md#the-prediction-beside-the-measurement), and the
 * cost file of `--profile`.
 *
 * Tested by: tests/runtime.sh.
 */
#ifndef SC_RUN_REPORT_H
#define SC_RUN_REPORT_H

#include "formats/jsonw.h"
#include "run/compare.h"
#include "run/profile.h"

/* The JSON members (in w) of the comparison, and with a profile its own
 * (steps, step times, the file). */
void sc_report_json(sc_jw *w, const sc_comparison *c, const sc_profile *pf, const char *file);
/* The same as text lines. */
void sc_report_text(const sc_comparison *c, const sc_profile *pf, const char *file);

/* Writes the profile's cost file to path, whole or not at all; prints the
 * error and returns its exit code (0: written). */
int sc_report_write_costs(const char *path, const sc_profile *pf);

#endif
