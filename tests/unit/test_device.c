/*
 * test_device.c — the table of device kinds (runtime/device/device.h):
 * finding a kind by name, the properties the run driver asks instead of
 * comparing names, and what every row must hold for the driver to work
 * (a transport for threads that always starts last, one for MPI ranks, ids
 * that fit). Needs no GPU: the cuda row is read, never opened.
 */
#include "harness.h"

#include <string.h>

#include "device/device.h"

static const char *const names[] = {"cpu", "cuda"};

TEST(find)
{
    char err[128];
    const sc_device_kind *cpu = sc_device_kind_find("cpu", err, sizeof err);
    const sc_device_kind *cuda = sc_device_kind_find("cuda", err, sizeof err);
    CHECK(cpu && cuda && cpu != cuda);
    CHECK(strcmp(cpu->name, "cpu") == 0);
    CHECK(strcmp(cuda->name, "cuda") == 0);
    CHECK(!sc_device_kind_find("tpu", err, sizeof err));
    CHECK(strcmp(err, "unknown backend 'tpu' (known: cpu, cuda)") == 0);
    CHECK(!sc_device_kind_find("", err, sizeof err));
    char small[12]; /* a short buffer gets a cut message, never an overrun */
    CHECK(!sc_device_kind_find("tpu", small, sizeof small));
    CHECK(strlen(small) == sizeof small - 1);
    sc_backend *be = NULL;
    CHECK(sc_backend_open("tpu", 0, 0, &be, err, sizeof err) == SC_ERR_ARG && !be);
    CHECK(sc_backend_open("cpu", 3, 0, &be, err, sizeof err) == SC_OK && be);
    sc_backend_free(be);
}

/* The properties the driver reads, as docs/run.md#check and
 * docs/run.md#devices-threads-mpi-ranks-gpus say. */
TEST(properties)
{
    char err[128];
    const sc_device_kind *cpu = sc_device_kind_find("cpu", err, sizeof err);
    const sc_device_kind *cuda = sc_device_kind_find("cuda", err, sizeof err);
    CHECK(cpu->tolerance == 1e-5 && cuda->tolerance == 1e-4);
    CHECK(cpu->host_memory && !cpu->gpu_memory && !cpu->count && !cpu->uuid);
    CHECK(!cuda->host_memory && cuda->gpu_memory && cuda->count && cuda->uuid);
    CHECK(strcmp(cpu->threads[0]->name, "local") == 0);
    CHECK(!cpu->threads[1]);
    CHECK(strcmp(cpu->ranks->name, "mpi") == 0);
    CHECK(strcmp(cuda->threads[0]->name, "nccl") == 0);
    CHECK(strcmp(cuda->threads[1]->name, "cuda-local") == 0);
    CHECK(!cuda->threads[2]);
    CHECK(cuda->ranks == cuda->threads[0]);
    const sc_transport_kind *nccl = cuda->ranks;
    CHECK(nccl->gpu_each && nccl->in_order && nccl->lazy && nccl->usable && nccl->label);
    CHECK(nccl->start_bytes > 0 && cuda->start_bytes > 0 && cpu->start_bytes == 0);
}

/* Every row: what the driver calls without looking. */
TEST(rows)
{
    char err[128];
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        const sc_device_kind *k = sc_device_kind_find(names[i], err, sizeof err);
        CHECK(k && k->open && k->tolerance > 0 && k->threads && k->threads[0] && k->ranks);
        int n = 0;
        for (; k->threads[n]; n++) {
            const sc_transport_kind *t = k->threads[n];
            CHECK(t->name && t->threads_new && t->free);
            CHECK(!t->gpu_each || (t->label && k->count)); /* its messages and GPU count */
        }
        /* the last one starts without conditions: it is the fallback */
        const sc_transport_kind *last = k->threads[n - 1];
        CHECK(!last->gpu_each && !last->in_order && !last->usable);
        const sc_transport_kind *r = k->ranks;
        CHECK(r->name && r->rank_new && r->free);
        CHECK(r->id_bytes <= SC_TRANSPORT_ID_MAX && (!r->id_bytes || r->id_new));
        CHECK(!r->usable || r->label); /* "under mpirun ... needs LABEL" */
        CHECK(k->gpu_memory || k->start_bytes == 0);
    }
}

int main(void)
{
    RUN(find);
    RUN(properties);
    RUN(rows);
    return harness_done("device");
}
