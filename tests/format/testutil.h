/*
 * testutil.h - what the format tests share: a CHECK that says where and
 * why a test failed, a private temporary directory (and a main that runs
 * the tests over one), a writer made or the test ends, and a reader that
 * collects a whole trace into memory for assertions.
 */
#ifndef SP_TESTUTIL_H
#define SP_TESTUTIL_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sprof.h"

#define CHECK(cond, ...)                                                       \
    do {                                                                       \
        if (!(cond)) {                                                         \
            fprintf(stderr, "%s:%d: FAILED: %s: ", __FILE__, __LINE__, #cond); \
            fprintf(stderr, __VA_ARGS__);                                      \
            fprintf(stderr, "\n");                                             \
            exit(1);                                                           \
        }                                                                      \
    } while (0)

/* A fresh directory under $TMPDIR (or /tmp), removed by tmpdir_remove. */
static inline const char *tmpdir_make(char *buf, size_t cap)
{
    const char *base = getenv("TMPDIR");
    snprintf(buf, cap, "%s/sprof-test-XXXXXX", base && *base ? base : "/tmp");
    CHECK(mkdtemp(buf) != NULL, "mkdtemp %s", buf);
    return buf;
}

static inline void tmpdir_remove(const char *dir)
{
    char cmd[4200];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0)
        fprintf(stderr, "warning: could not remove %s\n", dir);
}

/* main's whole body: each of tests (a NULL-ended list) over one fresh
 * directory, removed after them. */
static inline int tmpdir_run(void (*const tests[])(const char *dir))
{
    char dir[4096];
    tmpdir_make(dir, sizeof dir);
    for (size_t i = 0; tests[i]; i++)
        tests[i](dir);
    tmpdir_remove(dir);
    return 0;
}

/* A writer of the new trace dir/name, its path in path; o NULL: the
 * preload's defaults.  A writer that cannot be made ends the test. */
static inline struct sp_writer *test_writer(const char *dir, const char *name, const struct sp_writer_opts *o,
                                            char *path, size_t len)
{
    snprintf(path, len, "%s/%s", dir, name);
    int err;
    struct sp_writer *w = sp_writer_create(path, o, &err);
    CHECK(w, "create: %s", sp_strerror(err));
    return w;
}

#endif
