/*
 * jsonw.h — the one JSON writer: every JSON stagecraft writes (sim, compare,
 * import and run --json, the program dump, the Chrome trace, cost files)
 * goes through it, so that strings are escaped one way and numbers printed
 * one way (docs/cli.md: up to 15 significant digits).
 *
 * A writer keeps the nesting; a value is written with its key inside an
 * object and with key NULL inside an array, and the writer puts the
 * separators. Containers are compact by default ("{", ", " between, "}");
 * a layout gives the text before the first member, between members and
 * before the close (when not empty), for the files written one member a
 * line:
 *
 *     sc_jw w;
 *     sc_jw_init(&w, stdout);
 *     sc_jw_object(&w, NULL);                  // {
 *     sc_jw_str(&w, "recipe", "1f1b");         // "recipe": "1f1b"
 *     sc_jw_int(&w, "devices", 4);             // , "devices": 4
 *     sc_jw_nums(&w, "busy", busy, 4);         // , "busy": [24, 24, 24, 24]
 *     sc_jw_null(&w, "bottleneck");            // , "bottleneck": null
 *     sc_jw_end(&w);                           // }
 *
 * Numbers that are not finite are written null (JSON has no NaN). Nothing
 * is allocated; errors of the stream are the caller's (ferror).
 *
 * sc_jw_init writes to the FILE as it goes; sc_jw_init_out writes into a
 * buffered writer (outbuf.h), for the large documents (export, the trace):
 * the caller flushes it at the end (sc_out_flush).
 *
 * Tested by: tests/unit/test_jsonw.c.
 */
#ifndef SC_JSONW_H
#define SC_JSONW_H

#include <stdio.h>

#include "outbuf.h"

/* The deepest nesting a writer holds (the dump goes 4 deep). */
#define SC_JW_DEPTH 8

typedef struct sc_jw_level {
    char close;                     /* '}' or ']' */
    int n;                          /* members written */
    const char *first, *sep, *end;  /* the layout */
} sc_jw_level;

typedef struct sc_jw {
    FILE *f;
    sc_out *out;      /* NULL: straight to f */
    int depth;
    const char *next; /* sc_jw_sep: the separator before the next member only */
    sc_jw_level lv[SC_JW_DEPTH];
} sc_jw;

void sc_jw_init(sc_jw *w, FILE *f);
/* Into o (the caller's; its FILE is w->f), flushed by the caller. */
void sc_jw_init_out(sc_jw *w, sc_out *o);

/* Containers: opened as a member (key) or an element (NULL), closed by
 * sc_jw_end. A layout applies to the container opened last. */
void sc_jw_object(sc_jw *w, const char *key);
void sc_jw_array(sc_jw *w, const char *key);
void sc_jw_layout(sc_jw *w, const char *first, const char *sep, const char *end);
void sc_jw_end(sc_jw *w);
/* The separator before the next member only (a line break in a compact
 * object), in place of the container's. */
void sc_jw_sep(sc_jw *w, const char *sep);

/* Values. */
void sc_jw_str(sc_jw *w, const char *key, const char *s);
void sc_jw_int(sc_jw *w, const char *key, long long x);
void sc_jw_bool(sc_jw *w, const char *key, int b);
void sc_jw_null(sc_jw *w, const char *key);
/* A number with up to 15 significant digits ("%.15g"). */
void sc_jw_num(sc_jw *w, const char *key, double x);
/* A number with up to `digits` significant digits ("%.*g": 17 round-trips
 * a double, 9 a float's worth for measured times). */
void sc_jw_num_g(sc_jw *w, const char *key, double x, int digits);
/* A number rounded to a whole one ("%.0f": bytes). */
void sc_jw_whole(sc_jw *w, const char *key, double x);
/* Arrays of n numbers: "%.15g", "%.*g", or integers. */
void sc_jw_nums(sc_jw *w, const char *key, const double *v, int n);
void sc_jw_nums_g(sc_jw *w, const char *key, const double *v, int n, int digits);
void sc_jw_ints(sc_jw *w, const char *key, const int *v, int n);

/* A member (or element, key NULL) whose value the caller writes whole to
 * w->f itself: a JSON document from another writer (sim --json's
 * "program", the dump of formats/json.h). A buffered writer's bytes reach
 * w->f first. */
void sc_jw_key(sc_jw *w, const char *key);

/* Writes s as a JSON string literal: quotes, '"' and '\' escaped, control
 * characters as \u00XX; other bytes as they are. */
void sc_jw_quote(FILE *f, const char *s);
/* The same into a buffered writer. */
void sc_out_quote(sc_out *o, const char *s);
/* x as sc_jw_num writes it ("%.15g"; null when not finite). */
void sc_out_num(sc_out *o, double x);
void sc_out_int(sc_out *o, long long x);

/* An element of the open array that the caller writes whole into the
 * returned buffer (a writer made by sc_jw_init_out; NULL otherwise): the
 * separator is written first. For the many small objects of a trace, where
 * a member at a time costs more than the bytes (formats/trace.c). */
sc_out *sc_jw_raw(sc_jw *w);

#endif
