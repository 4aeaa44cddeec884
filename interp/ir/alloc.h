/*
 * alloc.h — the allocator of programs and of what interp computes from them
 * (orders, streams, lowering, the offload plan, verification, simulation):
 * a host may count and cap it. lang charges it to --max-mem together with
 * the Lua heap (docs/sandbox.md#limits-on-evaluation), so that a recipe that keeps building
 * programs, or a program too large to verify, stops at the limit.
 *
 *   static int charge(void *ud, size_t bytes, int grow)
 *   {
 *       budget *b = ud;
 *       if (!grow) { b->used -= bytes; return 1; }
 *       if (b->used + bytes > b->cap) return 0;   // refused: NULL, as out of memory
 *       b->used += bytes;
 *       return 1;
 *   }
 *   sc_alloc_hook(charge, &my_budget);
 *   sc_prog *pg = sc_prog_new(4, 4, 8);          // counted from here on
 *
 * sc_malloc, sc_calloc (n * size checked for overflow), sc_realloc and
 * sc_free behave as their C namesakes; a block from them is freed with
 * sc_free only, never with free() (each block carries its size in a small
 * header, so that the hook sees exact byte counts). The hook is called with
 * grow = 1 before a block is made or grows by `bytes` (0 refuses: the call
 * returns NULL and changes nothing), and with grow = 0 after `bytes` were
 * given back. Without a hook nothing is counted.
 *
 * Not thread-safe: interp runs on one thread. Set the hook before any
 * program exists and keep it while one does.
 * Tested by: tests/unit/test_alloc.c, tests/unit/test_readers.c.
 */
#ifndef SC_ALLOC_H
#define SC_ALLOC_H

#include <stddef.h>

typedef int (*sc_alloc_fn)(void *ud, size_t bytes, int grow);

/* Installs the hook (NULL: none). */
void sc_alloc_hook(sc_alloc_fn fn, void *ud);
/* Bytes held now through these functions (headers included). */
size_t sc_alloc_used(void);

void *sc_malloc(size_t n);
void *sc_calloc(size_t n, size_t size);
/* n == 0 frees p and returns NULL; on failure p is left as it was. */
void *sc_realloc(void *p, size_t n);
void sc_free(void *p);

#endif
