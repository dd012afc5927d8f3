/*
 * faultsim.c -- the test-only fail-after-N allocator (make faultsim; docs/develop.md).
 * Preloaded (LD_PRELOAD=build/tests/libfaultsim.so) in front of the C library, it takes
 * every malloc, calloc, realloc and free of the process (the C library's own strdup,
 * fopen... and SQLite and cJSON reach them too) and, while armed, counts the allocations:
 * the Nth one fails (returns NULL), and with `persist` every one after it as well. While
 * armed it also remembers each block it handed out and not yet freed, with its caller, so
 * the disarm reports what a failing path leaked.
 * Armed by faultsim_arm() (a harness finds it with dlsym(RTLD_DEFAULT)) or from the
 * environment at load (FAULTSIM_FAIL_AT=N, FAULTSIM_PERSIST=0|1; the leaks are then
 * reported at exit; FAULTSIM_NOSYNC=1 skips the disk flushes). Never linked into the engine or any shipped binary.
 */
#include <dlfcn.h>
#include <execinfo.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* glibc's own allocator under its exported internal names: no dlsym(RTLD_NEXT) at the
 * first malloc, which would itself allocate. */
extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void __libc_free(void *);

#define FS_EXPORT __attribute__((visibility("default")))
#define FS_FRAMES 24

/* What a harness reads after a run: the failure that fired first, with its stack. */
typedef struct faultsim_report {
    long allocs;               /* allocations counted while armed */
    long failed;               /* how many were failed */
    int nframes;
    void *frames[FS_FRAMES];   /* the first failed allocation's stack */
    long leaks;                /* blocks allocated while armed and not freed */
    void *leak_site[8];        /* the callers of the first leaked blocks */
} faultsim_report;

/* The live blocks allocated while armed: an open-addressed table of pointers (a zero key
 * is empty, a one key a deleted slot), grown by the C library's allocator directly. */
typedef struct slot {
    uintptr_t p;
    void *site;
} slot;

static slot *tab;
static size_t tab_cap, tab_used, tab_live;
static int armed;
static long fail_at, count, nfailed;
static int persist;
static faultsim_report rep;
static volatile int lock_word;
static __thread int inside; /* this thread is already in the shim (backtrace allocates) */

static void lock(void)
{
    while (__atomic_exchange_n(&lock_word, 1, __ATOMIC_ACQUIRE)) {
    }
}
static void unlock(void) { __atomic_store_n(&lock_word, 0, __ATOMIC_RELEASE); }

static size_t hash(uintptr_t p) { return (size_t)((p >> 4) * 0x9E3779B97F4A7C15ULL); }

static int tab_grow(void)
{
    size_t ncap = tab_cap ? tab_cap * 2 : 4096;
    slot *n = __libc_calloc(ncap, sizeof *n);
    if (!n) return -1;
    for (size_t i = 0; i < tab_cap; i++) {
        if (tab[i].p <= 1) continue;
        size_t j = hash(tab[i].p) & (ncap - 1);
        while (n[j].p) j = (j + 1) & (ncap - 1);
        n[j] = tab[i];
    }
    __libc_free(tab);
    tab = n;
    tab_cap = ncap;
    tab_used = tab_live;
    return 0;
}

static void tab_add(void *p, void *site)
{
    if ((tab_used + 1) * 2 > tab_cap && tab_grow()) return;
    size_t j = hash((uintptr_t)p) & (tab_cap - 1);
    while (tab[j].p > 1) j = (j + 1) & (tab_cap - 1);
    if (tab[j].p == 0) tab_used++;
    tab[j] = (slot){(uintptr_t)p, site};
    tab_live++;
}

/* 1 when p was tracked (and is no longer). */
static int tab_del(void *p)
{
    if (!tab_cap || !p) return 0;
    size_t j = hash((uintptr_t)p) & (tab_cap - 1);
    while (tab[j].p) {
        if (tab[j].p == (uintptr_t)p) {
            tab[j].p = 1;
            tab_live--;
            return 1;
        }
        j = (j + 1) & (tab_cap - 1);
    }
    return 0;
}

/* Whether this allocation fails; counts it while armed. */
static int should_fail(void)
{
    if (!armed || inside) return 0;
    lock();
    long n = ++count;
    int fail = fail_at > 0 && (n == fail_at || (persist && n > fail_at));
    if (fail) nfailed++;
    unlock();
    if (fail && nfailed == 1) {
        inside = 1;
        rep.nframes = backtrace(rep.frames, FS_FRAMES);
        inside = 0;
    }
    return fail;
}

static void track(void *p, void *site)
{
    if (!armed || inside || !p) return;
    lock();
    tab_add(p, site);
    unlock();
}

static void untrack(void *p)
{
    if (!p || !tab_live) return;
    lock();
    tab_del(p);
    unlock();
}

FS_EXPORT void *malloc(size_t n)
{
    if (should_fail()) return NULL;
    void *p = __libc_malloc(n);
    track(p, __builtin_return_address(0));
    return p;
}

FS_EXPORT void *calloc(size_t n, size_t size)
{
    if (should_fail()) return NULL;
    void *p = __libc_calloc(n, size);
    track(p, __builtin_return_address(0));
    return p;
}

FS_EXPORT void *realloc(void *old, size_t n)
{
    if (!old) return malloc(n);
    if (n == 0) {
        untrack(old);
        __libc_free(old);
        return NULL;
    }
    if (should_fail()) return NULL; /* the old block stays the caller's */
    lock();
    int was = tab_live && tab_del(old);
    unlock();
    void *p = __libc_realloc(old, n);
    if (!p) {
        if (was) track(old, __builtin_return_address(0));
        return NULL;
    }
    /* A block from before the arming grown while armed is still the older owner's. */
    if (was) track(p, __builtin_return_address(0));
    return p;
}

FS_EXPORT void free(void *p)
{
    untrack(p);
    __libc_free(p);
}

/* FAULTSIM_NOSYNC=1: fsync and fdatasync return at once. A run writes a new store tens of
 * thousands of times over; what reaches the disk is no question here (tests/crash/ asks
 * it), and the flushes are most of a run's time. */
static int nosync;

FS_EXPORT int fsync(int fd)
{
    if (nosync) return 0;
    int (*real)(int) = (int (*)(int))dlsym(RTLD_NEXT, "fsync");
    return real ? real(fd) : -1;
}

FS_EXPORT int fdatasync(int fd)
{
    if (nosync) return 0;
    int (*real)(int) = (int (*)(int))dlsym(RTLD_NEXT, "fdatasync");
    return real ? real(fd) : -1;
}

/* The allocator's other entry points pass through, uncounted: nothing of ours uses them
 * and a block they return is never tracked, so freeing it is plain. */

/* Arm: the fail_at-th allocation from now fails (0: none fails, the run only counts and
 * tracks), and with persist every later one too. */
FS_EXPORT void faultsim_arm(long n, int keep_failing)
{
    void *warm[2];
    backtrace(warm, 2); /* its first call loads the unwinder, which allocates */
    lock();
    memset(&rep, 0, sizeof rep);
    fail_at = n;
    persist = keep_failing;
    count = nfailed = 0;
    if (tab) memset(tab, 0, tab_cap * sizeof *tab);
    tab_used = tab_live = 0;
    armed = 1;
    unlock();
}

/* Disarm and fill *out (may be NULL). Returns the blocks leaked since the arming. */
FS_EXPORT long faultsim_disarm(faultsim_report *out)
{
    lock();
    armed = 0;
    rep.allocs = count;
    rep.failed = nfailed;
    rep.leaks = (long)tab_live;
    int k = 0;
    for (size_t i = 0; i < tab_cap && k < 8; i++)
        if (tab[i].p > 1) rep.leak_site[k++] = tab[i].site;
    if (out) *out = rep;
    long leaks = rep.leaks;
    unlock();
    return leaks;
}

/* The report so far, armed or not, without the lock: for a crash handler, which may run
 * while this thread holds it. */
FS_EXPORT void faultsim_peek(faultsim_report *out)
{
    *out = rep;
    out->allocs = count;
    out->failed = nfailed;
    out->leaks = (long)tab_live;
}

static void report_at_exit(void)
{
    faultsim_report r;
    long leaks = faultsim_disarm(&r);
    fprintf(stderr, "faultsim: %ld allocations armed, %ld failed, %ld leaked\n", r.allocs,
            r.failed, leaks);
}

__attribute__((constructor)) static void faultsim_from_env(void)
{
    const char *ns = getenv("FAULTSIM_NOSYNC");
    nosync = ns && *ns == '1';
    const char *at = getenv("FAULTSIM_FAIL_AT");
    if (!at || !*at) return;
    const char *p = getenv("FAULTSIM_PERSIST");
    faultsim_arm(strtol(at, NULL, 10), p && *p == '1');
    atexit(report_at_exit);
}
