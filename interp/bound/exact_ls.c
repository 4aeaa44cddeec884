/*
 * exact_ls.c — the exact optimum's search for schedules (exact_impl.h,
 * docs/bound.md#the-search): list schedules ranked by a key per pass, and
 * a local search over the keys.
 *
 * A list schedule builds one schedule of the model's class pass by pass:
 * of the passes that can come next (each stage's F, B and W in microbatch
 * order, which loses nothing: docs/bound.md#the-exact-optimum), it starts
 * the one that can start earliest, and among those that start together the
 * one of the smallest key; an F only when its record fits the device's cap
 * and a window (a number of records a device holds, at most what the cap
 * allows: fewer records in flight can end the pipeline sooner). Every
 * schedule it returns is a schedule of the class, timed as the model times
 * it, so its makespan is an upper bound on the optimum.
 *
 * The keys start from rules (B first, then F or W; F first; the longest
 * path to the end first) and the local search moves them: it shifts the
 * keys of a few passes, or a device's window, keeps a change that does not
 * lengthen the schedule, and restarts from the best after a run of
 * failures. Its random numbers come from a fixed seed, so the same call
 * makes the same schedules in the same order; only the time limit decides
 * how many.
 */
#include "exact_impl.h"
#include "ir/alloc.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

/* What one list schedule needs besides the model, allocated once. */
typedef struct ls_work {
    const model *md;
    int P;
    double *free_at, *level, *end, *cap, *units; /* [P], [P], [n], [P], [S m] by record */
    int *next, *cnt;                             /* [3 S], [P] */
    int *dst, *dst_off; /* device d's stages: dst[dst_off[d] .. dst_off[d+1]) */
    double *reserve;    /* [S] the units an F of stage s leaves free: a record of each later
                         * stage of its device, which could not start otherwise (a deadlock) */
} ls_work;

/* The lag before pass i can start after its dependency, and that
 * dependency (-1: none): exact_impl.h. */
int sc_exact_dep(const model *md, int i, double *lag)
{
    const sc_prog *pg = md->pg;
    int r = i / 3, s = r / md->m, mb = r % md->m, k = i % 3, t = -1;
    *lag = 0;
    if (k == 0 && s > 0)
        t = s - 1;
    else if (k == 1 && s + 1 < md->S)
        t = s + 1;
    if (t >= 0) {
        if (sc_prog_stage_device(pg, s) != sc_prog_stage_device(pg, t))
            *lag = sc_prog_msg_time(pg, mb);
        return 3 * (t * md->m + mb) + k;
    }
    return k == 0 ? -1 : k == 1 ? i - 1 : i - 1; /* the last stage's B: its F; W: its B */
}

/* splitmix64 */
static uint64_t rnd(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15u);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
    return z ^ (z >> 31);
}

static double unif(uint64_t *s) { return (double)(rnd(s) >> 11) * (1.0 / 9007199254740992.0); }

/* Whether device d's record r fits under its cap and window after an F,
 * leaving the reserve when `reserve` is set (the list schedules). */
static int fits(const ls_work *w, const double *win, int d, int r, int reserve)
{
    double lim = fmin(win[d], w->cap[d]) - (reserve ? w->reserve[r / w->md->m] : 0);
    return w->level[d] + w->units[r] <= lim * (1 + 1e-9) + 1e-9;
}

/* Starts pass i at its earliest on its device (its dependency has ended). */
static void start_pass(ls_work *w, int i, double t, double *x, int *pos, double *span)
{
    const model *md = w->md;
    int r = i / 3, s = r / md->m, k = i % 3, d = md->dev[i];
    double u = w->units[r], wk = sc_prog_w_keep(md->pg);
    x[i] = t;
    w->end[i] = t + md->d[i];
    *span = fmax(*span, w->end[i]);
    w->free_at[d] = w->end[i];
    pos[i] = w->cnt[d]++;
    w->level[d] += k == 0 ? u : k == 1 ? -(md->fold ? 1 : 1 - wk) * u : -wk * u;
    w->next[s * 3 + k]++;
}

/* Clears w for a schedule; the passes to start. */
static int reset(ls_work *w)
{
    const model *md = w->md;
    int left = 0;
    memset(w->free_at, 0, (size_t)w->P * sizeof *w->free_at);
    memset(w->level, 0, (size_t)w->P * sizeof *w->level);
    memset(w->next, 0, (size_t)md->S * 3 * sizeof *w->next);
    memset(w->cnt, 0, (size_t)w->P * sizeof *w->cnt);
    for (int i = 0; i < md->n; i++)
        w->end[i] = pass_used(md, i) ? -1 : 0, left += pass_used(md, i);
    return left;
}

/* One list schedule with keys `key` and windows `win` (units a device may
 * hold, at most its cap): its makespan, x and pos filled; INFINITY when
 * memory blocks every device. */
static double list_schedule(ls_work *w, const double *key, const double *win, double *x, int *pos)
{
    const model *md = w->md;
    int S = md->S, m = md->m, left = reset(w);
    double span = 0;
    while (left > 0) {
        int best = -1;
        double bt = INFINITY, bk = INFINITY;
        for (int s = 0; s < S; s++) {
            int d = md->dev[3 * s * m];
            for (int k = 0; k < 3; k++) {
                int mb = w->next[s * 3 + k], i = 3 * (s * m + mb) + k;
                if (mb >= m || !pass_used(md, i))
                    continue;
                double lag, t = w->free_at[d];
                int j = sc_exact_dep(md, i, &lag);
                if (j >= 0 && w->end[j] < 0)
                    continue;
                if (j >= 0 && w->end[j] + lag > t)
                    t = w->end[j] + lag;
                if (k == 0 && !fits(w, win, d, i / 3, 1))
                    continue;
                if (t < bt - 1e-12 || (t <= bt + 1e-12 && key[i] < bk))
                    best = i, bt = t, bk = key[i];
            }
        }
        if (best < 0)
            return INFINITY; /* memory blocks every device */
        start_pass(w, best, bt, x, pos, &span);
        left--;
    }
    return span;
}

/* The other rule: every device runs its passes in the order of their keys
 * (each stage's F, B and W in microbatch order), waiting for the first of
 * them, and skips an F that does not fit for the next pass. With a
 * schedule's starts as keys it makes that schedule again, or one no later
 * pass by pass. Its makespan; INFINITY when every device waits for another
 * (a deadlock) or for memory. */
static double order_schedule(ls_work *w, const double *key, const double *win, double *x, int *pos)
{
    const model *md = w->md;
    int m = md->m, left = reset(w);
    double span = 0;
    for (int progress = 1; progress && left > 0;) {
        progress = 0;
        for (int d = 0; d < w->P; d++)
            for (;;) {
                int best = -1;
                for (int a = w->dst_off[d]; a < w->dst_off[d + 1]; a++)
                    for (int k = 0, s = w->dst[a]; k < 3; k++) {
                        int mb = w->next[s * 3 + k], i = 3 * (s * m + mb) + k;
                        if (mb >= m || !pass_used(md, i) || (k == 0 && !fits(w, win, d, i / 3, 0)))
                            continue;
                        if (best < 0 || key[i] < key[best])
                            best = i;
                    }
                double lag, t = w->free_at[d];
                int j = best >= 0 ? sc_exact_dep(md, best, &lag) : -1;
                if (best < 0 || (j >= 0 && w->end[j] < 0))
                    break; /* done, or waits for another device */
                if (j >= 0 && w->end[j] + lag > t)
                    t = w->end[j] + lag;
                start_pass(w, best, t, x, pos, &span);
                left--, progress = 1;
            }
    }
    return left ? INFINITY : span;
}

/* The longest path from the start of pass i to the end of the schedule
 * along the dependencies (i's own time included): tail[n]. */
static void tails(const model *md, double *tail)
{
    int S = md->S, m = md->m;
    for (int i = 0; i < md->n; i++)
        tail[i] = pass_used(md, i) ? md->d[i] : 0;
    /* A pass's successors: F(s) has F(s+1) (the last stage: its B), B(s) has
     * B(s-1) and its W. So the Ws are final first, then the Bs from stage 0
     * up, then the Fs from the last stage down; each passes its tail on to
     * its dependency. */
    for (int k = 2; k >= 0; k--)
        for (int a = 0; a < S; a++) {
            int s = k == 0 ? S - 1 - a : a;
            for (int mb = 0; mb < m; mb++) {
                double lag;
                int i = 3 * (s * m + mb) + k, j = pass_used(md, i) ? sc_exact_dep(md, i, &lag) : -1;
                if (j >= 0 && tail[j] < md->d[j] + lag + tail[i])
                    tail[j] = md->d[j] + lag + tail[i];
            }
        }
}

/* The first keys, rule r: 0..2 by kind (B first, then F or W; B, W, F;
 * F first), 3 the longest path to the end first (B before W on ties). */
static void rule_keys(const model *md, int r, const double *tail, double *key)
{
    static const int prio[3][3] = {{1, 0, 2}, {1, 2, 0}, {0, 1, 2}};
    for (int i = 0; i < md->n; i++)
        key[i] = r < 3 ? prio[r][i % 3] : -tail[i] + 1e-6 * (i % 3 == 2);
}

/* The list schedules' windows: the cap less 0 .. WINDOWS - 1 records. */
#define WINDOWS 8

/* The arrays of w and the search's own, allocated once. */
typedef struct ls_arrays {
    double *key, *best_key, *tail, *xt, *win, *best_win, *step;
    int *pt;
} ls_arrays;

static void free_arrays(ls_work *w, ls_arrays *a)
{
    sc_free(w->free_at), sc_free(w->level), sc_free(w->cap), sc_free(w->units), sc_free(w->end);
    sc_free(w->next), sc_free(w->cnt), sc_free(w->dst), sc_free(w->dst_off), sc_free(w->reserve);
    sc_free(a->key), sc_free(a->best_key), sc_free(a->tail), sc_free(a->xt), sc_free(a->win);
    sc_free(a->best_win), sc_free(a->step), sc_free(a->pt);
}

static sc_status alloc_arrays(const model *md, ls_work *w, ls_arrays *a)
{
    size_t n = (size_t)md->n, P = (size_t)w->P, S = (size_t)md->S;
    w->free_at = sc_calloc(P, sizeof(double)), w->level = sc_calloc(P, sizeof(double));
    w->cap = sc_calloc(P, sizeof(double)), w->units = sc_calloc(n / 3, sizeof(double));
    w->end = sc_calloc(n, sizeof(double)), w->next = sc_calloc(S * 3, sizeof(int));
    w->cnt = sc_calloc(P, sizeof(int)), w->dst = sc_calloc(S, sizeof(int));
    w->dst_off = sc_calloc(P + 1, sizeof(int)), w->reserve = sc_calloc(S, sizeof(double));
    a->key = sc_calloc(n, sizeof(double)), a->best_key = sc_calloc(n, sizeof(double));
    a->tail = sc_calloc(n, sizeof(double)), a->xt = sc_calloc(n, sizeof(double));
    a->win = sc_calloc(P, sizeof(double)), a->best_win = sc_calloc(P, sizeof(double));
    a->step = sc_calloc(P, sizeof(double)), a->pt = sc_calloc(n, sizeof(int));
    if (!w->free_at || !w->level || !w->cap || !w->units || !w->end || !w->next || !w->cnt ||
        !w->dst || !w->dst_off || !w->reserve || !a->key || !a->best_key || !a->tail || !a->xt ||
        !a->win || !a->best_win || !a->step || !a->pt)
        return SC_ERR_NOMEM;
    const sc_prog *pg = md->pg;
    for (int d = 0; d < w->P; d++)
        w->cap[d] = sc_prog_mem_cap(pg, d), a->win[d] = a->best_win[d] = INFINITY;
    for (int r = 0; r < md->n / 3; r++) {
        w->units[r] = sc_prog_rec_units(pg, r / md->m, r % md->m);
        a->step[md->dev[3 * r]] = fmax(a->step[md->dev[3 * r]], w->units[r]);
    }
    for (int s = 0; s < md->S; s++) /* the later stages' largest records */
        for (int t = s + 1; t < md->S; t++) {
            double u = 0;
            for (int mb = 0; md->dev[3 * t * md->m] == md->dev[3 * s * md->m] && mb < md->m; mb++)
                u = fmax(u, w->units[t * md->m + mb]);
            w->reserve[s] += u;
        }
    for (int s = 0; s < md->S; s++) /* the stages of each device, counted, then placed */
        w->dst_off[md->dev[3 * s * md->m] + 1]++;
    for (int d = 0; d < w->P; d++)
        w->dst_off[d + 1] += w->dst_off[d];
    for (int s = 0, *at = w->cnt; s < md->S; s++)
        w->dst[w->dst_off[md->dev[3 * s * md->m]] + at[md->dev[3 * s * md->m]]++] = s;
    tails(md, a->tail);
    return SC_OK;
}

/* What the local search minimizes: the makespan, and a little of the
 * devices' mean end, so that a move that ends some device sooner counts
 * while the makespan stays (most moves leave it as it is). */
static double score(const ls_work *w, double span)
{
    double sum = 0;
    for (int d = 0; d < w->P; d++)
        sum += w->free_at[d];
    return span + 0.05 * sum / w->P;
}

/* One move of the local search on a's keys and windows: a few passes move
 * in their devices' orders, or a device's window changes. The old values
 * in moved/old (their count returned) and *dw, *oldw (-1: none). */
static int move(const model *md, ls_arrays *a, double reach, uint64_t *seed, int moved[8],
                double old[8], int *dw, double *oldw)
{
    int P = sc_prog_devices(md->pg), n = md->n, nm = 0;
    *dw = (int)(rnd(seed) % (uint64_t)P);
    if (unif(seed) < 0.05 && isfinite(sc_prog_mem_cap(md->pg, *dw)) && a->step[*dw] > 0) {
        double c = sc_prog_mem_cap(md->pg, *dw), u = a->step[*dw];
        *oldw = a->win[*dw];
        a->win[*dw] = isfinite(*oldw) && unif(seed) < 0.5 ? *oldw + u
                                                          : c - u * (double)(rnd(seed) % 6);
        return 0;
    }
    *dw = -1;
    int many = 1 + (int)(rnd(seed) % 3);
    double r = reach * (double)(1 << (rnd(seed) % 5));
    for (int k = 0; k < many; k++) {
        int i;
        do
            i = (int)(rnd(seed) % (uint64_t)n);
        while (!pass_used(md, i));
        moved[nm] = i, old[nm++] = a->key[i];
        a->key[i] += (2 * unif(seed) - 1) * r;
    }
    return nm;
}

sc_status sc_exact_search(const model *md, const budget *bd, double lower, long max_tries,
                          double *span, double *x, int *pos)
{
    int n = md->n;
    ls_work w = {.md = md, .P = sc_prog_devices(md->pg)};
    ls_arrays a = {0};
    sc_status st = alloc_arrays(md, &w, &a);
    if (st != SC_OK)
        goto exit;
    double best = *span, goal = lower * (1 + 1e-9) + 1e-12, reach = 0;
    int used = 0;
    for (int i = 0; i < n; i++)
        reach += pass_used(md, i) ? md->d[i] : 0, used += pass_used(md, i);
    reach = used ? reach / used : 1;
    long tries = 0;
    /* The rules first (the list schedule's), then the local search from the
     * best schedule of all (the order rule's, on its starts). */
    for (int v = 0; v < 4 * WINDOWS && best > goal && sc_exact_now() < bd->deadline; v++, tries++) {
        rule_keys(md, v % 4, a.tail, a.key);
        for (int d = 0; d < w.P; d++) /* a window of the cap less v/4 records */
            a.win[d] = v / 4 && isfinite(w.cap[d]) ? w.cap[d] - (v / 4) * a.step[d] : INFINITY;
        double t = list_schedule(&w, a.key, a.win, a.xt, a.pt);
        if (t < best) {
            best = t;
            memcpy(x, a.xt, (size_t)n * sizeof *x);
            memcpy(pos, a.pt, (size_t)n * sizeof *pos);
            memcpy(a.best_win, a.win, (size_t)w.P * sizeof *a.win);
        }
    }
    memcpy(a.win, a.best_win, (size_t)w.P * sizeof *a.win);
    if (!isfinite(best))
        goto exit;
    memcpy(a.key, x, (size_t)n * sizeof *x);
    memcpy(a.best_key, x, (size_t)n * sizeof *x);
    double cur = INFINITY; /* the score of the current schedule (score()) */
    uint64_t seed = 0x5eed;
    for (int fails = 0; best > goal && tries < max_tries; tries++) {
        if ((tries & 15) == 0 && sc_exact_now() >= bd->deadline)
            break;
        int moved[8], dw;
        double old[8], oldw = 0;
        int nm = move(md, &a, reach, &seed, moved, old, &dw, &oldw);
        double t = order_schedule(&w, a.key, a.win, a.xt, a.pt), sc = score(&w, t);
        if (sc <= cur + 1e-12) { /* kept: the keys become the schedule's starts */
            cur = sc;
            memcpy(a.key, a.xt, (size_t)n * sizeof *a.key);
            if (t < best - 1e-12) {
                best = t, fails = 0;
                memcpy(x, a.xt, (size_t)n * sizeof *x);
                memcpy(pos, a.pt, (size_t)n * sizeof *pos);
                memcpy(a.best_key, a.xt, (size_t)n * sizeof *a.key);
                memcpy(a.best_win, a.win, (size_t)w.P * sizeof *a.win);
            }
            continue;
        }
        for (int k = nm - 1; k >= 0; k--)
            a.key[moved[k]] = old[k];
        if (dw >= 0)
            a.win[dw] = oldw;
        if (++fails > 5000) { /* back to the best */
            fails = 0, cur = INFINITY;
            memcpy(a.key, a.best_key, (size_t)n * sizeof *a.key);
            memcpy(a.win, a.best_win, (size_t)w.P * sizeof *a.win);
        }
    }
    *span = best;
exit:
    free_arrays(&w, &a);
    return st;
}
