/*
 * wintree.h — a winner tree over P keyed items (the list schedulers'
 * devices by the time of their next step: interp/schedule/reorder_list.c,
 * interp/auto/autosched_heur.c).
 *
 * Q leaves (P up to a power of 2): leaf Q + q holds item q and its key
 * (past P: a sentinel, key INFINITY and index q, after every item in a
 * tie); each inner node i (1 .. Q-1) the lesser of its children 2i, 2i+1 by
 * (key, item), with that key beside it (t[i], tk[i]): the root t[1] is the
 * least item, as an indexed heap's top would be, in log P comparisons per
 * changed key (a heap's sift-down compares both children). Every item
 * under a left child is below every item under its right sibling, so a tie
 * goes to the left one without comparing items: each level reads the
 * sibling's key alone (and its item where it wins).
 * Tested by: tests/unit/test_reorder.c.
 */
#ifndef SC_WINTREE_H
#define SC_WINTREE_H

#include <math.h>

/* Whether the winner of node s comes before (k, w), w an item under
 * s ^ 1, by (key, item). */
static inline int sc_wtree_sib_less(const double *tk, int s, double k)
{
    return (s & 1) ? tk[s] < k : tk[s] <= k;
}

/* The tree over key[0..P) (t, tk: 2 Q). */
static inline void sc_wtree_build(int *t, double *tk, int Q, int P, const double *key)
{
    for (int q = 0; q < Q; q++) {
        t[Q + q] = q;
        tk[Q + q] = q < P ? key[q] : INFINITY;
    }
    for (int i = Q - 1; i >= 1; i--) {
        int l = 2 * i, r = l + 1, w = sc_wtree_sib_less(tk, r, tk[l]) ? r : l;
        t[i] = t[w];
        tk[i] = tk[w];
    }
}

/* Item d's key is now k: its path to the root again, up to the first node
 * that keeps its winner and key (the nodes above it are functions of it
 * and of nodes off the path, unchanged). Where d wins at the root, it wins
 * at every node of its path and, its key changed, no node of the path
 * keeps it: the whole path again, without looking for that node. */
static inline void sc_wtree_fix(int *t, double *tk, int Q, int d, double k)
{
    int w = d, i = Q + d;
    tk[i] = k;
    if (t[1] == d) {
        for (; i > 1; i >>= 1) {
            int s = i ^ 1, p = i >> 1;
            if (sc_wtree_sib_less(tk, s, k)) {
                k = tk[s];
                w = t[s];
            }
            t[p] = w;
            tk[p] = k;
        }
        return;
    }
    for (; i > 1; i >>= 1) {
        int s = i ^ 1, p = i >> 1;
        if (sc_wtree_sib_less(tk, s, k)) {
            k = tk[s];
            w = t[s];
        }
        if (t[p] == w && tk[p] == k)
            return;
        t[p] = w;
        tk[p] = k;
    }
}

#endif
