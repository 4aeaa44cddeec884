/*
 * cpu_limit.h — a per-input CPU-time budget for the libFuzzer harnesses
 * (make fuzz). libFuzzer's -timeout is wall clock: on a loaded machine (CI
 * runs two harnesses at a time on two cores, beside whatever else runs) a
 * slow but finite input reached it (one seed of fuzz_program needs 15.5 s
 * of CPU under the sanitizers). Each harness calls sc_fuzz_cpu_limit()
 * first for every input: it arms a one-shot ITIMER_PROF, which counts the
 * process's CPU time (user and system), so an input that runs past
 * SC_FUZZ_CPU_S seconds of CPU aborts with a line saying so, and libFuzzer
 * keeps it as a crash-* artifact. make fuzz keeps a wall-clock -timeout far
 * above it, for a harness that would block without using the CPU.
 */
#ifndef SC_FUZZ_CPU_LIMIT_H
#define SC_FUZZ_CPU_LIMIT_H

#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <unistd.h>

#ifndef SC_FUZZ_CPU_S
#define SC_FUZZ_CPU_S 60
#endif
#define SC_FUZZ_STR_(x) #x
#define SC_FUZZ_STR(x) SC_FUZZ_STR_(x)

static void sc_fuzz_cpu_out(int sig)
{
    static const char msg[] = "fuzz: the input ran past its budget of " SC_FUZZ_STR(SC_FUZZ_CPU_S)
                              " s of CPU time (tests/fuzz/cpu_limit.h)\n";
    (void)sig;
    if (write(2, msg, sizeof msg - 1) < 0) { /* nothing more to say */
    }
    abort();
}

static void sc_fuzz_cpu_limit(void)
{
    static int installed;
    if (!installed) {
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = sc_fuzz_cpu_out;
        sigaction(SIGPROF, &sa, NULL);
        installed = 1;
    }
    struct itimerval it = {{0, 0}, {SC_FUZZ_CPU_S, 0}}; /* one shot, from now */
    setitimer(ITIMER_PROF, &it, NULL);
}

#endif
