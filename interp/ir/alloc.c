/*
 * alloc.c — counted allocation with a size header (alloc.h).
 */
#include "alloc.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* The header keeps the block's size and the alignment of malloc. */
typedef union hdr {
    size_t n;
    max_align_t align;
} hdr;

static sc_alloc_fn hook;
static void *hook_ud;
static size_t used;

void sc_alloc_hook(sc_alloc_fn fn, void *ud)
{
    hook = fn;
    hook_ud = ud;
}

size_t sc_alloc_used(void) { return used; }

static int admit(size_t bytes)
{
    if (hook && !hook(hook_ud, bytes, 1))
        return 0;
    used += bytes;
    return 1;
}

static void give_back(size_t bytes)
{
    used -= bytes;
    if (hook)
        hook(hook_ud, bytes, 0);
}

void *sc_malloc(size_t n)
{
    if (n > SIZE_MAX - sizeof(hdr) || !admit(n + sizeof(hdr)))
        return NULL;
    hdr *h = malloc(n + sizeof(hdr));
    if (!h) {
        give_back(n + sizeof(hdr));
        return NULL;
    }
    h->n = n;
    return h + 1;
}

void *sc_calloc(size_t n, size_t size)
{
    if (size && n > (SIZE_MAX - sizeof(hdr)) / size)
        return NULL;
    void *p = sc_malloc(n * size);
    if (p)
        memset(p, 0, n * size);
    return p;
}

void sc_free(void *p)
{
    if (!p)
        return;
    hdr *h = (hdr *)p - 1;
    size_t n = h->n;
    free(h);
    give_back(n + sizeof(hdr));
}

void *sc_realloc(void *p, size_t n)
{
    if (!p)
        return sc_malloc(n);
    if (n == 0) {
        sc_free(p);
        return NULL;
    }
    hdr *h = (hdr *)p - 1;
    size_t old = h->n;
    if (n > SIZE_MAX - sizeof(hdr) || (n > old && !admit(n - old)))
        return NULL;
    hdr *g = realloc(h, n + sizeof(hdr));
    if (!g) {
        if (n > old)
            give_back(n - old);
        return NULL;
    }
    g->n = n;
    if (n < old)
        give_back(old - n);
    return g + 1;
}
