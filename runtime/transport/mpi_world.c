/*
 * mpi_world.c — the helpers of sc_mpi.h over MPI_COMM_WORLD (start, small
 * collectives, end), the guard of the calls that wait for every rank and
 * cannot be polled, and the MPI module's one exported symbol, the table of
 * mpi_api.h (the transport itself: transport_mpi.c). Part of the MPI
 * module, libstagecraft_mpi.so.
 */
#include "backoff.h"
#include "mpi_api.h"
#include "mpi_mod.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include <mpi.h>

/* Seconds on the monotonic clock (the deadlines of waits). */
static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int started;
static double started_timeout; /* sc_mpi_init's timeout_s: the guard of later blocking calls */

/* The guard of an MPI call that waits for every rank and cannot be polled
 * (MPI_Init, MPI_Comm_split_type, MPI_Finalize): a watchdog thread ends the
 * process (one line on stderr) unless guard_end comes first. After MPI_Init
 * it ends the job as every other give-up does, through MPI_Abort: mpirun
 * then kills every rank, a stopped one included. Ending only this process
 * (exit code 9) left that to mpirun's handling of a rank that exits inside
 * MPI_Finalize, which under load once waited on a stopped peer for good
 * (OpenMPI 4.1). MPI_Abort from this second thread is outside what MPI
 * promises in MPI_THREAD_SINGLE, so an alarm bounds it: if it has not
 * ended the process within ABORT_GRACE_S, SIGALRM does, and a rank ended
 * by a signal makes mpirun kill the job too. Before MPI_Init has returned
 * there is no job to abort: exit code 9. One guard at a time (the
 * runtime's main thread). */
#define ABORT_GRACE_S 5
static pthread_mutex_t wd_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t wd_cv = PTHREAD_COND_INITIALIZER;
static int wd_done, wd_abort;
static double wd_timeout;
static const char *wd_what;
static pthread_t wd_thread;
static int wd_running;

static void *watchdog(void *arg)
{
    (void)arg;
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    double whole = (double)(time_t)wd_timeout;
    until.tv_sec += (time_t)wd_timeout;
    until.tv_nsec += (long)((wd_timeout - whole) * 1e9);
    if (until.tv_nsec >= 1000000000L) {
        until.tv_sec++;
        until.tv_nsec -= 1000000000L;
    }
    pthread_mutex_lock(&wd_mu);
    while (!wd_done && pthread_cond_timedwait(&wd_cv, &wd_mu, &until) != ETIMEDOUT)
        ;
    int done = wd_done;
    pthread_mutex_unlock(&wd_mu);
    if (!done) { /* the only way out of a blocked MPI call */
        char msg[240];
        int n = snprintf(msg, sizeof msg, "stagecraft: error: mpi: waited %g s for the other "
                         "ranks %s; a peer is gone or stuck: giving up\n", wd_timeout, wd_what);
        if (n > 0 && write(STDERR_FILENO, msg, (size_t)n) < 0)
            n = 0;
        if (wd_abort) {
            signal(SIGALRM, SIG_DFL);
            alarm(ABORT_GRACE_S);
            MPI_Abort(MPI_COMM_WORLD, 9);
        }
        _exit(9);
    }
    return NULL;
}

/* Starts the guard of a call (what: "to start (MPI_Init)"); no guard
 * without a timeout. */
static void guard_begin(double timeout_s, const char *what, int can_abort)
{
    wd_running = 0;
    if (!(timeout_s > 0))
        return;
    wd_timeout = timeout_s;
    wd_what = what;
    wd_done = 0;
    wd_abort = can_abort;
    wd_running = pthread_create(&wd_thread, NULL, watchdog, NULL) == 0;
}

void sc_mpimod_guard_begin(const char *what)
{
    guard_begin(started_timeout, what, 1);
}

void sc_mpimod_guard_end(void)
{
    if (!wd_running)
        return;
    pthread_mutex_lock(&wd_mu);
    wd_done = 1;
    pthread_cond_signal(&wd_cv);
    pthread_mutex_unlock(&wd_mu);
    pthread_join(wd_thread, NULL);
    wd_running = 0;
}

/* *threads: in, 1 to ask for MPI_THREAD_MULTIPLE (MPI_Init_thread); out,
 * 1 when MPI gives it. */
static sc_status mod_init(int *rank, int *size, int *threads, double timeout_s, char *err,
                          size_t errlen)
{
    int init = 0, want = *threads, got = MPI_THREAD_SINGLE;
    MPI_Initialized(&init);
    started_timeout = timeout_s;
    int rc = MPI_SUCCESS;
    if (!init) {
        guard_begin(timeout_s, "to start (MPI_Init)", 0);
        rc = want ? MPI_Init_thread(NULL, NULL, MPI_THREAD_MULTIPLE, &got) : MPI_Init(NULL, NULL);
        sc_mpimod_guard_end();
    } else
        MPI_Query_thread(&got);
    *threads = got >= MPI_THREAD_MULTIPLE;
    if (rc != MPI_SUCCESS) {
        snprintf(err, errlen, "MPI_Init failed");
        return SC_ERR_RUNTIME;
    }
    started = 1;
    MPI_Comm_rank(MPI_COMM_WORLD, rank);
    MPI_Comm_size(MPI_COMM_WORLD, size);
    return SC_OK;
}

sc_status sc_mpimod_poll_one(MPI_Request *req, double timeout_s, const char *what, char *err,
                             size_t errlen)
{
    double deadline = now() + timeout_s;
    for (sc_backoff b = {0};; sc_backoff_wait(&b)) {
        int done = 0;
        if (MPI_Test(req, &done, MPI_STATUS_IGNORE) != MPI_SUCCESS) {
            snprintf(err, errlen, "mpi: %s failed", what);
            return SC_ERR_RUNTIME;
        }
        if (done)
            return SC_OK;
        if (timeout_s > 0 && now() > deadline) {
            snprintf(err, errlen, "mpi: waited %g s in %s; a peer is gone or stuck: giving up",
                     timeout_s, what);
            return SC_ERR_RUNTIME;
        }
    }
}

static sc_status mod_max(double *v, int n, const char *what, double timeout_s, char *err,
                         size_t errlen)
{
    MPI_Request req;
    if (MPI_Iallreduce(MPI_IN_PLACE, v, n, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD, &req) !=
        MPI_SUCCESS) {
        snprintf(err, errlen, "mpi: allreduce failed");
        return SC_ERR_RUNTIME;
    }
    return sc_mpimod_poll_one(&req, timeout_s, what, err, errlen);
}

static sc_status mod_barrier(double timeout_s, char *err, size_t errlen)
{
    MPI_Request req;
    if (MPI_Ibarrier(MPI_COMM_WORLD, &req) != MPI_SUCCESS) {
        snprintf(err, errlen, "mpi: barrier failed");
        return SC_ERR_RUNTIME;
    }
    return sc_mpimod_poll_one(&req, timeout_s, "the barrier before the step", err, errlen);
}

static sc_status mod_bcast(void *buf, int n, int root, double timeout_s, char *err, size_t errlen)
{
    MPI_Request req;
    if (MPI_Ibcast(buf, n, MPI_BYTE, root, MPI_COMM_WORLD, &req) != MPI_SUCCESS) {
        snprintf(err, errlen, "mpi: broadcast failed");
        return SC_ERR_RUNTIME;
    }
    return sc_mpimod_poll_one(&req, timeout_s, "a broadcast", err, errlen);
}

static sc_status mod_local(int *local_rank, int *local_size, char *err, size_t errlen)
{
    MPI_Comm node;
    guard_begin(started_timeout, "to find the ranks of each node (MPI_Comm_split_type)", 1);
    int rc = MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
    sc_mpimod_guard_end();
    if (rc != MPI_SUCCESS) {
        snprintf(err, errlen, "mpi: cannot find the ranks of this node (MPI_Comm_split_type)");
        return SC_ERR_RUNTIME;
    }
    MPI_Comm_rank(node, local_rank);
    MPI_Comm_size(node, local_size);
    MPI_Comm_free(&node);
    return SC_OK;
}

static void mod_finish(int code)
{
    if (!started)
        return;
    started = 0;
    if (code)
        MPI_Abort(MPI_COMM_WORLD, code);
    /* MPI_Finalize waits for every rank (a fence): a rank stopped after the
     * step would hang the others, which have done their part. */
    guard_begin(started_timeout, "to finish (MPI_Finalize)", 1);
    MPI_Finalize();
    sc_mpimod_guard_end();
}

__attribute__((visibility("default"))) extern const struct sc_mpi_api sc_mpi_api_v1;

const struct sc_mpi_api sc_mpi_api_v1 = {
    .version = SC_MPI_API_VERSION,
    .size = sizeof(struct sc_mpi_api),
    .init = mod_init,
    .max = mod_max,
    .barrier = mod_barrier,
    .bcast = mod_bcast,
    .local = mod_local,
    .finish = mod_finish,
    .transport_new = sc_mpimod_transport_new,
    .transport_free = sc_mpimod_transport_free,
};
