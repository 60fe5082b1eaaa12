/*
 * test_foreign.c - pointed at something that is not a trace (a log file,
 * an empty file, a directory, a file from a newer scaleprof), the reader
 * says so with a precise error instead of reading garbage.  And the writer
 * refuses to overwrite an existing file or follow a symlink.
 */
#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>

#include "testutil.h"

static void write_file(const char *path, const void *data, size_t len)
{
    FILE *f = fopen(path, "wb");
    CHECK(f && fwrite(data, 1, len, f) == len, "write %s", path);
    fclose(f);
}

static void expect_open_error(const char *path, int want, const char *what)
{
    int err = 0;
    struct sp_reader *r = sp_reader_open(path, &err);
    CHECK(!r && err == want, "%s: got %s, want %s", what, r ? "a reader" : sp_strerror(err),
          sp_strerror(want));
}

int main(void)
{
    char dir[4096], path[4200], link_path[4200];
    tmpdir_make(dir, sizeof dir);

    snprintf(path, sizeof path, "%s/train.log", dir);
    const char *text = "epoch 1 step 10 loss 2.31\nepoch 1 step 20 loss 2.05\n";
    write_file(path, text, strlen(text));
    expect_open_error(path, SP_E_MAGIC, "a text file");

    snprintf(path, sizeof path, "%s/empty.sprof", dir);
    write_file(path, "", 0);
    expect_open_error(path, SP_E_MAGIC, "an empty file");

    expect_open_error(dir, SP_E_MAGIC, "a directory");

    snprintf(path, sizeof path, "%s/missing.sprof", dir);
    expect_open_error(path, SP_E_IO, "a missing file");

    /* A real trace, then the same with a version from the future. */
    snprintf(path, sizeof path, "%s/new.sprof", dir);
    int err;
    struct sp_writer *w = sp_writer_create(path, NULL, &err);
    CHECK(w, "create: %s", sp_strerror(err));
    CHECK(!sp_writer_create(path, NULL, &err) && err == SP_E_IO && errno == EEXIST,
          "an existing trace is never overwritten");
    CHECK(sp_writer_close(w) == 0, "close");
    int fd = open(path, O_RDWR);
    uint32_t future = SP_VERSION + 1;
    CHECK(pwrite(fd, &future, sizeof future, 8) == sizeof future, "patch version");
    close(fd);
    expect_open_error(path, SP_E_VERSION, "a trace from a newer writer");
    /* Version 1 coded events differently: refused, and said so. */
    uint32_t old = 1;
    fd = open(path, O_RDWR);
    CHECK(pwrite(fd, &old, sizeof old, 8) == sizeof old, "patch version");
    close(fd);
    expect_open_error(path, SP_E_OLD_VERSION, "a trace in the old version 1 encoding");
    CHECK(strstr(sp_strerror(SP_E_OLD_VERSION), "older"), "the message says why");

    /* A symlink planted where the trace will go is not followed. */
    snprintf(link_path, sizeof link_path, "%s/planted.sprof", dir);
    CHECK(symlink("/tmp/sprof-should-not-exist", link_path) == 0, "symlink");
    CHECK(!sp_writer_create(link_path, NULL, &err) && err == SP_E_IO, "symlink refused");
    struct stat st;
    CHECK(lstat("/tmp/sprof-should-not-exist", &st) < 0, "nothing created through the link");

    /* The file gets the mode the user asked for (shared result folders). */
    snprintf(path, sizeof path, "%s/shared.sprof", dir);
    mode_t old_mask = umask(0);
    struct sp_writer_opts shared = {.mode = 0640, .background = 1};
    w = sp_writer_create(path, &shared, &err);
    umask(old_mask);
    CHECK(w && sp_writer_close(w) == 0, "create with mode 0640");
    CHECK(stat(path, &st) == 0 && (st.st_mode & 0777) == 0640, "mode %o", st.st_mode & 0777);

    struct sp_writer_opts bad = {.slot_size = 100};
    CHECK(!sp_writer_create(path, &bad, &err) && err == SP_E_ARG, "tiny slots rejected");
    printf("ok: text, empty, directory, missing, future-version files rejected with the "
           "right error; no overwrite, no symlink, mode as asked\n");
    tmpdir_remove(dir);
    return 0;
}
