/*
 * replay_coll_cache.c — the matching of a verified program's collectives,
 * kept in the program for its next timed replay (replay_coll_impl.h).
 */
#include "ir/alloc.h"
#include "replay_coll_impl.h"

#include <string.h>

typedef struct rshape {
    uint64_t key;
    size_t N;
    rcoll c; /* its arrays from need to mdev */
} rshape;

/* The streams word by word (sc_instr: 16 bytes, no padding) and the
 * collectives' groups and roots: what the matching follows from. */
static uint64_t shape_key(const sc_prog *pg)
{
    uint64_t h = 0x9e3779b97f4a7c15ULL ^ (uint64_t)pg->P;
#define MIX(x) (h = (h ^ (uint64_t)(x)) * 0xff51afd7ed558ccdULL, h ^= h >> 29)
    for (int d = 0; d < pg->P; d++) {
        const sc_instr *v = pg->stream[d].v;
        MIX(pg->stream[d].n);
        for (size_t k = 0; k < pg->stream[d].n; k++) {
            uint64_t w[2];
            memcpy(w, &v[k], sizeof w);
            MIX(w[0]);
            MIX(w[1]);
        }
    }
    for (size_t i = 0; i < pg->ncoll; i++)
        MIX((uint64_t)(uint32_t)pg->coll[i].group << 32 | (uint32_t)pg->coll[i].root);
#undef MIX
    return h;
}

static void shape_free(void *p)
{
    rshape *s = p;
    sc_free(s->c.need);
    sc_free(s->c.inst);
    sc_free(s->c.chan);
    sc_free(s->c.choff);
    sc_free(s->c.members);
    sc_free(s->c.ioff);
    sc_free(s->c.memb);
    sc_free(s->c.mdev);
    sc_free(s);
}

int sc_rcoll_reuse(rcoll *c, uint64_t *key)
{
    sc_prog *pg = c->pg;
    if (!pg->verified)
        return 0;
    *key = shape_key(pg);
    const rshape *sh = pg->rcache_free == shape_free ? pg->rcache : NULL;
    if (!sh || sh->key != *key || sh->N != c->N)
        return 0;
    c->need = sh->c.need;
    c->inst = sh->c.inst;
    c->chan = sh->c.chan;
    c->choff = sh->c.choff;
    c->members = sh->c.members;
    c->ioff = sh->c.ioff;
    c->memb = sh->c.memb;
    c->mdev = sh->c.mdev;
    c->ninst = sh->c.ninst;
    c->borrowed = 1;
    return 1;
}

void sc_rcoll_keep(rcoll *c, uint64_t key)
{
    sc_prog *pg = c->pg;
    rshape *sh = sc_calloc(1, sizeof *sh);
    if (!sh)
        return; /* the next replay builds it again */
    sh->key = key;
    sh->N = c->N;
    sh->c = (rcoll){.need = c->need, .inst = c->inst, .chan = c->chan, .choff = c->choff,
                    .members = c->members, .ioff = c->ioff, .memb = c->memb, .mdev = c->mdev,
                    .ninst = c->ninst};
    c->borrowed = 1;
    if (pg->rcache_free)
        pg->rcache_free(pg->rcache);
    pg->rcache = sh;
    pg->rcache_free = shape_free;
}
