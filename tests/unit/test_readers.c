/*
 * test_readers.c — the bounded readers of files a user names
 * (formats/readfile.h, docs/sandbox.md#files-read): devices and FIFOs read
 * only as far as their bytes can be the format and not past a deadline,
 * the byte cap, the counted allocator; the JSON reader handing a list over
 * item by item (jsonread.h's sc_json_opts); the trace reader (ptrace.h) on
 * merged traces of many processes, with its rank after its events, past a
 * deadline and with every allocation refused in turn; the CSV reader's
 * deadline (torchcsv.h). No wall-clock bound is asserted: deadlines are
 * either already past or a FIFO that never gets bytes.
 */
#include "formats/jsonread.h"
#include "formats/ptrace.h"
#include "formats/readfile.h"
#include "formats/torchcsv.h"
#include "harness.h"
#include "ir/alloc.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* A scratch folder of this run. */
static char dir[64];

static const char *path_of(const char *name)
{
    static char p[128];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    return p;
}

static void write_file(const char *name, const char *text)
{
    FILE *f = fopen(path_of(name), "wb");
    if (f) {
        fputs(text, f);
        fclose(f);
    }
}

typedef struct budget {
    size_t used, cap;
    long calls, fail_at; /* fail_at: the call refused (from 1); 0: none */
} budget;

static int charge(void *ud, size_t bytes, int grow)
{
    budget *b = ud;
    if (!grow) {
        b->used -= bytes;
        return 1;
    }
    if ((b->cap && b->used + bytes > b->cap) || ++b->calls == b->fail_at)
        return 0;
    b->used += bytes;
    return 1;
}

TEST(read_devices_and_fifos)
{
    char err[256];
    sc_read rd = {.format = SC_READ_JSON};
    CHECK(sc_read_file("/dev/zero", &rd, err, sizeof err) == SC_ERR_ARG);
    CHECK(rd.errnum == 0 && rd.text == NULL && rd.len == 0);
    CHECK_STR(err, "not JSON: byte 0 is 0x00, where JSON starts with '{' or '['");
    rd = (sc_read){.format = SC_READ_TEXT};
    CHECK(sc_read_file("/dev/zero", &rd, err, sizeof err) == SC_ERR_ARG);
    CHECK_STR(err, "not text: a NUL byte at offset 0");
    rd = (sc_read){.format = SC_READ_TEXT};
    CHECK(sc_read_file(path_of("none"), &rd, err, sizeof err) == SC_ERR_ARG);
    CHECK(rd.errnum == ENOENT);
    CHECK(sc_read_file(dir, &rd, err, sizeof err) == SC_ERR_ARG && rd.errnum == EISDIR);

    /* A FIFO: empty without a writer; with one that never writes, until
     * the deadline (already past: no clock is raced). */
    const char *fifo = path_of("fifo");
    CHECK(mkfifo(fifo, 0600) == 0);
    rd = (sc_read){.format = SC_READ_JSON, .deadline = sc_clock_now() + 3600};
    CHECK(sc_read_file(fifo, &rd, err, sizeof err) == SC_OK && rd.len == 0 && rd.text[0] == 0);
    sc_free(rd.text);
    int w = open(fifo, O_RDWR | O_NONBLOCK); /* a writer (and reader) that stays */
    CHECK(w >= 0 && write(w, " {\"a\"", 5) == 5);
    rd = (sc_read){.format = SC_READ_JSON, .deadline = sc_clock_now() - 1};
    CHECK(sc_read_file(fifo, &rd, err, sizeof err) == SC_ERR_LIMIT && rd.over == SC_READ_OVER_TIME);
    if (w >= 0)
        close(w);
    /* Bytes that cannot be JSON stop a stream at once, with no deadline. */
    const char *fifo2 = path_of("fifo2");
    CHECK(mkfifo(fifo2, 0600) == 0);
    w = open(fifo2, O_RDWR | O_NONBLOCK);
    CHECK(w >= 0 && write(w, "\n#{}", 4) == 4);
    rd = (sc_read){.format = SC_READ_JSON};
    CHECK(sc_read_file(fifo2, &rd, err, sizeof err) == SC_ERR_ARG);
    CHECK_STR(err, "not JSON: byte 1 is 0x23");
    if (w >= 0)
        close(w);
}

TEST(read_regular_files)
{
    char err[256];
    write_file("t.json", " \n\t{\"a\": 1}\n");
    sc_read rd = {.format = SC_READ_JSON, .max_bytes = 100};
    CHECK(sc_read_file(path_of("t.json"), &rd, err, sizeof err) == SC_OK);
    CHECK(rd.len == 12 && rd.text && strcmp(rd.text, " \n\t{\"a\": 1}\n") == 0);
    sc_free(rd.text);
    rd = (sc_read){.format = SC_READ_JSON, .max_bytes = 11};
    CHECK(sc_read_file(path_of("t.json"), &rd, err, sizeof err) == SC_ERR_LIMIT);
    CHECK(rd.over == SC_READ_OVER_BYTES && rd.text == NULL);
    CHECK_STR(err, "more than 11 bytes");
    write_file("x.json", "  x");
    rd = (sc_read){.format = SC_READ_JSON};
    CHECK(sc_read_file(path_of("x.json"), &rd, err, sizeof err) == SC_ERR_ARG);
    CHECK_STR(err, "byte 2 is 0x78");
    write_file("e.csv", "");
    rd = (sc_read){.format = SC_READ_TEXT};
    CHECK(sc_read_file(path_of("e.csv"), &rd, err, sizeof err) == SC_OK && rd.len == 0);
    sc_free(rd.text);
    /* The text is counted memory: a cap refuses it cleanly. */
    budget b = {.cap = 8};
    sc_alloc_hook(charge, &b);
    rd = (sc_read){.format = SC_READ_JSON};
    CHECK(sc_read_file(path_of("t.json"), &rd, err, sizeof err) == SC_ERR_NOMEM);
    CHECK(rd.text == NULL && b.used == 0);
    sc_alloc_hook(NULL, NULL);
}

typedef struct seen {
    size_t n, last;
    double sum;
    size_t stop_at; /* the index refused; 0: none */
} seen;

static sc_status on_item(void *ud, size_t i, const sc_jv *v, char *err, size_t errlen)
{
    seen *s = ud;
    if (s->stop_at && i == s->stop_at) {
        snprintf(err, errlen, "item %zu refused", i);
        return SC_ERR_PROGRAM;
    }
    s->n++;
    s->last = i;
    s->sum += v->type == SC_JNUM ? v->num : 0;
    return SC_OK;
}

TEST(json_handed_over)
{
    const char *text = "{\"x\": {\"traceEvents\": [7]}, \"traceEvents\": [1, 2, 3], \"y\": true}";
    seen s = {0};
    sc_json_opts o = {.each = "traceEvents", .item = on_item, .ud = &s};
    sc_jv *root = NULL;
    char err[256];
    CHECK(sc_json_parse_opts(text, strlen(text), &o, &root, err, sizeof err) == SC_OK);
    CHECK(s.n == 3 && s.last == 2 && s.sum == 6); /* the nested list is kept, not handed */
    const sc_jv *ev = sc_jv_get(root, "traceEvents"), *x = sc_jv_get(root, "x");
    CHECK(ev && ev->type == SC_JARR && ev->len == 0);
    CHECK(x && sc_jv_get(x, "traceEvents") && sc_jv_get(x, "traceEvents")->len == 1);
    CHECK(sc_jv_get(root, "y") != NULL);
    sc_jv_free(root);
    /* An item's refusal stops the parse with its status and message. */
    s = (seen){.stop_at = 1};
    CHECK(sc_json_parse_opts(text, strlen(text), &o, &root, err, sizeof err) == SC_ERR_PROGRAM);
    CHECK(root == NULL && strcmp(err, "item 1 refused") == 0 && s.n == 1);
    /* The list's own syntax is checked, and a key twice is still refused. */
    const char *bad = "{\"traceEvents\": [1 2]}";
    CHECK(sc_json_parse_opts(bad, strlen(bad), &o, &root, err, sizeof err) == SC_ERR_ARG);
    CHECK_STR(err, "expected ',' or ']'");
    const char *twice = "{\"traceEvents\": [], \"traceEvents\": []}";
    CHECK(sc_json_parse_opts(twice, strlen(twice), &o, &root, err, sizeof err) == SC_ERR_ARG);
    CHECK_STR(err, "appears twice");
    /* A deadline that has passed stops a parse of more than a few thousand values. */
    size_t n = 20000, len = 0;
    char *big = malloc(n * 3 + 4);
    big[len++] = '[';
    for (size_t i = 0; i < n; i++)
        len += (size_t)sprintf(big + len, "%s1", i ? "," : "");
    big[len++] = ']';
    o = (sc_json_opts){.deadline = sc_clock_now() - 1};
    CHECK(sc_json_parse_opts(big, len, &o, &root, err, sizeof err) == SC_ERR_LIMIT);
    CHECK_STR(err, "time limit reached");
    o.deadline = 0;
    CHECK(sc_json_parse_opts(big, len, &o, &root, err, sizeof err) == SC_OK && root->len == n);
    sc_jv_free(root);
    free(big);
}

/* A merged trace of n processes (pid 1000 + s runs stage s, from s0: F, I,
 * W of microbatch 0, each with an operator), as tests/py/gen_trace.py
 * writes; rank: members before the events (late: after them), or NULL. */
static char *merged_trace(int s0, int n, const char *rank, int late, size_t *len)
{
    size_t cap = (size_t)n * 700 + 200, k = 0;
    char *t = malloc(cap);
    const char *info = rank ? rank : "";
    k += (size_t)sprintf(t + k, "{%s%s\"traceEvents\": [", late ? "" : info,
                         late || !rank ? "" : ", ");
    for (int s = s0; s < s0 + n; s++) {
        static const char *const acts[] = {"F", "I", "W"};
        for (int a = 0; a < 3; a++) {
            double ts = 10.0 * a;
            k += (size_t)sprintf(t + k, "%s{\"ph\": \"X\", \"name\": \"PP:%d%s0\", \"pid\": %d, "
                                 "\"tid\": 1, \"ts\": %g, \"dur\": 5}, {\"ph\": \"X\", \"cat\": "
                                 "\"cpu_op\", \"name\": \"mm\", \"pid\": %d, \"tid\": 1, \"ts\": "
                                 "%g, \"dur\": 1}", s > s0 || a ? ", " : "", s, acts[a], 1000 + s,
                                 ts, 1000 + s, ts + 1);
        }
    }
    k += (size_t)sprintf(t + k, "]%s%s}", late && rank ? ", " : "", late ? info : "");
    *len = k;
    return t;
}

TEST(trace_many_processes)
{
    int n = 3000;
    size_t len;
    char *text = merged_trace(0, n, NULL, 0, &len), err[512], note[300];
    sc_ptrace *t = sc_ptrace_new();
    sc_costs c;
    CHECK(sc_ptrace_read(t, "m.json", text, len, 0, err, sizeof err) == SC_OK);
    CHECK(sc_ptrace_costs(t, &c, 0, note, sizeof note, err, sizeof err) == SC_OK);
    CHECK(c.P == n && c.S == n);
    int placed = 0;
    for (int s = 0; s < n; s++)
        placed += c.placement[s] == s && c.kind[SC_COST_F][s].n == 1 &&
                  fabs(c.kind[SC_COST_F][s].median - 10e-6) < 1e-12; /* F to I */
    CHECK(placed == n);
    sc_costs_free(&c);
    sc_ptrace_free(t);
    /* Past the deadline: refused, with the file named. */
    t = sc_ptrace_new();
    CHECK(sc_ptrace_read(t, "m.json", text, len, sc_clock_now() - 1, err, sizeof err) ==
          SC_ERR_LIMIT);
    CHECK_STR(err, "m.json: line 1: time limit reached");
    sc_ptrace_free(t);
    free(text);
}

TEST(trace_ranks_after_events)
{
    /* Two files, one process each, their ranks after their events: the
     * ranks number the devices (stage 0 is on rank 1), and a rank given
     * twice is refused though the events came first. */
    size_t la, lb;
    char *a = merged_trace(0, 1, "\"distributedInfo\": {\"rank\": 1}", 1, &la);
    char *b = merged_trace(1, 1, "\"distributedInfo\": {\"rank\": 0}", 1, &lb), err[512], note[300];
    sc_ptrace *t = sc_ptrace_new();
    sc_costs c;
    CHECK(sc_ptrace_read(t, "a.json", a, la, 0, err, sizeof err) == SC_OK);
    CHECK(sc_ptrace_read(t, "b.json", b, lb, 0, err, sizeof err) == SC_OK);
    CHECK(sc_ptrace_costs(t, &c, 0, note, sizeof note, err, sizeof err) == SC_OK);
    CHECK(c.P == 2 && c.S == 2 && c.placement[0] == 1 && c.placement[1] == 0);
    sc_costs_free(&c);
    sc_ptrace_free(t);
    t = sc_ptrace_new();
    CHECK(sc_ptrace_read(t, "a.json", a, la, 0, err, sizeof err) == SC_OK);
    CHECK(sc_ptrace_read(t, "a2.json", a, la, 0, err, sizeof err) == SC_ERR_ARG);
    CHECK_STR(err, "a2.json: rank 1 again (a.json is rank 1 too)");
    sc_ptrace_free(t);
    /* -0 and 0 are one process: one device. */
    const char *z = "{\"traceEvents\": [{\"ph\": \"X\", \"name\": \"PP:0F0\", \"pid\": 0, "
                    "\"tid\": 1, \"ts\": 0, \"dur\": 1}, {\"ph\": \"X\", \"name\": \"PP:0B0\", "
                    "\"pid\": -0.0, \"tid\": 1, \"ts\": 2, \"dur\": 1}]}";
    t = sc_ptrace_new();
    CHECK(sc_ptrace_read(t, "z.json", z, strlen(z), 0, err, sizeof err) == SC_OK);
    CHECK(sc_ptrace_costs(t, &c, 0, note, sizeof note, err, sizeof err) == SC_OK && c.P == 1);
    sc_costs_free(&c);
    sc_ptrace_free(t);
    free(a);
    free(b);
}

/* Refuses every allocation of a read and its costs in turn: each run fails
 * with SC_ERR_NOMEM, or succeeds past the last; nothing is left held. */
TEST(trace_refused_allocations)
{
    size_t len;
    char *text = merged_trace(0, 40, NULL, 0, &len), err[512], note[300];
    budget b = {0};
    int runs = 0, clean = 0;
    for (long at = 1;; at++, runs++) {
        b = (budget){.fail_at = at};
        sc_alloc_hook(charge, &b);
        sc_ptrace *t = sc_ptrace_new();
        sc_costs c;
        sc_status st = t ? sc_ptrace_read(t, "r.json", text, len, 0, err, sizeof err) : SC_ERR_NOMEM;
        if (st == SC_OK)
            st = sc_ptrace_costs(t, &c, 0, note, sizeof note, err, sizeof err);
        if (st == SC_OK)
            sc_costs_free(&c);
        sc_ptrace_free(t);
        sc_alloc_hook(NULL, NULL);
        clean += b.used == 0 && (st == SC_OK || st == SC_ERR_NOMEM);
        if (st == SC_OK || at > 100000)
            break;
    }
    CHECK(runs > 10 && clean == runs + 1);
    free(text);
}

TEST(trace_actions_without_microbatch)
{
    /* One rank, stage 0, two steps: both waits of microbatch 0 in a step
     * (each its own action), UNSHARD twice a step (FSDP's lowering may
     * unshard a stage again), RESHARD and REDUCE_GRAD once; the waits and
     * FSDP's actions are left out of the passes' times, and UNSHARD's
     * operator says FSDP was on. F0: 10 us, B0: 20 us in each step. */
    char text[4096];
    size_t k = (size_t)sprintf(text, "{\"traceEvents\": [");
    static const struct { const char *name; double ts, dur; } ev[] = {
        {"PP:0UNSHARD", 0, 2}, {"PP:0F0", 2, 10}, {"PP:0WAIT_SEND_F0", 12, 3},
        {"PP:0UNSHARD", 15, 1}, {"PP:0B0", 16, 20}, {"PP:0WAIT_SEND_B0", 36, 4},
        {"PP:0REDUCE_GRAD", 40, 5}, {"PP:0RESHARD", 45, 1}};
    for (int step = 0; step < 2; step++)
        for (int i = 0; i < 8; i++)
            k += (size_t)sprintf(text + k, "%s{\"ph\": \"X\", \"name\": \"%s\", \"pid\": 1, "
                                 "\"tid\": 1, \"ts\": %g, \"dur\": %g}", step || i ? ", " : "",
                                 ev[i].name, 100.0 * step + ev[i].ts, ev[i].dur);
    k += (size_t)sprintf(text + k, ", {\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": "
                         "\"c10d::_allgather_base_\", \"pid\": 1, \"tid\": 1, \"ts\": 0.5, "
                         "\"dur\": 1}]}");
    char err[512], note[300];
    sc_ptrace *t = sc_ptrace_new();
    sc_costs c;
    CHECK(sc_ptrace_read(t, "u.json", text, k, 0, err, sizeof err) == SC_OK);
    CHECK(sc_ptrace_costs(t, &c, 0, note, sizeof note, err, sizeof err) == SC_OK);
    if (c.S == 1) {
        CHECK(c.steps == 2 && c.fsdp == 1);
        CHECK_NEAR(c.kind[SC_COST_F][0].median, 10e-6, 1e-12);
        CHECK_NEAR(c.kind[SC_COST_BW][0].median, 20e-6, 1e-12);
        CHECK(c.kind[SC_COST_F][0].n == 2);
        CHECK_NEAR(c.step.median, 46e-6, 1e-12);
        sc_costs_free(&c);
    } else {
        CHECK(!"one stage");
        fprintf(stderr, "%s\n", err);
    }
    sc_ptrace_free(t);
}

/* A GPU's trace (ptrace_gpu.c): GPipe on two ranks in one file (CPU
 * processes 10 and 11, their GPUs 0 and 1), each kernel linked by its
 * correlation to its launch and the launch to the innermost span around
 * it on its process, any thread: F of stage 0 runs kernels 30..50 and
 * 70..80 (50 us, the gap counted), of stage 1 130..190 (past its span);
 * B of stage 0 380..440 (launched from autograd's thread 2, past the
 * spans: the step ends there), of stage 1 200..225; NCCL's kernels,
 * launched in the posts (c10d::send, c10d::recv_) inside the spans, are
 * the transfers: 30 us each, never a pass's. Correlation 1 on both
 * processes: each kernel takes the launch of its id last before it. The
 * optimizer's launch (outside the spans) and a kernel without a launch
 * link nothing. */
static const char *const gpu_events[] = {
    "{\"ph\": \"X\", \"name\": \"Forward 0\", \"pid\": 10, \"tid\": 1, \"ts\": 0, \"dur\": 100}",
    "{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"aten::mm\", \"pid\": 10, \"tid\": 1, \"ts\": 5, \"dur\": 2}",
    "{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"c10d::send\", \"pid\": 10, \"tid\": 1, \"ts\": 80, \"dur\": 5}",
    "{\"ph\": \"X\", \"name\": \"Backward 0\", \"pid\": 10, \"tid\": 1, \"ts\": 200, \"dur\": 200}",
    "{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"c10d::recv_\", \"pid\": 10, \"tid\": 1, \"ts\": 205, \"dur\": 3}",
    "{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"aten::mm\", \"pid\": 10, \"tid\": 1, \"ts\": 310, \"dur\": 2}",
    "{\"ph\": \"X\", \"name\": \"Forward 0\", \"pid\": 11, \"tid\": 1, \"ts\": 50, \"dur\": 100}",
    "{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"c10d::recv_\", \"pid\": 11, \"tid\": 1, \"ts\": 52, \"dur\": 3}",
    "{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"aten::mm\", \"pid\": 11, \"tid\": 1, \"ts\": 120, \"dur\": 2}",
    "{\"ph\": \"X\", \"name\": \"Backward 0\", \"pid\": 11, \"tid\": 1, \"ts\": 160, \"dur\": 100}",
    "{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"aten::mm\", \"pid\": 11, \"tid\": 1, \"ts\": 165, \"dur\": 2}",
    "{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"c10d::send\", \"pid\": 11, \"tid\": 1, \"ts\": 250, \"dur\": 5}",
    /* the launches */
    "{\"ph\": \"X\", \"cat\": \"cuda_runtime\", \"name\": \"cudaLaunchKernel\", \"pid\": 10, \"tid\": 1, \"ts\": 10, \"dur\": 2, \"args\": {\"correlation\": 1}}",
    "{\"ph\": \"X\", \"cat\": \"cuda_runtime\", \"name\": \"cudaLaunchKernel\", \"pid\": 10, \"tid\": 1, \"ts\": 60, \"dur\": 2, \"args\": {\"correlation\": 2}}",
    "{\"ph\": \"X\", \"cat\": \"cuda_driver\", \"name\": \"cuLaunchKernelEx\", \"pid\": 10, \"tid\": 1, \"ts\": 81, \"dur\": 2, \"args\": {\"correlation\": 3}}",
    "{\"ph\": \"X\", \"cat\": \"cuda_runtime\", \"name\": \"cudaLaunchKernel\", \"pid\": 10, \"tid\": 2, \"ts\": 320, \"dur\": 2, \"args\": {\"correlation\": 4}}",
    "{\"ph\": \"X\", \"cat\": \"cuda_runtime\", \"name\": \"cudaLaunchKernelExC\", \"pid\": 10, \"tid\": 1, \"ts\": 206, \"dur\": 1, \"args\": {\"correlation\": 5}}",
    "{\"ph\": \"X\", \"cat\": \"cuda_runtime\", \"name\": \"cudaLaunchKernel\", \"pid\": 10, \"tid\": 1, \"ts\": 500, \"dur\": 2, \"args\": {\"correlation\": 20}}",
    "{\"ph\": \"X\", \"cat\": \"cuda_driver\", \"name\": \"cuLaunchKernelEx\", \"pid\": 11, \"tid\": 1, \"ts\": 53, \"dur\": 1, \"args\": {\"correlation\": 1}}",
    "{\"ph\": \"X\", \"cat\": \"cuda_runtime\", \"name\": \"cudaLaunchKernel\", \"pid\": 11, \"tid\": 1, \"ts\": 125, \"dur\": 2, \"args\": {\"correlation\": 11}}",
    "{\"ph\": \"X\", \"cat\": \"cuda_runtime\", \"name\": \"cudaLaunchKernel\", \"pid\": 11, \"tid\": 3, \"ts\": 170, \"dur\": 2, \"args\": {\"correlation\": 12}}",
    "{\"ph\": \"X\", \"cat\": \"cuda_driver\", \"name\": \"cuLaunchKernelEx\", \"pid\": 11, \"tid\": 1, \"ts\": 251, \"dur\": 2, \"args\": {\"correlation\": 13}}",
    /* the kernels */
    "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"sgemm\", \"pid\": 0, \"tid\": 7, \"ts\": 30, \"dur\": 20, \"args\": {\"device\": 0, \"stream\": 7, \"correlation\": 1}}",
    "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"sgemm\", \"pid\": 0, \"tid\": 7, \"ts\": 70, \"dur\": 10, \"args\": {\"device\": 0, \"stream\": 7, \"correlation\": 2}}",
    "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"ncclDevKernel_SendRecv(ncclDevKernelArgsStorage<4096ul>)\", \"pid\": 0, \"tid\": 20, \"ts\": 90, \"dur\": 30, \"args\": {\"device\": 0, \"stream\": 20, \"correlation\": 3}}",
    "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"sgemm\", \"pid\": 0, \"tid\": 7, \"ts\": 380, \"dur\": 60, \"args\": {\"device\": 0, \"stream\": 7, \"correlation\": 4}}",
    "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"ncclKernel_SendRecv_RING_SIMPLE_Sum_int8_t\", \"pid\": 0, \"tid\": 20, \"ts\": 209, \"dur\": 77, \"args\": {\"device\": 0, \"stream\": 20, \"correlation\": 5}}",
    "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"multi_tensor_apply_kernel\", \"pid\": 0, \"tid\": 7, \"ts\": 505, \"dur\": 400, \"args\": {\"correlation\": 20}}",
    "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"sgemm\", \"pid\": 0, \"tid\": 7, \"ts\": 450, \"dur\": 900, \"args\": {\"correlation\": 99}}",
    "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"ncclDevKernel_SendRecv(ncclDevKernelArgsStorage<4096ul>)\", \"pid\": 1, \"tid\": 20, \"ts\": 56, \"dur\": 64, \"args\": {\"device\": 1, \"stream\": 20, \"correlation\": 1}}",
    "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"sgemm\", \"pid\": 1, \"tid\": 7, \"ts\": 130, \"dur\": 60, \"args\": {\"device\": 1, \"stream\": 7, \"correlation\": 11}}",
    "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"sgemm\", \"pid\": 1, \"tid\": 7, \"ts\": 200, \"dur\": 25, \"args\": {\"device\": 1, \"stream\": 7, \"correlation\": 12}}",
    "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"ncclDevKernel_SendRecv(ncclDevKernelArgsStorage<4096ul>)\", \"pid\": 1, \"tid\": 20, \"ts\": 256, \"dur\": 30, \"args\": {\"device\": 1, \"stream\": 20, \"correlation\": 13}}",
    "{\"ph\": \"f\", \"cat\": \"ac2g\", \"name\": \"ac2g\", \"id\": 13, \"pid\": 1, \"tid\": 20, \"ts\": 256, \"bp\": \"e\"}",
};

/* The events above as one trace, in buf. */
static const char *gpu_trace(char *buf, size_t len)
{
    size_t k = (size_t)snprintf(buf, len, "{\"traceEvents\": [");
    for (size_t i = 0; i < sizeof gpu_events / sizeof *gpu_events && k < len; i++)
        k += (size_t)snprintf(buf + k, len - k, "%s%s", i ? ", " : "", gpu_events[i]);
    if (k < len)
        snprintf(buf + k, len - k, "]}");
    return buf;
}

TEST(trace_gpu_kernels)
{
    char buf[8192], err[512], note[600];
    const char *text = gpu_trace(buf, sizeof buf);
    sc_ptrace *t = sc_ptrace_new();
    sc_costs c;
    CHECK(sc_ptrace_read(t, "g.json", text, strlen(text), 0, err, sizeof err) == SC_OK);
    sc_status st = sc_ptrace_costs(t, &c, 0, note, sizeof note, err, sizeof err);
    CHECK(st == SC_OK);
    if (st == SC_OK && c.S == 2) {
        CHECK_NEAR(c.kind[SC_COST_F][0].median, 50e-6, 1e-12);
        CHECK_NEAR(c.kind[SC_COST_F][1].median, 60e-6, 1e-12);
        CHECK_NEAR(c.kind[SC_COST_BW][0].median, 60e-6, 1e-12);
        CHECK_NEAR(c.kind[SC_COST_BW][1].median, 25e-6, 1e-12);
        CHECK(c.comm.n == 2);
        CHECK_NEAR(c.comm.median, 30e-6, 1e-12);
        CHECK_NEAR(c.step.median, 440e-6, 1e-12);
        CHECK(c.clock && strcmp(c.clock, "gpu kernels") == 0);
        CHECK(strstr(note, "B only") && !strstr(note, "CUDA"));
        sc_costs_free(&c);
    } else if (st == SC_OK) {
        CHECK(!"two stages");
        sc_costs_free(&c);
    }
    sc_ptrace_free(t);
    /* Every allocation refused in turn: SC_ERR_NOMEM, nothing held. */
    int runs = 0, clean = 0;
    for (long at = 1;; at++, runs++) {
        budget b = {.fail_at = at};
        sc_alloc_hook(charge, &b);
        t = sc_ptrace_new();
        st = t ? sc_ptrace_read(t, "g.json", text, strlen(text), 0, err, sizeof err) : SC_ERR_NOMEM;
        if (st == SC_OK)
            st = sc_ptrace_costs(t, &c, 0, note, sizeof note, err, sizeof err);
        if (st == SC_OK)
            sc_costs_free(&c);
        sc_ptrace_free(t);
        sc_alloc_hook(NULL, NULL);
        clean += b.used == 0 && (st == SC_OK || st == SC_ERR_NOMEM);
        if (st == SC_OK || at > 100000)
            break;
    }
    CHECK(runs > 10 && clean == runs + 1);
}

TEST(csv_deadline)
{
    size_t n = 10000, len = 0;
    char *csv = malloc(n * 8 + 16), err[512];
    for (size_t i = 0; i < n; i++)
        len += (size_t)sprintf(csv + len, "%s0F%zu", i ? "," : "", i);
    len += (size_t)sprintf(csv + len, "\n");
    sc_torch_dialect d;
    sc_status st;
    sc_prog *pg = sc_torchcsv_read_until(csv, len, sc_clock_now() - 1, &d, &st, err, sizeof err);
    CHECK(pg == NULL && st == SC_ERR_LIMIT);
    CHECK_STR(err, "time limit reached");
    /* without a deadline it reads on: F cells only, a forward-only program
     * (docs/interchange.md#forward-only) */
    pg = sc_torchcsv_read_until(csv, len, 0, &d, &st, err, sizeof err);
    CHECK(pg != NULL && st == SC_OK && sc_prog_forward_only(pg));
    sc_prog_free(pg);
    free(csv);
}

int main(void)
{
    snprintf(dir, sizeof dir, "/tmp/sc_readers.XXXXXX");
    if (!mkdtemp(dir))
        return 1;
    RUN(read_devices_and_fifos);
    RUN(read_regular_files);
    RUN(json_handed_over);
    RUN(trace_many_processes);
    RUN(trace_ranks_after_events);
    RUN(trace_refused_allocations);
    RUN(trace_actions_without_microbatch);
    RUN(trace_gpu_kernels);
    RUN(csv_deadline);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0)
        fprintf(stderr, "test_readers: %s left behind\n", dir);
    return harness_done("readers");
}
