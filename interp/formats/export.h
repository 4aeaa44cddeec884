/*
 * export.h — the formats a program is exported in (docs/cli.md "export",
 * docs/interchange.md), one row each: `stagecraft export --format NAME` and p:export(NAME)
 * accept these names, and their errors list them from here.
 * tests/py/lists.py compares them with the usage text and the Python
 * package.
 *
 *     int f = sc_export_format_named("trace");   // SC_FMT_TRACE, or -1
 *     printf("(%s)", sc_export_format_list());   // (torch-csv, ..., svg)
 *
 * Tested by: tests/interchange.sh.
 */
#ifndef SC_EXPORT_H
#define SC_EXPORT_H

/* X(ID, name) */
#define SC_EXPORT_FORMATS(X)                                                                     \
    X(TORCH_CSV, "torch-csv")             /* PyTorch's compute_only dialect */                   \
    X(TORCH_CSV_COMMS, "torch-csv-comms") /* its compute_comms dialect */                        \
    X(JSON, "json")                       /* the dump, json.h */                                 \
    X(TRACE, "trace")                     /* Chrome trace, trace.h */                            \
    X(SVG, "svg")                         /* the picture, svg.h */

typedef enum sc_export_format {
#define X(id, name) SC_FMT_##id,
    SC_EXPORT_FORMATS(X)
#undef X
    SC_FMT_COUNT
} sc_export_format;

/* The format of that name, or -1. */
int sc_export_format_named(const char *name);
/* The names, "torch-csv, torch-csv-comms, json, trace, svg" (static). */
const char *sc_export_format_list(void);

#endif
