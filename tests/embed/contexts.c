/*
 * contexts.c — libstagecraft's contracts, built by tests/embed.sh against
 * the installed library: two contexts in one process are independent (each
 * its own limits, which count its own programs; closing one leaves the
 * other's programs working), errors come back as codes with messages, a
 * program's figures equal `stagecraft sim --json`'s (the test compares the
 * line printed here), the sandbox refuses a recipe that reads a file.
 * A time limit ends the evaluation, not the host: a recipe that
 * backtracks for hours inside one string.find, and one that loops, fail
 * with STAGECRAFT_LIMIT within seconds; the host's own SIGALRM handler and
 * timer are left as they were, and the context loads the next recipe.
 * argv[1]: a recipe file that opens /etc/passwd; argv[2]: one whose
 * string.find backtracks; argv[3]: one that loops. Prints the figures line
 * and "contexts: N passed, N failed".
 */
#define _POSIX_C_SOURCE 200809L
#include <signal.h>
#include <stagecraft.h>
#include <stdio.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>

static volatile sig_atomic_t host_alarms;
static void host_alarm(int sig)
{
    (void)sig;
    host_alarms++;
}

static double seconds(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static int passed, failed;

static void check(int cond, const char *what, const stagecraft *sc)
{
    if (cond) {
        passed++;
    } else {
        failed++;
        printf("FAIL: %s (%s)\n", what, sc ? stagecraft_errmsg(sc) : "");
    }
}

int main(int argc, char **argv)
{
    stagecraft *a = stagecraft_open(), *b = stagecraft_open();
    check(a && b, "two contexts open", NULL);
    if (!a || !b)
        return 1;
    const char *d1[] = {"p=4", "m=8", NULL}, *d2[] = {"p=8", "m=32", NULL};
    stagecraft_program *pa = NULL, *pb = NULL, *pc = NULL;
    check(stagecraft_load(a, "zb-h1", d1, &pa) == STAGECRAFT_OK, "load zb-h1 in a", a);
    check(stagecraft_load(b, "1f1b", d2, &pb) == STAGECRAFT_OK, "load 1f1b in b", b);
    stagecraft_figures f;
    check(pa && stagecraft_simulate(pa, &f) == STAGECRAFT_OK && f.devices == 4 &&
              f.makespan == 27 && f.peak_memory_max == 4,
          "zb-h1's figures", a);
    if (pa)
        printf("zb-h1 p=4 m=8: instructions %lld makespan %.15g bubble_rate %.15g peak %g %g %g %g\n",
               f.instructions, f.makespan, f.bubble_rate, f.peak_memory[0], f.peak_memory[1],
               f.peak_memory[2], f.peak_memory[3]);

    /* a memory limit on b alone: b's large program is refused, a's works */
    check(stagecraft_limits(b, 0, 2u << 20, 0) == STAGECRAFT_OK, "limits on b", b);
    const char *big[] = {"p=64", "m=512", NULL};
    int rc = stagecraft_load(b, "zb-h2", big, &pc);
    if (rc == STAGECRAFT_OK)
        rc = stagecraft_simulate(pc, &f);
    check(rc == STAGECRAFT_LIMIT && strstr(stagecraft_errmsg(b), "limit"),
          "b's memory limit refuses a large program", b);
    stagecraft_program_free(pc);
    pc = NULL;
    check(stagecraft_check(pa) == STAGECRAFT_OK, "a is not charged b's limit", a);
    const char *text;
    size_t len;
    check(stagecraft_export_text(pa, "torch-csv", &text, &len) == STAGECRAFT_OK &&
              len > 0 && len == strlen(text),
          "export_text", a);

    /* errors: codes with messages */
    const char *bad_m[] = {"p=4", "m=2", NULL}, *bad_d[] = {"p", NULL}, *typo[] = {"q=3", NULL};
    check(stagecraft_load(a, "zb-v", bad_m, &pc) == STAGECRAFT_ARG && !pc &&
              strstr(stagecraft_errmsg(a), "zb-v needs m >= 2p-1"),
          "zb-v with m=2: invalid argument", a);
    check(stagecraft_load(a, "zb-v", bad_d, &pc) == STAGECRAFT_USAGE, "a -D without =", a);
    check(stagecraft_load(a, "1f1b", typo, &pc) == STAGECRAFT_USAGE &&
              strstr(stagecraft_errmsg(a), "unknown parameter 'q'"),
          "an unknown parameter", a);
    check(stagecraft_load(a, "no-such", NULL, &pc) == STAGECRAFT_USAGE, "an unknown recipe", a);
    check(stagecraft_export(pa, "nope", "/tmp/x") != STAGECRAFT_OK, "an unknown format", a);
    check(argc > 1 && stagecraft_load(a, argv[1], NULL, &pc) == STAGECRAFT_SANDBOX &&
              strstr(stagecraft_errmsg(a), "sandbox"),
          "the sandbox refuses io", a);
    check(stagecraft_check(NULL) == STAGECRAFT_USAGE && stagecraft_load(NULL, "x", NULL, &pc) ==
              STAGECRAFT_USAGE, "NULL handles", NULL);
    check(strcmp(stagecraft_code_name(STAGECRAFT_DEADLOCK), "deadlock") == 0, "code names", NULL);

    /* a time-out returns to the host, which keeps its own alarm */
    struct sigaction sa, now;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = host_alarm;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGALRM, &sa, NULL);
    struct itimerval hour = {{0, 0}, {3600, 0}}, left;
    setitimer(ITIMER_REAL, &hour, NULL);
    check(stagecraft_limits(a, 0, 0, 0.5) == STAGECRAFT_OK, "a time limit on a", a);
    for (int k = 2; k <= 3; k++) {
        double t0 = seconds();
        rc = argc > k ? stagecraft_load(a, argv[k], NULL, &pc) : -1;
        double took = seconds() - t0;
        check(rc == STAGECRAFT_LIMIT && strstr(stagecraft_errmsg(a), "time limit exceeded") && !pc,
              k == 2 ? "a backtracking find ends with the time limit" : "a loop ends with the time limit", a);
        check(took < 10, "the time limit returned within seconds", a);
    }
    sigaction(SIGALRM, NULL, &now);
    getitimer(ITIMER_REAL, &left);
    check(now.sa_handler == host_alarm && left.it_value.tv_sec > 3000 && host_alarms == 0,
          "the host's SIGALRM handler and timer are its own still", NULL);
    check(stagecraft_load(a, "zb-h1", d1, &pc) == STAGECRAFT_OK && stagecraft_check(pc) == STAGECRAFT_OK,
          "a loads the next recipe after its time-out", a);
    stagecraft_program_free(pc);
    pc = NULL;
    struct itimerval off = {{0, 0}, {0, 0}};
    setitimer(ITIMER_REAL, &off, NULL);

    /* closing a (and its program) leaves b working */
    stagecraft_close(a);
    check(stagecraft_limits(b, 0, 0, 0) == STAGECRAFT_OK && stagecraft_check(pb) == STAGECRAFT_OK &&
              stagecraft_simulate(pb, &f) == STAGECRAFT_OK && f.devices == 8,
          "b after a closed", b);
    stagecraft_close(b); /* frees pb too */
    printf("contexts: %d passed, %d failed\n", passed, failed);
    return failed != 0;
}
