/*
 * test_interchange.c — PyTorch CSV round trips (torchcsv.h) of the rules and
 * of random programs with random placements (local hand-offs included), in
 * both dialects and with the old letters; the JSON, trace and SVG writers.
 */
#include "compile.h"
#include "harness.h"
#include "interp_util.h"
#include "formats/json.h"
#include "formats/svg.h"
#include "formats/torchcsv.h"
#include "formats/trace.h"
#include "ir/p2p.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static unsigned long rng = 12345;
static int rnd(int n)
{
    rng = rng * 6364136223846793005UL + 1442695040888963407UL;
    return (int)((rng >> 33) % (unsigned long)n);
}

/* Writes pg in the dialect into a malloc'd string. */
static char *write_csv(sc_prog *pg, sc_torch_dialect d, size_t *len)
{
    char *s = NULL;
    FILE *f = open_memstream(&s, len);
    sc_status st = sc_torchcsv_write(f, pg, d, SC_TORCH_CURRENT);
    fclose(f);
    CHECK(st == SC_OK);
    if (st)
        fprintf(stderr, "  write: %s\n", sc_errmsg(pg));
    return s;
}

/* Whether b without its WAITs (an import keeps PyTorch's waits) is a. */
static int same_but_waits(const sc_instr *a, size_t na, const sc_instr *b, size_t nb)
{
    size_t k = 0;
    for (size_t i = 0; i < nb; i++) {
        if (sc_op_class_of(b[i].op) == SC_OPK_WAIT)
            continue;
        if (k >= na || a[k].op != b[i].op || a[k].stage != b[i].stage || a[k].mb != b[i].mb ||
            (sc_op_is_transfer(a[k].op) && (a[k].dir != b[i].dir || a[k].peer != b[i].peer)))
            return 0;
        k++;
    }
    return k == na;
}

static int same_seq(const sc_instr *a, size_t na, const sc_instr *b, size_t nb)
{
    if (na != nb)
        return 0;
    for (size_t k = 0; k < na; k++)
        if (a[k].op != b[k].op || a[k].stage != b[k].stage || a[k].mb != b[k].mb ||
            (sc_op_is_transfer(a[k].op) && (a[k].dir != b[k].dir || a[k].peer != b[k].peer)))
            return 0;
    return 1;
}

/* Old PyTorch letters: I -> B, B (full) -> BW. */
static char *old_letters(const char *text)
{
    char *o = malloc(2 * strlen(text) + 1), *p = o;
    for (const char *s = text; *s; s++) {
        int after_digit = s > text && s[-1] >= '0' && s[-1] <= '9';
        if (after_digit && *s == 'I')
            *p++ = 'B';
        else if (after_digit && *s == 'B' && s[1] >= '0' && s[1] <= '9')
            *p++ = 'B', *p++ = 'W';
        else
            *p++ = *s;
    }
    *p = 0;
    return o;
}

/* Cell `cell` (from 1) of row `row` (from 1) of CSV text into buf ("" past
 * the end). */
static void csv_cell(const char *text, int row, int cell, char *buf, size_t len)
{
    const char *p = text;
    for (int r = 1; r < row && p; r++)
        p = (p = strchr(p, '\n')) ? p + 1 : NULL;
    for (int c = 1; c < cell && p && *p && *p != '\n'; c++)
        p = (p = strpbrk(p, ",\n")) && *p == ',' ? p + 1 : NULL;
    size_t n = p ? strcspn(p, ",\n") : 0;
    n = n < len - 1 ? n : len - 1;
    memcpy(buf, p ? p : "", n);
    buf[n] = 0;
}

/* Every transfer of a compute_comms file read knows its cell, which holds
 * its token (the messages name cells so: docs/modes.md#crossing-cells). */
static void check_cells(const sc_prog *q, const char *text)
{
    for (int d = 0; d < sc_prog_devices(q); d++) {
        size_t n;
        const sc_instr *v = sc_prog_stream(q, d, &n);
        for (size_t k = 0; k < n; k++) {
            if (v[k].op != SC_OP_SEND && v[k].op != SC_OP_RECV)
                continue;
            char tok[48], cell[48];
            sc_transfer_token(&v[k], tok, sizeof tok);
            csv_cell(text, d + 1, sc_prog_cell(q, d, k), cell, sizeof cell);
            CHECK(sc_prog_cell(q, d, k) > 0 && strcmp(tok, cell) == 0);
        }
    }
}

/* The program survives both dialects (and old letters) unchanged. */
static void roundtrip(sc_prog *pg, const char *what)
{
    int P = sc_prog_devices(pg), f0 = harness_fail;
    size_t len;
    char err[512];
    sc_status st;
    sc_torch_dialect dia;
    char *csv = write_csv(pg, SC_TORCH_COMPUTE_ONLY, &len);
    for (int old = 0; old < 2 && csv; old++) {
        char *text = old ? old_letters(csv) : csv;
        if (old) /* the old letters are in play: no I left */
            CHECK(!strchr(text, 'I') && (!strchr(csv, 'I') || strcmp(text, csv) != 0));
        sc_prog *q = sc_torchcsv_read(text, strlen(text), &dia, &st, err, sizeof err);
        CHECK(q && dia == SC_TORCH_COMPUTE_ONLY);
        if (!q)
            fprintf(stderr, "  %s: %s\n%s", what, err, text);
        for (int d = 0; q && d < P; d++) {
            size_t na, nb;
            const sc_instr *a = sc_prog_order(pg, d, &na), *b = sc_prog_order(q, d, &nb);
            CHECK(same_seq(a, na, b, nb));
            CHECK(sc_prog_stage_device(q, sc_prog_stage_of(pg, d, 0)) == d);
        }
        CHECK(q && sc_check(q) == SC_OK);
        sc_prog_free(q);
        if (old)
            free(text);
    }
    free(csv);
    CHECK(sc_check(pg) == SC_OK);
    csv = write_csv(pg, SC_TORCH_COMPUTE_COMMS, &len);
    sc_prog *q = csv ? sc_torchcsv_read(csv, len, &dia, &st, err, sizeof err) : NULL;
    CHECK(q && dia == SC_TORCH_COMPUTE_COMMS);
    if (csv && !q)
        fprintf(stderr, "  %s comms: %s\n", what, err);
    for (int d = 0; q && d < P; d++) {
        size_t na, nb;
        const sc_instr *a = sc_prog_stream(pg, d, &na), *b = sc_prog_stream(q, d, &nb);
        CHECK(same_but_waits(a, na, b, nb));
    }
    CHECK(q && sc_check(q) == SC_OK);
    if (q)
        check_cells(q, csv);
    /* The import written again is the file, its waits where they were. */
    size_t len2 = 0;
    char *again = q ? write_csv(q, SC_TORCH_COMPUTE_COMMS, &len2) : NULL;
    CHECK(again && len2 == len && memcmp(again, csv, len) == 0);
    free(again);
    sc_prog_free(q);
    free(csv);
    if (harness_fail != f0)
        fprintf(stderr, "  (in %s)\n", what);
}

TEST(rules_roundtrip)
{
    for (int i = 0; sc_rule_names[i]; i++) {
        const char *r = sc_rule_names[i];
        int v = strcmp(r, "interleaved") == 0 ? 2 : 1;
        for (int p = 1; p <= 5; p++) {
            sc_prog *pg = sc_prog_new(p, p * v, 2 * p);
            if (sc_rule_fill(pg, r) == SC_OK)
                roundtrip(pg, r);
            sc_prog_free(pg);
        }
    }
}

/* A random valid program: a random placement (every device a stage), and
 * each device's order the subsequence of one random topological order of
 * all passes, B+W or BW chosen per (stage, mb). */
static sc_prog *random_prog(int P, int S, int m)
{
    sc_prog *pg = sc_prog_new(P, S, m);
    int *tab = malloc((size_t)S * sizeof(int));
    for (int s = 0; s < S; s++)
        tab[s] = s < P ? s : rnd(P);
    for (int s = S - 1; s > 0; s--) { /* shuffle */
        int j = rnd(s + 1), t = tab[s];
        tab[s] = tab[j];
        tab[j] = t;
    }
    sc_prog_set_placement(pg, SC_PLACE_TABLE, tab);
    size_t SM = (size_t)S * (size_t)m;
    /* state per (s, mb): 0 nothing, 1 F done, 2 B done, 3 all done */
    unsigned char *state = calloc(SM, 1), *split = malloc(SM);
    for (size_t i = 0; i < SM; i++)
        split[i] = (unsigned char)rnd(2);
    size_t left = SM;
    while (left) {
        size_t i = (size_t)rnd((int)SM);
        int s = (int)(i / (size_t)m), mb = (int)(i % (size_t)m);
        unsigned char st = state[i];
        if (st == 0 && (s == 0 || state[i - (size_t)m] >= 1)) {
            sc_prog_push(pg, tab[s], SC_OP_F, s, mb);
            state[i] = 1;
        } else if (st == 1 && (s == S - 1 || state[i + (size_t)m] >= 2)) {
            sc_prog_push(pg, tab[s], split[i] ? SC_OP_B : SC_OP_BW, s, mb);
            state[i] = split[i] ? 2 : 3;
            left -= !split[i];
        } else if (st == 2) {
            sc_prog_push(pg, tab[s], SC_OP_W, s, mb);
            state[i] = 3;
            left--;
        }
    }
    free(state);
    free(split);
    free(tab);
    return pg;
}

TEST(random_roundtrip)
{
    for (int t = 0; t < 300; t++) {
        int P = 1 + rnd(5), S = P + rnd(2 * P + 1), m = 1 + rnd(6);
        sc_prog *pg = random_prog(P, S, m);
        CHECK(sc_verify_passes(pg) == SC_OK);
        char what[64];
        snprintf(what, sizeof what, "random #%d P=%d S=%d m=%d", t, P, S, m);
        roundtrip(pg, what);
        sc_prog_free(pg);
    }
}

static sc_prog *read_err(const char *text, sc_status want, const char *msg)
{
    char err[512];
    sc_status st;
    sc_torch_dialect dia;
    sc_prog *pg = sc_torchcsv_read(text, strlen(text), &dia, &st, err, sizeof err);
    CHECK(!pg && st == want);
    CHECK_STR(err, msg);
    sc_prog_free(pg);
    return NULL;
}

TEST(read_errors)
{
    read_err("0F0,0Q0\n", SC_ERR_ARG, "row 1 (rank 0), cell 2 '0Q0': unknown action type 'Q'");
    read_err("0F0,0I0,0W0\n1F0,1I0,1W0\n2F0,2I0,2W0,0F1\n", SC_ERR_PROGRAM,
             "row 3 (rank 2), cell 4 '0F1': stage 0 on two ranks");
    read_err("0F0,0W0,0I0\n", SC_ERR_PROGRAM, "cell 2 '0W0': W before its input gradient");
    read_err("0F0,0B0,0F2,0B2\n", SC_ERR_PROGRAM, "stage 0 has no F of microbatch 1");
    read_err("0F0,0B0\n1F0,1B0,2F0\n", SC_ERR_PROGRAM,
             "row 2 (rank 1): missing microbatch: stage 2 has no backward");
    read_err("0F0,0B0,0SEND_F0\n", SC_ERR_PROGRAM, "unknown stage 1");
    read_err("0F1000000000\n", SC_ERR_ARG, "microbatch number too long");
    read_err("0F999999,0B999999\n", SC_ERR_PROGRAM, "stage 0 has no F of microbatch 0");
    read_err("65536F0\n", SC_ERR_LIMIT, "stage 65536 is out of range");
}

TEST(writers)
{
    sc_prog *pg = sc_prog_new(4, 8, 8);
    sc_prog_set_comm(pg, 0.25);
    CHECK(sc_rule_fill(pg, "interleaved") == SC_OK);
    sc_sim *sim = NULL;
    CHECK(sc_simulate(pg, &sim) == SC_OK);
    if (!sim) {
        sc_prog_free(pg);
        return;
    }
    char *s = NULL;
    size_t len;
    FILE *f = open_memstream(&s, &len);
    CHECK(sc_json_write(f, pg, sim, "a \"quoted\" name") == SC_OK);
    fclose(f);
    CHECK_STR(s, "\"name\": \"a \\\"quoted\\\" name\"");
    CHECK_STR(s, "{\"op\": \"SEND\", \"dir\": \"act\", \"stage\": 1, \"mb\": 0, \"peer\": 1");
    free(s);
    sc_timing t[2] = {{sim, "simulated", 0}, {sim, "again", 1e6}};
    f = open_memstream(&s, &len);
    CHECK(sc_trace_write(f, pg, t, 2) == SC_OK);
    fclose(f);
    CHECK_STR(s, "\"args\": {\"name\": \"again\"}");
    size_t recvs = 0, flows = 0;
    for (int d = 0; d < 4; d++) {
        size_t n;
        const sc_instr *v = sc_prog_stream(pg, d, &n);
        for (size_t k = 0; k < n; k++)
            recvs += v[k].op == SC_OP_RECV;
    }
    for (const char *p = s; (p = strstr(p, "\"ph\": \"f\"")); p++)
        flows++;
    CHECK(flows == 2 * recvs);
    free(s);
    f = open_memstream(&s, &len);
    CHECK(sc_svg_write(f, pg, sim, "a<b") == SC_OK);
    fclose(f);
    CHECK_STR(s, "<svg xmlns=\"http://www.w3.org/2000/svg\"");
    CHECK_STR(s, ">a&lt;b</text>");
    CHECK(strcmp(s + len - 7, "</svg>\n") == 0);
    CHECK_STR(s, "<g id=\"d3\">");
    free(s);
    sc_sim_free(sim);
    sc_prog_free(pg);
}

/* Crossing cells (docs/modes.md#crossing-cells): rank 0 posts 0SEND_F1,
 * 0RECV_B0 and rank 1 1SEND_B0, 1RECV_F1, each cell alone (PyTorch). On
 * one NCCL communicator each rank blocks in its send once the message
 * outgrows NCCL's buffers: refused in the NCCL mode as a file, naming both
 * ranks' cells; accepted per-link, on gloo, with eager sends, and as our
 * own streams (one ncclGroupStart/End per run). */
TEST(cells_cross)
{
    static const char late[] =
        "0F0,0SEND_F0,0F1,0SEND_F1,0RECV_B0,0WAIT_SEND_F1,0WAIT_SEND_F0,0B0,0RECV_B1,0B1,"
        "0REDUCE_GRAD,0WAIT_REDUCE_GRAD\n"
        "1RECV_F0,1F0,1B0,1SEND_B0,1RECV_F1,1WAIT_SEND_B0,1F1,1B1,1SEND_B1,1WAIT_SEND_B1,"
        "1REDUCE_GRAD,1WAIT_REDUCE_GRAD\n";
    char err[512];
    sc_status st;
    sc_torch_dialect dia;
    sc_prog *pg = sc_torchcsv_read(late, strlen(late), &dia, &st, err, sizeof err);
    CHECK(pg && sc_prog_lower_target(pg) == SC_LOWER_FILE && sc_prog_p2p(pg) == SC_P2P_NCCL);
    if (!pg)
        return;
    check_cells(pg, late);
    CHECK(sc_check(pg) == SC_ERR_DEADLOCK);
    CHECK_STR(sc_errmsg(pg), "deadlock: cells cross: rank 0 cell 4 (0SEND_F1) waits for rank 1 "
                             "cell 5 (1RECV_F1), behind rank 1 cell 4 (1SEND_B0), which waits for "
                             "rank 0 cell 5 (0RECV_B0), behind the first; PyTorch posts");
    CHECK_STR(sc_errmsg(pg), "per-link communicators (--comm per-link) run the file");
    sc_sim *sim = NULL;
    CHECK(sc_simulate(pg, &sim) == SC_ERR_DEADLOCK && !sim);
    CHECK(sc_prog_set_p2p(pg, SC_P2P_LINK) == SC_OK && sc_check(pg) == SC_OK);
    CHECK(sc_prog_set_p2p(pg, SC_P2P_GLOO) == SC_OK && sc_check(pg) == SC_OK);
    CHECK(sc_prog_set_p2p(pg, SC_P2P_NCCL) == SC_OK && sc_check(pg) == SC_ERR_DEADLOCK);
    /* Eager sends: only with both sizes, the message within the buffer. */
    CHECK(sc_prog_set_eager(pg, 4 << 20, 0) == SC_OK && sc_check(pg) == SC_ERR_DEADLOCK);
    CHECK(sc_prog_set_eager(pg, 4 << 20, 16 << 20) == SC_OK && sc_check(pg) == SC_ERR_DEADLOCK);
    CHECK(sc_prog_set_eager(pg, 4 << 20, 4 << 20) == SC_OK && sc_check(pg) == SC_OK);
    CHECK(sc_simulate(pg, &sim) == SC_OK && sim);
    sc_sim_free(sim);
    CHECK(sc_prog_set_eager(pg, -1, 1) == SC_ERR_ARG && sc_prog_eager(pg));
    CHECK(sc_prog_set_eager(pg, 0, 0) == SC_OK && sc_check(pg) == SC_ERR_DEADLOCK);
    /* The same streams as ours: each run one group, crossing within it. */
    CHECK(sc_prog_set_lower_target(pg, SC_LOWER_STREAMS) == SC_OK && sc_check(pg) == SC_OK);
    sc_prog_free(pg);

    /* Receive first on both ranks: a receive waits for its send at any size. */
    static const char rfirst[] =
        "0F0,0SEND_F0,0F1,0RECV_B0,0SEND_F1,0B0,0RECV_B1,0B1,0REDUCE_GRAD\n"
        "1RECV_F0,1F0,1B0,1RECV_F1,1SEND_B0,1F1,1B1,1SEND_B1,1REDUCE_GRAD\n";
    pg = sc_torchcsv_read(rfirst, strlen(rfirst), &dia, &st, err, sizeof err);
    CHECK(pg && sc_prog_set_eager(pg, 1 << 30, 1) == SC_OK && sc_check(pg) == SC_ERR_DEADLOCK);
    CHECK_STR(pg ? sc_errmsg(pg) : "", "rank 0 cell 4 (0RECV_B0) waits for rank 1 cell 5 (1SEND_B0)");
    sc_prog_free(pg);

    /* PyTorch's own lowering, its cells numbered past the dropped
     * WAIT_REDUCE_GRAD in the middle of a row; accepted as before. */
    static const char il[] =
        "0UNSHARD,2UNSHARD,0F0,0SEND_F0,2RECV_F0,0F1,0SEND_F1,2RECV_F1,2F0,2SEND_F0,2F1,2SEND_F1,"
        "2RECV_B0,0F2,0SEND_F2,2B0,2WAIT_SEND_F0,2SEND_B0,2RECV_B1,0F3,0SEND_F3,2RECV_F2,2B1,"
        "2WAIT_SEND_F1,2SEND_B1,0RECV_B0,2F2,2SEND_F2,2RECV_F3,0B0,0WAIT_SEND_F0,0RECV_B1,2F3,"
        "2SEND_F3,0B1,0WAIT_SEND_F1,2RECV_B2,2B2,2WAIT_SEND_F2,2SEND_B2,2RECV_B3,2B3,2WAIT_SEND_F3,"
        "2SEND_B3,2REDUCE_GRAD,2WAIT_REDUCE_GRAD,2RESHARD,0RECV_B2,0B2,0WAIT_SEND_F2,0RECV_B3,0B3,"
        "0WAIT_SEND_F3,0REDUCE_GRAD,0WAIT_REDUCE_GRAD,0RESHARD,2WAIT_SEND_B0,2WAIT_SEND_B1,"
        "2WAIT_SEND_B2,2WAIT_SEND_B3\n"
        "1UNSHARD,3UNSHARD,1RECV_F0,1F0,1SEND_F0,1RECV_F1,1F1,1SEND_F1,3RECV_F0,3F0,3RECV_F1,3B0,"
        "3SEND_B0,1RECV_F2,3F1,1RECV_B0,3B1,3SEND_B1,1RECV_F3,1F2,1SEND_F2,1RECV_B1,1B0,"
        "1WAIT_SEND_F0,1SEND_B0,3RECV_F2,1F3,1SEND_F3,1B1,1WAIT_SEND_F1,1SEND_B1,3RECV_F3,3F2,"
        "3B2,3SEND_B2,1RECV_B2,3F3,3B3,3SEND_B3,1RECV_B3,3REDUCE_GRAD,3WAIT_REDUCE_GRAD,3RESHARD,"
        "1B2,1WAIT_SEND_F2,1SEND_B2,1B3,1WAIT_SEND_F3,1SEND_B3,1REDUCE_GRAD,1WAIT_REDUCE_GRAD,"
        "1RESHARD,3WAIT_SEND_B0,3WAIT_SEND_B1,1WAIT_SEND_B0,1WAIT_SEND_B1,3WAIT_SEND_B2,"
        "3WAIT_SEND_B3,1WAIT_SEND_B2,1WAIT_SEND_B3\n";
    pg = sc_torchcsv_read(il, strlen(il), &dia, &st, err, sizeof err);
    CHECK(pg && sc_check(pg) == SC_OK);
    if (pg) {
        check_cells(pg, il);
        CHECK(sc_prog_cell(pg, 0, 45) == 47); /* 2RESHARD, after the dropped wait */
    }
    sc_prog_free(pg);
}

int main(void)
{
    RUN(rules_roundtrip);
    RUN(random_roundtrip);
    RUN(read_errors);
    RUN(writers);
    RUN(cells_cross);
    return harness_done("interchange");
}
