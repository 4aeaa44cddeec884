/*
 * partition.c — layers into stages, and the split's formats (partition.h).
 */
#include "plan/partition.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir/alloc.h"

static int known(char k) { return k == 'E' || k == 't' || k == 'm' || k == 'L'; }

int sc_layers_parse(const char *spec, sc_layers *ly, char *err, size_t errlen)
{
    ly->n = 0;
    const char *p = spec;
    while (*p) {
        char k = *p++;
        long count = 1;
        double wt = 1;
        char *end;
        if (!known(k)) {
            snprintf(err, errlen, "layers '%s': '%c' is not a layer (E, t, m or L)", spec, k);
            return -1;
        }
        if (*p == '*') {
            count = strtol(p + 1, &end, 10);
            if (end == p + 1 || count < 1) {
                snprintf(err, errlen, "layers '%s': '*' needs a count >= 1", spec);
                return -1;
            }
            p = end;
        }
        if (*p == ':') {
            wt = strtod(p + 1, &end);
            if (end == p + 1 || !(wt > 0) || !isfinite(wt)) {
                snprintf(err, errlen, "layers '%s': ':' needs a weight > 0", spec);
                return -1;
            }
            p = end;
        }
        if (*p == ',')
            p++;
        else if (*p) {
            snprintf(err, errlen, "layers '%s': expected ',' before '%c'", spec, *p);
            return -1;
        }
        if (count > SC_LAYERS_MAX - ly->n) {
            snprintf(err, errlen, "layers '%s': more than %d layers", spec, SC_LAYERS_MAX);
            return -1;
        }
        for (long i = 0; i < count; i++) {
            ly->kind[ly->n] = k;
            ly->weight[ly->n++] = wt;
        }
    }
    if (ly->n == 0) {
        snprintf(err, errlen, "layers '%s': no layer", spec);
        return -1;
    }
    return 0;
}

double sc_part_weight(const sc_layers *ly, const int *first, int s)
{
    double x = 0;
    for (int i = first[s]; i < first[s + 1]; i++)
        x += ly->weight[i];
    return x;
}

static double heaviest(const sc_layers *ly, int S, const int *first)
{
    double h = 0;
    for (int s = 0; s < S; s++)
        h = fmax(h, sc_part_weight(ly, first, s));
    return h;
}

double sc_part_best(const sc_layers *ly, int S, int *first)
{
    int n = ly->n;
    if (S < 1 || S > n)
        return -1;
    /* best[s][j]: the smallest heaviest stage of the first j layers in s+1
     * stages; from[s][j]: where its last stage begins. */
    double *pre = sc_calloc((size_t)n + 1, sizeof *pre);
    double *best = sc_calloc((size_t)S * (size_t)(n + 1), sizeof *best);
    int *from = sc_calloc((size_t)S * (size_t)(n + 1), sizeof *from);
    if (!pre || !best || !from) {
        sc_free(pre), sc_free(best), sc_free(from);
        return -1;
    }
    for (int i = 0; i < n; i++)
        pre[i + 1] = pre[i] + ly->weight[i];
#define B(s, j) best[(size_t)(s) * (size_t)(n + 1) + (size_t)(j)]
#define F(s, j) from[(size_t)(s) * (size_t)(n + 1) + (size_t)(j)]
    for (int j = 0; j <= n; j++)
        B(0, j) = j ? pre[j] : INFINITY;
    for (int s = 1; s < S; s++)
        for (int j = 0; j <= n; j++) {
            B(s, j) = INFINITY;
            for (int i = s; i < j; i++) { /* the last stage: layers i .. j-1 */
                double x = fmax(B(s - 1, i), pre[j] - pre[i]);
                if (x < B(s, j) - 1e-12) {
                    B(s, j) = x;
                    F(s, j) = i;
                }
            }
        }
    /* Among the splits with that heaviest stage, the most even one: the
     * least sum of squared stage weights with every stage within it (a
     * second pass; exact, as the constraint keeps it a shortest path). */
    double top = B(S - 1, n) * (1 + 1e-12) + 1e-12;
    for (int j = 0; j <= n; j++)
        B(0, j) = j && pre[j] <= top ? pre[j] * pre[j] : INFINITY;
    for (int s = 1; s < S; s++)
        for (int j = 0; j <= n; j++) {
            B(s, j) = INFINITY;
            for (int i = j - 1; i >= s && pre[j] - pre[i] <= top; i--) {
                double w = pre[j] - pre[i], x = B(s - 1, i) + w * w;
                if (x < B(s, j) - 1e-12 * fmax(1, x)) {
                    B(s, j) = x;
                    F(s, j) = i;
                }
            }
        }
    first[S] = n;
    for (int s = S - 1, j = n; s > 0; s--)
        j = first[s] = F(s, j);
    first[0] = 0;
#undef B
#undef F
    sc_free(pre), sc_free(best), sc_free(from);
    return heaviest(ly, S, first);
}

double sc_part_even(const sc_layers *ly, int S, int *first)
{
    int body = 0;
    for (int i = 0; i < ly->n; i++)
        body += ly->kind[i] == 't' || ly->kind[i] == 'm';
    if (S < 1 || body < S)
        return -1;
    /* Stage s ends after its share of the body: body/S, the first body%S
     * stages one more; E joins the first stage, L the last. */
    int seen = 0, s = 0, want = body / S + (body % S > 0);
    first[0] = 0;
    for (int i = 0; i < ly->n && s < S - 1; i++) {
        if (ly->kind[i] != 't' && ly->kind[i] != 'm')
            continue;
        if (seen == want) {
            first[++s] = i;
            seen = 0;
            want = body / S + (body % S > s);
        }
        seen++;
    }
    first[S] = ly->n;
    return heaviest(ly, S, first);
}

void sc_part_layout(const sc_layers *ly, int S, const int *first, char *buf, size_t len)
{
    size_t at = 0;
    buf[0] = 0;
    for (int s = 0; s < S && at < len; s++) {
        if (s)
            at += (size_t)snprintf(buf + at, len - at, "|");
        for (int i = first[s]; i < first[s + 1] && at < len;) {
            int j = i;
            while (j < first[s + 1] && ly->kind[j] == ly->kind[i])
                j++;
            if (j - i > 1)
                at += (size_t)snprintf(buf + at, len - at, "%c*%d", ly->kind[i], j - i);
            else
                at += (size_t)snprintf(buf + at, len - at, "%c", ly->kind[i]);
            i = j;
        }
    }
}

/* Megatron's unrolling: "(...)*N" first (innermost parentheses, as its
 * regular expression matches no ')' inside), then "X*N"; commas dropped.
 * Into out (room len); -1 when it does not fit or is malformed. */
static int unroll(const char *s, char *out, size_t len, char *err, size_t errlen)
{
    char *a = sc_malloc(len), *b = sc_malloc(len);
    int rc = -1;
    if (!a || !b)
        goto done;
    size_t n = 0;
    for (const char *p = s; *p; p++)
        if (*p != ',' && !isspace((unsigned char)*p)) {
            if (n + 1 >= len)
                goto big;
            a[n++] = *p;
        }
    a[n] = 0;
    for (int pass = 0; pass < 2; pass++) {
        for (;;) {
            char *hit = NULL, *close = NULL;
            if (pass == 0) { /* the first "(x)*N" with no '(' or ')' inside */
                for (char *p = a; *p && !hit; p++)
                    if (*p == '(') {
                        char *q = p + 1;
                        while (*q && *q != ')' && *q != '(')
                            q++;
                        if (*q == ')' && q > p + 1 && q[1] == '*' && isdigit((unsigned char)q[2]))
                            hit = p, close = q;
                    }
            } else {
                for (char *p = a + 1; *p && !hit; p++)
                    if (*p == '*' && isdigit((unsigned char)p[1]))
                        hit = p - 1, close = p - 1;
            }
            if (!hit)
                break;
            char *end;
            long k = strtol(close + 2, &end, 10);
            const char *body = pass == 0 ? hit + 1 : hit;
            size_t bl = (size_t)(close - body) + (pass == 1);
            size_t pre = (size_t)(hit - a), rest = strlen(end);
            if (k < 0 || (k && bl > (len - 1 - pre - rest) / (size_t)k))
                goto big;
            memcpy(b, a, pre);
            for (long i = 0; i < k; i++)
                memcpy(b + pre + (size_t)i * bl, body, bl);
            memcpy(b + pre + (size_t)k * bl, end, rest + 1);
            char *t = a;
            a = b, b = t;
        }
    }
    if (strpbrk(a, "()*")) {
        snprintf(err, errlen, "layout '%.60s': unbalanced '(' or a '*' without a count", s);
        goto done;
    }
    snprintf(out, len, "%s", a);
    rc = 0;
    goto done;
big:
    snprintf(err, errlen, "layout '%.60s': more than %d layers", s, SC_LAYERS_MAX);
done:
    sc_free(a), sc_free(b);
    return rc;
}

int sc_part_parse_layout(const char *s, sc_layers *ly, int *first, char *err, size_t errlen)
{
    size_t len = 2 * SC_LAYERS_MAX + 2;
    char *u = sc_malloc(len);
    if (!u) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    int S = -1;
    if (unroll(s, u, len, err, errlen))
        goto done;
    ly->n = 0;
    S = 0;
    first[0] = 0;
    for (const char *p = u;; p++) {
        if (*p == '|' || !*p) {
            first[++S] = ly->n;
            if (!*p)
                break;
            continue;
        }
        if (!known(*p)) {
            snprintf(err, errlen, "layout '%.60s': '%c' is not a layer (E, t, m or L)", s, *p);
            S = -1;
            goto done;
        }
        if (ly->n == SC_LAYERS_MAX) {
            snprintf(err, errlen, "layout '%.60s': more than %d layers", s, SC_LAYERS_MAX);
            S = -1;
            goto done;
        }
        ly->kind[ly->n] = *p;
        ly->weight[ly->n++] = 1;
    }
done:
    sc_free(u);
    return S;
}

void sc_part_torchtitan(const sc_layers *ly, int S, const int *first, sc_jw *w, const char *key,
                        const char *key2)
{
    char name[32];
    int t = 0, split = 1;
    sc_jw_array(w, key);
    for (int s = 0; s < S; s++) {
        sc_jw_array(w, NULL);
        for (int i = first[s]; i < first[s + 1]; i++) {
            switch (ly->kind[i]) {
            case 'E': sc_jw_str(w, NULL, "tok_embeddings"); break;
            case 'L': sc_jw_str(w, NULL, "norm"); sc_jw_str(w, NULL, "output"); break;
            default: snprintf(name, sizeof name, "layers.%d", t++); sc_jw_str(w, NULL, name);
            }
        }
        sc_jw_end(w);
        if (s && ly->kind[first[s]] != 't' && ly->kind[first[s]] != 'm')
            split = 0;
    }
    sc_jw_end(w);
    if (!split) {
        sc_jw_null(w, key2);
        return;
    }
    sc_jw_array(w, key2);
    for (int s = 1, i = 0, k = 0; s < S; s++) {
        for (; i < first[s]; i++)
            k += ly->kind[i] == 't' || ly->kind[i] == 'm';
        snprintf(name, sizeof name, "layers.%d", k);
        sc_jw_str(w, NULL, name);
    }
    sc_jw_end(w);
}

void sc_part_costs(const sc_layers *ly, int S, int P, const int *first, double tf, double tb,
                   double tw, double tcomm, sc_jw *w)
{
    double total = 0, *x = sc_calloc((size_t)S, sizeof *x);
    if (!x)
        return;
    for (int i = 0; i < ly->n; i++)
        total += ly->weight[i];
    sc_jw_object(w, NULL);
    sc_jw_int(w, "stagecraft_costs", 1);
    sc_jw_str(w, "unit", "s");
    sc_jw_int(w, "stages", S);
    const double base[3] = {tf, tb, tw};
    const char *names[3] = {"tf", "tb", "tw"};
    for (int k = 0; k < 3; k++) {
        for (int s = 0; s < S; s++)
            x[s] = base[k] * P * sc_part_weight(ly, first, s) / total;
        sc_jw_nums_g(w, names[k], x, S, 17);
    }
    sc_jw_num(w, "tcomm", tcomm);
    sc_jw_end(w);
    sc_free(x);
}
