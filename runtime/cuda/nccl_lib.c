/*
 * nccl_lib.c — NCCL, loaded at run time (cuda_impl.h, sc_cuda_nccl_lib).
 *
 * The module does not link libnccl.so.2: where NCCL is missing or not on the
 * loader path, p = 1 and the cuda-local transport still work, and only the
 * nccl transport is unavailable, with one line saying where it looked.
 * NCCL is looked for, in order:
 *   1. STAGECRAFT_NCCL_LIBRARY (a file);
 *   2. libnccl.so.2 on the loader path (LD_LIBRARY_PATH, ld.so.cache, the
 *      module's RUNPATH);
 *   3. the nvidia-nccl-cu* Python wheel, as pip and PyTorch install it:
 *      SITE/nvidia/nccl/lib/libnccl.so.2 for SITE in $VIRTUAL_ENV,
 *      $CONDA_PREFIX, ~/.local, /usr/local and /usr (lib/python3.*
 *      /{site,dist}-packages); then the folder `python3 -c 'import
 *      nvidia.nccl'` names.
 *
 * NCCL writes its debug log (NCCL_DEBUG) to stdout unless told otherwise,
 * which would break `run --json`: before loading, NCCL_DEBUG_FILE is set
 * (unless the user set it) to /dev/stderr, or, when stderr is a regular
 * file (which reopening /dev/stderr would truncate), to
 * nccl-debug.HOST.PID.log in the working folder.
 */
#define _GNU_SOURCE
#include "cuda_impl.h"

#ifdef SC_HAVE_NCCL

#include <dlfcn.h>
#include <glob.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static sc_nccl_lib lib;
static int loaded;
static char why[1024];
static pthread_once_t once = PTHREAD_ONCE_INIT;

/* Resolves every entry of lib from h; 0 (and why) when one is missing. */
static int resolve(void *h, const char *path)
{
    struct { void **slot; const char *name; } want[] = {
        {(void **)&lib.GetVersion, "ncclGetVersion"},
        {(void **)&lib.GetUniqueId, "ncclGetUniqueId"},
        {(void **)&lib.CommInitRankConfig, "ncclCommInitRankConfig"},
        {(void **)&lib.CommFinalize, "ncclCommFinalize"},
        {(void **)&lib.CommDestroy, "ncclCommDestroy"},
        {(void **)&lib.CommAbort, "ncclCommAbort"},
        {(void **)&lib.CommGetAsyncError, "ncclCommGetAsyncError"},
        {(void **)&lib.GetErrorString, "ncclGetErrorString"},
        {(void **)&lib.GetLastError, "ncclGetLastError"},
        {(void **)&lib.GroupStart, "ncclGroupStart"},
        {(void **)&lib.GroupEnd, "ncclGroupEnd"},
        {(void **)&lib.Send, "ncclSend"},
        {(void **)&lib.Recv, "ncclRecv"},
        {(void **)&lib.CommSplit, "ncclCommSplit"},
        {(void **)&lib.AllReduce, "ncclAllReduce"},
        {(void **)&lib.Broadcast, "ncclBroadcast"},
    };
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++)
        if (!(*want[i].slot = dlsym(h, want[i].name))) {
            snprintf(why, sizeof why, "%s has no %s (NCCL 2.19 or newer is needed)", path,
                     want[i].name);
            return 0;
        }
    snprintf(lib.path, sizeof lib.path, "%s", path);
    if (lib.GetVersion(&lib.version) != ncclSuccess)
        lib.version = 0;
    return 1;
}

/* 1 when path loads and resolves; else appends why to `tried`. */
static int try_path(const char *path, char *tried, size_t len)
{
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (h && resolve(h, path))
        return 1;
    size_t n = strlen(tried);
    snprintf(tried + n, len - n, "%s%s", n ? "; " : "", h ? why : dlerror());
    return 0; /* a handle that does not resolve stays open: dlclose of CUDA code is not safe */
}

static int try_glob(const char *pattern, char *tried, size_t len)
{
    glob_t g;
    int ok = 0;
    if (glob(pattern, 0, NULL, &g) == 0) {
        for (size_t i = g.gl_pathc; i-- > 0 && !ok;) /* the newest Python first */
            ok = try_path(g.gl_pathv[i], tried, len);
        globfree(&g);
    }
    return ok;
}

/* The wheel's folder from Python itself (the last resort: it starts python3). */
static int try_python(char *tried, size_t len)
{
    FILE *p = popen("python3 -c 'import nvidia.nccl, os; "
                    "print(os.path.join(list(nvidia.nccl.__path__)[0], \"lib\", \"libnccl.so.2\"))'"
                    " 2>/dev/null", "r");
    if (!p)
        return 0;
    char path[1024] = "";
    char *got = fgets(path, sizeof path, p);
    pclose(p);
    if (!got || !*path)
        return 0;
    path[strcspn(path, "\n")] = 0;
    return try_path(path, tried, len);
}

static void debug_to_stderr(void)
{
    if (getenv("NCCL_DEBUG_FILE"))
        return;
    struct stat st;
    if (fstat(2, &st) == 0 && S_ISREG(st.st_mode))
        setenv("NCCL_DEBUG_FILE", "nccl-debug.%h.%p.log", 0);
    else
        setenv("NCCL_DEBUG_FILE", "/dev/stderr", 0);
}

static void load(void)
{
    char tried[2048] = "";
    debug_to_stderr();
    const char *env = getenv("STAGECRAFT_NCCL_LIBRARY");
    if (env && *env) {
        loaded = try_path(env, tried, sizeof tried);
        if (!loaded)
            snprintf(why, sizeof why, "STAGECRAFT_NCCL_LIBRARY=%.200s does not load: %.700s", env, tried);
        return;
    }
    if ((loaded = try_path("libnccl.so.2", tried, sizeof tried)))
        return;
    const char *prefix[] = {getenv("VIRTUAL_ENV"), getenv("CONDA_PREFIX"), NULL, "/usr/local",
                            "/usr"};
    char home[1024] = "";
    if (getenv("HOME"))
        snprintf(home, sizeof home, "%s/.local", getenv("HOME"));
    prefix[2] = home;
    for (size_t i = 0; i < sizeof prefix / sizeof prefix[0] && !loaded; i++) {
        if (!prefix[i] || !*prefix[i])
            continue;
        char pat[1200];
        snprintf(pat, sizeof pat, "%s/lib/python3*/*-packages/nvidia/nccl/lib/libnccl.so.2",
                 prefix[i]);
        loaded = try_glob(pat, tried, sizeof tried);
    }
    if (!loaded)
        loaded = try_python(tried, sizeof tried);
    if (!loaded)
        snprintf(why, sizeof why, "NCCL not found (libnccl.so.2 is not on the loader path and "
                 "no nvidia-nccl-cu* Python wheel was found; set STAGECRAFT_NCCL_LIBRARY to the "
                 "file): %.700s", tried);
}

const sc_nccl_lib *sc_cuda_nccl_lib(char *err, size_t errlen)
{
    pthread_once(&once, load);
    if (!loaded && err)
        snprintf(err, errlen, "%s", why);
    return loaded ? &lib : NULL;
}

#else /* built without nccl.h */

const sc_nccl_lib *sc_cuda_nccl_lib(char *err, size_t errlen)
{
    if (err)
        snprintf(err, errlen, "the nccl transport is not built into this binary (nccl.h was not "
                 "found at build time)");
    return NULL;
}

#endif
