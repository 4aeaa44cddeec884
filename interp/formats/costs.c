/*
 * costs.c — reading and writing cost files (costs.h).
 */
#include "costs.h"
#include "costs_tok.h"
#include "errbuf.h"
#include "jsonw.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

const char *const sc_cost_keys[SC_COST_KINDS] = {"tf", "tb", "tw", "tbw", "optim"};
const char *const sc_cost_vocab_keys[SC_COST_VOCAB] = {"ts", "tt", "te", "tew"};
const char *const sc_cost_a2a_keys[2] = {"dispatch", "combine"};

/* Top-level keys a cost file may hold. */
static const char *const known_keys[] = {
    "stagecraft_costs", "unit", "devices", "stages", "placement", "tf", "tb", "tw", "tbw",
    "optim", "tfb", "dispatch", "combine", "tcomm", "fsdp_time", "reduce_time", "ts", "tt", "te", "tew", "collectives", "tokens", "tf_per_token", "tb_per_token", "tw_per_token",
    "tf_per_token2", "tb_per_token2", "tw_per_token2", "spread", "samples", "transfers", "host_copies",
    "offload_ratio", "measured", NULL};

sc_status sc_costs_init(sc_costs *c, int P, int S)
{
    memset(c, 0, sizeof *c);
    c->P = P;
    c->S = S;
    c->offload_ratio = c->predicted_step = NAN;
    c->comm = c->step = c->gather = c->reduce = (sc_stat){NAN, NAN, 0};
    c->fsdp = -1;
    for (int k = 0; k < SC_COST_KINDS; k++) {
        if (!(c->kind[k] = malloc((size_t)(S > 0 ? S : 1) * sizeof(sc_stat)))) {
            sc_costs_free(c);
            return SC_ERR_NOMEM;
        }
        for (int s = 0; s < S; s++)
            c->kind[k][s] = (sc_stat){NAN, NAN, 0};
    }
    return SC_OK;
}

sc_status sc_costs_init_vocab(sc_costs *c)
{
    for (int k = 0; k < SC_COST_VOCAB; k++) { /* the arrays not made yet */
        if (c->vocab[k])
            continue;
        if (!(c->vocab[k] = malloc((size_t)(c->P > 0 ? c->P : 1) * sizeof(sc_stat))))
            return SC_ERR_NOMEM;
        for (int d = 0; d < c->P; d++)
            c->vocab[k][d] = (sc_stat){NAN, NAN, 0};
    }
    return SC_OK;
}

void sc_costs_free(sc_costs *c)
{
    if (!c)
        return;
    for (int k = 0; k < SC_COST_KINDS; k++)
        free(c->kind[k]);
    for (int k = 0; k < SC_COST_VOCAB; k++)
        free(c->vocab[k]);
    free(c->tfb);
    free(c->a2a[0]);
    free(c->a2a[1]);
    free(c->placement);
    free(c->xfer);
    free(c->host);
    free(c->per_token);
    memset(c, 0, sizeof *c);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* The q-quantile of sorted x[0..n), interpolated. */
static double quantile(const double *x, int n, double q)
{
    double at = q * (n - 1);
    int i = (int)floor(at);
    if (i + 1 >= n)
        return x[n - 1];
    return x[i] + (at - i) * (x[i + 1] - x[i]);
}

sc_stat sc_stat_of(double *x, int n)
{
    if (n < 1)
        return (sc_stat){NAN, NAN, 0};
    qsort(x, (size_t)n, sizeof *x, cmp_double);
    return (sc_stat){quantile(x, n, 0.5), quantile(x, n, 0.75) - quantile(x, n, 0.25), n};
}

/* ---- reading ----------------------------------------------------------- */


/* A time: a finite number >= 0. */
static sc_status time_of(const sc_jv *v, const char *what, double *out, char *err, size_t errlen)
{
    if (!v || v->type != SC_JNUM)
        return sc_errbuf(err, errlen, "%s: expected a time in seconds, found %s", what,
                   v ? sc_jv_typename(v->type) : "nothing");
    if (!(v->num >= 0))
        return sc_errbuf(err, errlen, "%s: a time must be >= 0 (got %g)", what, v->num);
    *out = v->num;
    return SC_OK;
}

static sc_status int_of(const sc_jv *v, const char *what, int lo, int hi, int *out, char *err,
                        size_t errlen)
{
    if (!v || v->type != SC_JNUM || v->num != floor(v->num) || v->num < lo || v->num > hi)
        return sc_errbuf(err, errlen, "'%s': expected an integer in %d..%d", what, lo, hi);
    *out = (int)v->num;
    return SC_OK;
}

/* A list of S times, one per stage or device (per) (or, for spread and samples, of numbers;
 * integer: counts). nullable: null is allowed and read as NAN (a spread
 * that is not known). */
static sc_status list_of(const sc_jv *v, const char *key, int S, const char *per, int integer,
                         int nullable, double *out, char *err, size_t errlen)
{
    if (v->type != SC_JARR)
        return sc_errbuf(err, errlen, "'%s': expected a list of %d times (one per %s), found %s",
                   key, S, per, sc_jv_typename(v->type));
    if ((int)v->len != S)
        return sc_errbuf(err, errlen, "'%s': %zu values for %d %ss ('%ss' is %d)", key, v->len, S, per,
                   per, S);
    for (int s = 0; s < S; s++) {
        char what[64];
        snprintf(what, sizeof what, "'%s'[%d]", key, s);
        if (nullable && v->item[s]->type == SC_JNULL) {
            out[s] = NAN;
            continue;
        }
        sc_status st = time_of(v->item[s], what, &out[s], err, errlen);
        if (st)
            return st;
        if (integer && out[s] != floor(out[s]))
            return sc_errbuf(err, errlen, "%s: expected a count of samples", what);
    }
    return SC_OK;
}

/* transfers and host_copies: lists of {bytes, s, spread, samples[, direction]}. */
static sc_status sizes(const sc_jv *v, const char *key, int host, sc_cost_size **out, int *n,
                       char *err, size_t errlen)
{
    if (v->type != SC_JARR)
        return sc_errbuf(err, errlen, "'%s': expected a list of objects", key);
    if (!(*out = calloc(v->len + 1, sizeof **out)))
        return SC_ERR_NOMEM;
    *n = (int)v->len;
    for (size_t i = 0; i < v->len; i++) {
        const sc_jv *e = v->item[i];
        sc_cost_size *z = &(*out)[i];
        char what[64];
        if (e->type != SC_JOBJ)
            return sc_errbuf(err, errlen, "'%s'[%zu]: expected an object", key, i);
        snprintf(what, sizeof what, "'%s'[%zu].bytes", key, i);
        sc_status st = time_of(sc_jv_get(e, "bytes"), what, &z->bytes, err, errlen);
        snprintf(what, sizeof what, "'%s'[%zu].s", key, i);
        if (!st)
            st = time_of(sc_jv_get(e, "s"), what, &z->t.median, err, errlen);
        z->t.spread = NAN;
        const sc_jv *sp = sc_jv_get(e, "spread"), *sm = sc_jv_get(e, "samples");
        snprintf(what, sizeof what, "'%s'[%zu].spread", key, i);
        if (!st && sp && sp->type != SC_JNULL) /* null: not known */
            st = time_of(sp, what, &z->t.spread, err, errlen);
        snprintf(what, sizeof what, "'%s'[%zu].samples", key, i);
        double nn = 1;
        if (!st && sm)
            st = time_of(sm, what, &nn, err, errlen);
        z->t.n = (int)fmin(nn, 1e9);
        if (st)
            return st;
        if (host) {
            const sc_jv *dir = sc_jv_get(e, "direction");
            if (!dir || dir->type != SC_JSTR ||
                (strcmp(dir->str, "to_host") && strcmp(dir->str, "to_device")))
                return sc_errbuf(err, errlen, "'%s'[%zu].direction: expected \"to_host\" or "
                           "\"to_device\"", key, i);
            z->to_host = strcmp(dir->str, "to_host") == 0;
        }
    }
    return SC_OK;
}

static const char *str_of(const sc_jv *o, const char *key)
{
    const sc_jv *v = sc_jv_get(o, key);
    return v && v->type == SC_JSTR ? v->str : NULL;
}

/* One kind's list of n medians (per stage or device) at v, with its
 * spread and samples when the file has them, into out[n] (x: scratch). */
static sc_status read_kind(const sc_jv *v, const sc_jv *spread, const sc_jv *samples,
                           const char *key, int n, const char *per, sc_stat *out, double *x,
                           char *err, size_t errlen)
{
    sc_status st;
    if ((st = list_of(v, key, n, per, 0, 0, x, err, errlen)) != SC_OK)
        return st;
    for (int s = 0; s < n; s++)
        out[s] = (sc_stat){x[s], NAN, 1};
    char name[32];
    const sc_jv *sp = sc_jv_get(spread, key), *sm = sc_jv_get(samples, key);
    snprintf(name, sizeof name, "spread.%s", key);
    if (sp && (st = list_of(sp, name, n, per, 0, 1, x, err, errlen)) != SC_OK)
        return st;
    for (int s = 0; sp && s < n; s++)
        out[s].spread = x[s];
    snprintf(name, sizeof name, "samples.%s", key);
    if (sm && (st = list_of(sm, name, n, per, 1, 0, x, err, errlen)) != SC_OK)
        return st;
    for (int s = 0; sm && s < n; s++) /* a time given was measured at least once */
        out[s].n = (int)fmax(1, fmin(x[s], 1e9));
    return SC_OK;
}

/* What makes root a cost file of this version: one object of known
 * fields, version and unit. SC_OK, or the message. */
static sc_status check_head(const sc_jv *root, char *err, size_t errlen)
{
    if (!root || root->type != SC_JOBJ)
        return sc_errbuf(err, errlen, "a cost file is one JSON object, this is %s",
                   root ? sc_jv_typename(root->type) : "empty");
    if (sc_jv_get(root, "traceEvents"))
        return sc_errbuf(err, errlen, "a torch.profiler trace, not a cost file (stagecraft costs "
                         "--from-trace TRACE.json... -o FILE makes one of it)");
    for (size_t i = 0; i < root->len; i++) {
        int known = 0;
        for (int k = 0; known_keys[k] && !known; k++)
            known = strcmp(root->keys[i], known_keys[k]) == 0;
        if (!known)
            return sc_errbuf(err, errlen, "unknown field '%s' (a cost file has stagecraft_costs, unit, "
                       "devices, stages, placement, tf, tb, tw, tbw, optim, tfb, dispatch, combine, "
                       "tcomm, fsdp_time, "
                       "reduce_time, ts, tt, te, "
                       "tew, collectives, tokens, t*_per_token, t*_per_token2, spread, samples, transfers, host_copies, offload_ratio, "
                       "measured)",
                       root->keys[i]);
    }
    const sc_jv *ver = sc_jv_get(root, "stagecraft_costs");
    if (!ver)
        return sc_errbuf(err, errlen, "'stagecraft_costs' is missing (not a cost file of "
                   "stagecraft run --profile?)");
    if (ver->type != SC_JNUM || ver->num != SC_COSTS_VERSION)
        return sc_errbuf(err, errlen, "'stagecraft_costs': version %g is not known (this stagecraft "
                   "reads version %d)", ver->type == SC_JNUM ? ver->num : NAN, SC_COSTS_VERSION);
    const sc_jv *unit = sc_jv_get(root, "unit");
    if (!unit || unit->type != SC_JSTR || strcmp(unit->str, "s") != 0)
        return sc_errbuf(err, errlen, "'unit': expected \"s\" (times are seconds)%s",
                   unit ? "" : ", and it is missing");
    return SC_OK;
}

/* The fields of root besides the per-stage and per-device times into c (S
 * stages, P devices or 0): communication, collectives, offload, the
 * placement, the sizes of transfers and host copies, what was measured.
 * SC_OK, or the failure (SC_ERR_NOMEM without a message). */
static sc_status read_rest(const sc_jv *root, sc_costs *c, int S, int P, char *err, size_t errlen)
{
    sc_status st;
    const sc_jv *v;
    c->comm = (sc_stat){0, NAN, 0};
    c->gather = c->reduce = (sc_stat){NAN, NAN, 0};
    if ((v = sc_jv_get(root, "tcomm")) &&
        (st = time_of(v, "'tcomm'", &c->comm.median, err, errlen)) != SC_OK)
        return st;
    if ((v = sc_jv_get(root, "fsdp_time")) &&
        (st = time_of(v, "'fsdp_time'", &c->gather.median, err, errlen)) != SC_OK)
        return st;
    if ((v = sc_jv_get(root, "reduce_time")) &&
        (st = time_of(v, "'reduce_time'", &c->reduce.median, err, errlen)) != SC_OK)
        return st;
    c->gather.n = isfinite(c->gather.median), c->reduce.n = isfinite(c->reduce.median);
    if ((v = sc_jv_get(root, "collectives"))) {
        double n = 1;
        if (v->type != SC_JOBJ ||
            (st = time_of(sc_jv_get(v, "latency"), "'collectives'.latency", &c->coll_lat, err,
                          errlen)) != SC_OK ||
            (st = time_of(sc_jv_get(v, "per_byte"), "'collectives'.per_byte", &c->coll_per_byte,
                          err, errlen)) != SC_OK ||
            (sc_jv_get(v, "samples") &&
             (st = time_of(sc_jv_get(v, "samples"), "'collectives'.samples", &n, err, errlen)))) {
            if (v->type != SC_JOBJ)
                st = sc_errbuf(err, errlen, "'collectives': expected an object {latency, per_byte, "
                         "samples}");
            return st;
        }
        c->coll_n = (int)fmax(1, fmin(n, 1e9));
    }
    if ((v = sc_jv_get(root, "offload_ratio")) &&
        (st = time_of(v, "'offload_ratio'", &c->offload_ratio, err, errlen)) != SC_OK)
        return st;
    if ((v = sc_jv_get(root, "placement"))) {
        if (v->type != SC_JARR || (int)v->len != S)
            return sc_errbuf(err, errlen, "'placement': expected a list of %d devices (one per "
                             "stage)", S);
        if (!(c->placement = malloc((size_t)S * sizeof(int))))
            return SC_ERR_NOMEM;
        for (int s = 0; s < S; s++) {
            char what[32];
            snprintf(what, sizeof what, "placement[%d]", s);
            if ((st = int_of(v->item[s], what, 0, P > 0 ? P - 1 : SC_MAX_DEVICES, &c->placement[s],
                             err, errlen)) != SC_OK)
                return st;
        }
    }
    if ((v = sc_jv_get(root, "transfers")) &&
        (st = sizes(v, "transfers", 0, &c->xfer, &c->nxfer, err, errlen)) != SC_OK)
        return st;
    if ((v = sc_jv_get(root, "host_copies")) &&
        (st = sizes(v, "host_copies", 1, &c->host, &c->nhost, err, errlen)) != SC_OK)
        return st;
    if ((v = sc_jv_get(root, "measured"))) {
        if (v->type != SC_JOBJ)
            return sc_errbuf(err, errlen, "'measured': expected an object");
        c->recipe = str_of(v, "recipe");
        c->backend = str_of(v, "backend");
        c->transport = str_of(v, "transport");
        c->machine = str_of(v, "machine");
        c->clock = str_of(v, "clock");
    }
    return SC_OK;
}

sc_status sc_costs_from_json(const sc_jv *root, sc_costs *c, char *err, size_t errlen)
{
    memset(c, 0, sizeof *c);
    sc_status st = check_head(root, err, errlen);
    if (st)
        return st;
    int S = 0, P = 0;
    if (!sc_jv_get(root, "stages"))
        return sc_errbuf(err, errlen, "'stages' is missing");
    if ((st = int_of(sc_jv_get(root, "stages"), "stages", 1, SC_MAX_STAGES, &S, err, errlen)) ||
        (sc_jv_get(root, "devices") &&
         (st = int_of(sc_jv_get(root, "devices"), "devices", 1, SC_MAX_DEVICES, &P, err, errlen))))
        return st;
    if ((st = sc_costs_init(c, P, S)) != SC_OK)
        return sc_errbuf(err, errlen, "out of memory");
    double *x = malloc((size_t)S * sizeof(double));
    if (!x) {
        st = SC_ERR_NOMEM;
        goto fail;
    }
    const sc_jv *spread = sc_jv_get(root, "spread"), *samples = sc_jv_get(root, "samples");
    if ((spread && spread->type != SC_JOBJ) || (samples && samples->type != SC_JOBJ)) {
        st = sc_errbuf(err, errlen, "'%s': expected an object of per-stage lists",
                 spread && spread->type != SC_JOBJ ? "spread" : "samples");
        goto fail;
    }
    for (int k = 0; k < SC_COST_KINDS; k++) {
        const char *key = sc_cost_keys[k];
        const sc_jv *v = sc_jv_get(root, key);
        if (!v) {
            if (k <= SC_COST_W) {
                st = sc_errbuf(err, errlen, "'%s' is missing (the %s time of every stage)", key,
                         k == SC_COST_F ? "forward" : k == SC_COST_B ? "input-gradient"
                                                                     : "weight-gradient");
                goto fail;
            }
            continue;
        }
        if ((st = read_kind(v, spread, samples, key, S, "stage", c->kind[k], x, err, errlen)))
            goto fail;
    }
    const sc_jv *fb = sc_jv_get(root, "tfb"); /* per stage: an overlapped pair */
    if (fb && !(c->tfb = malloc((size_t)S * sizeof *c->tfb))) {
        st = SC_ERR_NOMEM;
        goto fail;
    }
    if (fb && (st = read_kind(fb, spread, samples, "tfb", S, "stage", c->tfb, x, err, errlen)))
        goto fail;
    for (int k = 0; k < 2; k++) { /* per stage: expert parallelism's all-to-alls */
        const sc_jv *v = sc_jv_get(root, sc_cost_a2a_keys[k]);
        if (v && !(c->a2a[k] = malloc((size_t)S * sizeof *c->a2a[k]))) {
            st = SC_ERR_NOMEM;
            goto fail;
        }
        if (v && (st = read_kind(v, spread, samples, sc_cost_a2a_keys[k], S, "stage", c->a2a[k],
                                 x, err, errlen)))
            goto fail;
    }
    for (int k = 0; k < SC_COST_VOCAB; k++) { /* per device: the vocabulary passes */
        const char *key = sc_cost_vocab_keys[k];
        const sc_jv *v = sc_jv_get(root, key);
        if (!v)
            continue;
        if (P < 1) {
            st = sc_errbuf(err, errlen, "'%s' holds one time per device: 'devices' is missing", key);
            goto fail;
        }
        double *xd = realloc(x, (size_t)(P > S ? P : S) * sizeof(double));
        if (!xd || (x = xd, sc_costs_init_vocab(c)) != SC_OK) {
            st = SC_ERR_NOMEM;
            goto fail;
        }
        if ((st = read_kind(v, spread, samples, key, P, "device", c->vocab[k], x, err, errlen)))
            goto fail;
    }
    if ((st = read_rest(root, c, S, P, err, errlen)) != SC_OK ||
        (st = sc_costs_read_tok(root, c, err, errlen)) != SC_OK)
        goto fail;
    free(x);
    return SC_OK;
fail:
    if (st == SC_ERR_NOMEM)
        sc_errbuf(err, errlen, "out of memory");
    free(x);
    sc_costs_free(c);
    return st;
}

/* ---- writing ----------------------------------------------------------- */

/* Times: 9 significant digits (more than the measurement holds), null when
 * not measured. */
static void num(sc_jw *w, const char *key, double x) { sc_jw_num_g(w, key, x, 9); }

/* A per-stage list of one field of the stats. */
static void stage_row(sc_jw *w, const char *key, const sc_stat *v, int S, int field)
{
    sc_jw_array(w, key);
    for (int s = 0; s < S; s++) {
        if (field == 2)
            sc_jw_int(w, NULL, v[s].n);
        else
            num(w, NULL, field ? v[s].spread : v[s].median);
    }
    sc_jw_end(w);
}

/* Whether a kind was measured on every stage (only those are written). */
static int complete(const sc_stat *v, int S)
{
    for (int s = 0; s < S; s++)
        if (v[s].n < 1 || !isfinite(v[s].median))
            return 0;
    return 1;
}

static void sizes_out(sc_jw *w, const char *key, const sc_cost_size *z, int n, int host)
{
    sc_jw_array(w, key); /* a size a line */
    sc_jw_layout(w, "\n    ", ",\n    ", "\n  ");
    for (int i = 0; i < n; i++) {
        sc_jw_object(w, NULL);
        if (host)
            sc_jw_str(w, "direction", z[i].to_host ? "to_host" : "to_device");
        sc_jw_whole(w, "bytes", z[i].bytes);
        num(w, "s", z[i].t.median);
        num(w, "spread", z[i].t.spread);
        sc_jw_int(w, "samples", z[i].t.n);
        sc_jw_end(w);
    }
    sc_jw_end(w);
}

static void str_field(sc_jw *w, const char *key, const char *v)
{
    if (v)
        sc_jw_str(w, key, v);
}

/* Where it was measured: one line. */
static void measured(sc_jw *w, const sc_costs *c)
{
    sc_jw_object(w, "measured");
    sc_jw_str(w, "what", c->what ? c->what : "stagecraft run --profile");
    if (c->files) {
        sc_jw_array(w, "files");
        for (int i = 0; i < c->nfiles; i++)
            sc_jw_str(w, NULL, c->files[i]);
        sc_jw_end(w);
    }
    str_field(w, "recipe", c->recipe);
    str_field(w, "backend", c->backend);
    str_field(w, "transport", c->transport);
    sc_jw_str(w, "devices_as", c->devices_as ? c->devices_as : c->mpi ? "MPI ranks" : "threads");
    str_field(w, "clock", c->clock);
    str_field(w, "machine", c->machine);
    if (c->model) {
        sc_jw_object(w, "model");
        for (int i = 0; i < c->nmodel; i++)
            sc_jw_int(w, c->model[i].key, c->model[i].value);
        sc_jw_end(w);
    }
    if (c->unit_bytes > 0) /* caps in bytes (docs/guide.md#memory-model) */
        num(w, "unit_bytes", c->unit_bytes);
    sc_jw_int(w, "microbatches", c->m);
    if (c->warmup >= 0)
        sc_jw_int(w, "warmup_steps", c->warmup);
    sc_jw_int(w, "steps", c->steps);
    if (c->fsdp >= 0)
        sc_jw_bool(w, "fsdp", c->fsdp);
    sc_costs_write_tok_fit(w, c); /* per-token costs fitted to the profile */
    num(w, "step_time_s", c->step.median);
    num(w, "step_time_spread_s", c->step.spread);
    if (c->what && !isfinite(c->predicted_step)) { /* another source: nothing predicted */
        sc_jw_end(w);
        return;
    }
    num(w, "predicted_step_time_s", c->predicted_step);
    num(w, "prediction_error", isfinite(c->predicted_step) && c->predicted_step > 0
                                   ? (c->step.median - c->predicted_step) / c->predicted_step
                                   : NAN);
    sc_jw_end(w);
}

sc_status sc_costs_write(FILE *f, const sc_costs *c)
{
    int S = c->S;
    sc_jw w;
    sc_jw_init(&w, f);
    sc_jw_object(&w, NULL); /* a member a line */
    sc_jw_layout(&w, "\n  ", ",\n  ", "\n");
    sc_jw_int(&w, "stagecraft_costs", SC_COSTS_VERSION);
    sc_jw_str(&w, "unit", "s");
    if (c->P > 0)
        sc_jw_int(&w, "devices", c->P);
    sc_jw_int(&w, "stages", S);
    if (c->placement)
        sc_jw_ints(&w, "placement", c->placement, S);
    for (int k = 0; k < SC_COST_KINDS; k++)
        if (complete(c->kind[k], S))
            stage_row(&w, sc_cost_keys[k], c->kind[k], S, 0);
    if (c->tfb)
        stage_row(&w, "tfb", c->tfb, S, 0);
    for (int k = 0; k < 2; k++)
        if (c->a2a[k])
            stage_row(&w, sc_cost_a2a_keys[k], c->a2a[k], S, 0);
    num(&w, "tcomm", isfinite(c->comm.median) ? c->comm.median : 0);
    if (c->gather.n > 0)
        num(&w, "fsdp_time", c->gather.median);
    if (c->reduce.n > 0)
        num(&w, "reduce_time", c->reduce.median);
    for (int k = 0; k < SC_COST_VOCAB && c->P > 0; k++)
        if (c->vocab[k] && complete(c->vocab[k], c->P))
            stage_row(&w, sc_cost_vocab_keys[k], c->vocab[k], c->P, 0);
    sc_costs_write_tok(&w, c); /* per-token costs, when fitted */
    if (c->coll_n > 0) {
        sc_jw_object(&w, "collectives");
        num(&w, "latency", c->coll_lat);
        num(&w, "per_byte", c->coll_per_byte);
        sc_jw_int(&w, "samples", c->coll_n);
        sc_jw_end(&w);
    }
    for (int field = 1; field <= 2; field++) {
        sc_jw_object(&w, field == 1 ? "spread" : "samples"); /* a kind a line */
        sc_jw_layout(&w, "\n    ", ",\n    ", "\n  ");
        for (int k = 0; k < SC_COST_KINDS; k++)
            if (complete(c->kind[k], S))
                stage_row(&w, sc_cost_keys[k], c->kind[k], S, field);
        if (c->tfb)
            stage_row(&w, "tfb", c->tfb, S, field);
        for (int k = 0; k < 2; k++)
            if (c->a2a[k])
                stage_row(&w, sc_cost_a2a_keys[k], c->a2a[k], S, field);
        for (int k = 0; k < SC_COST_VOCAB && c->P > 0; k++)
            if (c->vocab[k] && complete(c->vocab[k], c->P))
                stage_row(&w, sc_cost_vocab_keys[k], c->vocab[k], c->P, field);
        if (field == 1)
            num(&w, "tcomm", c->comm.spread);
        else
            sc_jw_int(&w, "tcomm", c->comm.n);
        const sc_stat *fs[2] = {&c->gather, &c->reduce};
        for (int k = 0; k < 2; k++)
            if (fs[k]->n > 0 && field == 1)
                num(&w, k ? "reduce_time" : "fsdp_time", fs[k]->spread);
            else if (fs[k]->n > 0)
                sc_jw_int(&w, k ? "reduce_time" : "fsdp_time", fs[k]->n);
        sc_jw_end(&w);
    }
    sizes_out(&w, "transfers", c->xfer, c->nxfer, 0);
    sizes_out(&w, "host_copies", c->host, c->nhost, 1);
    if (isfinite(c->offload_ratio))
        num(&w, "offload_ratio", c->offload_ratio);
    measured(&w, c);
    sc_jw_end(&w);
    fputc('\n', f);
    return ferror(f) ? SC_ERR_ARG : SC_OK;
}
