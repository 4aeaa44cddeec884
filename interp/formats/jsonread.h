/*
 * jsonread.h — a strict JSON reader (RFC 8259) into a tree, for the files
 * stagecraft reads back: cost files (costs.h) and traces (ptrace.h).
 *
 *     sc_jv *root;
 *     char err[256];
 *     if (sc_json_parse(text, len, &root, err, sizeof err) != SC_OK)
 *         fprintf(stderr, "costs.json: %s\n", err);   // "line 3: expected ':'"
 *     const sc_jv *tf = sc_jv_get(root, "tf");
 *     sc_jv_free(root);
 *
 * Strict: no comments, no trailing commas, no NaN or Infinity, strings in
 * UTF-8 with the escapes of the RFC (\u escapes are decoded, surrogate pairs
 * joined), nesting at most SC_JSON_MAX_DEPTH deep, a duplicate key in one
 * object is an error. Numbers are doubles (strtod); a number that
 * overflows a double is an error.
 *
 * Ownership: the tree is one allocation per node, freed by sc_jv_free
 * (NULL is a no-op). Thread-safety: none needed (no global state).
 *
 * Tested by: tests/unit/test_readers.c, tests/unit/test_costs.c.
 */
#ifndef SC_JSONREAD_H
#define SC_JSONREAD_H

#include <stddef.h>

#include "ir/ir.h"

#define SC_JSON_MAX_DEPTH 64

typedef enum sc_jtype { SC_JNULL, SC_JBOOL, SC_JNUM, SC_JSTR, SC_JARR, SC_JOBJ } sc_jtype;

typedef struct sc_jv {
    sc_jtype type;
    int line;            /* line of the value's first character */
    double num;          /* SC_JNUM; SC_JBOOL: 0 or 1 */
    char *str;           /* SC_JSTR (NUL-terminated; may hold NULs: see len) */
    size_t len;          /* SC_JSTR: bytes; SC_JARR, SC_JOBJ: members */
    char **keys;         /* SC_JOBJ: [len] keys, in file order */
    struct sc_jv **item; /* SC_JARR, SC_JOBJ: [len] members, in file order */
} sc_jv;

/* Parses text[0..len) (one value, whitespace around it). SC_ERR_ARG with
 * "line N: what" in err on bad input, SC_ERR_NOMEM out of memory. */
sc_status sc_json_parse(const char *text, size_t len, sc_jv **out, char *err, size_t errlen);
void sc_jv_free(sc_jv *v);

/* Parsing a large file with bounds: the members of one list are handed
 * over one by one instead of kept (a trace's "traceEvents": the tree of a
 * 100 MB trace would take ten times that), and a deadline.
 *
 *     static sc_status on_event(void *ud, size_t i, const sc_jv *ev, char *err, size_t errlen)
 *     { ... return SC_OK; }   // ev is freed after the call
 *     sc_json_opts o = {.each = "traceEvents", .item = on_event, .ud = t,
 *                       .deadline = sc_clock_now() + 60};   // readfile.h
 *     sc_json_parse_opts(text, len, &o, &root, err, sizeof err);
 *
 * each: the member of the top-level object whose value, when it is a list,
 * goes to `item` element by element, in order (index from 0); in the tree
 * that member is an empty list. An item status other than SC_OK stops the
 * parse and is returned, with err as item wrote it. deadline: CLOCK_MONOTONIC
 * seconds (sc_clock_now), 0 for none; checked every few thousand values,
 * SC_ERR_LIMIT with "line N: time limit reached" once passed. */
typedef struct sc_json_opts {
    const char *each; /* NULL: no list is handed over */
    sc_status (*item)(void *ud, size_t index, const sc_jv *v, char *err, size_t errlen);
    void *ud;
    double deadline;
} sc_json_opts;

/* sc_json_parse with options (o NULL: none). */
sc_status sc_json_parse_opts(const char *text, size_t len, const sc_json_opts *o, sc_jv **out,
                             char *err, size_t errlen);

/* Member `key` of an object, or NULL (also when v is not an object). */
const sc_jv *sc_jv_get(const sc_jv *v, const char *key);

/* "a number", "a string", ... for messages. */
const char *sc_jv_typename(sc_jtype t);

#endif
