/*
 * api_impl.h — what the files of libstagecraft share (lang/api only):
 * stagecraft.c (contexts, programs) and api_engine.c (compare, plan).
 *
 * Tested by: tests/embed.sh.
 */
#ifndef SC_API_IMPL_H
#define SC_API_IMPL_H

#include <stagecraft.h>

#include <lua.h>
#include <stddef.h>

#include "sandbox/sc_limits.h"

/* What a call returns, owned by the context until the next such call:
 * every block it allocated. */
typedef struct keep {
    void **p;
    int n, cap;
} keep;

struct stagecraft {
    sc_limits lim; /* the state's allocator points here: first, never moved */
    lua_State *L;
    stagecraft_program *progs; /* open programs (a list) */
    char err[1024];
    keep plan_kept, compare_kept; /* stagecraft_plan's, stagecraft_compare's (api_engine.c) */
    char *json; /* the last stagecraft_compare_json's or stagecraft_plan_json's text */
};

/* The message into sc's error; returns code. */
int sc_api_fail(stagecraft *sc, int code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* The start of every call on a context: STAGECRAFT_USAGE without one;
 * else sc's error cleared, and the usage error need when ok is 0 (an
 * argument the call needs is missing); 0 to go on. */
int sc_api_enter(stagecraft *sc, int ok, const char *need);
/* A zeroed block of n bytes (NULL: out of memory) or a copy of s (NULL
 * for NULL, or out of memory), kept in k until sc_api_keep_free. */
void *sc_api_keep(keep *k, size_t n);
const char *sc_api_keep_str(keep *k, const char *s);
void sc_api_keep_free(keep *k);

#endif
