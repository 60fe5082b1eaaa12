/*
 * test_fields.c - a pass that asks the reader for some fields of a type
 * gets exactly those fields' values, and zeros for the rest.
 *
 * The analyzer's two passes each read a trace set with field masks
 * (sp_reader_set_fields) so that the fields they ignore are not decoded.
 * That is only safe if a masked read is the unmasked read with the other
 * fields cleared: same events, same order, same times and durations (the
 * next event's time is counted from the previous one's end, so a wrong
 * duration would shift every later time).  This test reads every trace
 * under a directory twice, once whole and once masked, and compares event
 * by event.
 *
 * usage: test_fields DIR   (a trace set written by gen_trace, searched
 * recursively)
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sprof.h"

#define MAX_EVENTS (1u << 22)

struct mask {
    unsigned type;
    uint64_t fields;
};

/* Masks like the analyzer's, and harsher ones: no fields at all. */
static const struct mask masks[] = {
    {SP_EV_GPU, SP_FIELD_BIT(gpu, kind) | SP_FIELD_BIT(gpu, correlation)},
    {SP_EV_CUDA, 0},
    {SP_EV_IO, SP_FIELD_BIT(io, op) | SP_FIELD_BIT(io, fd_kind)},
    {SP_EV_WAIT, 0},
    {SP_EV_NCCL, SP_FIELD_BIT(nccl, seq) | SP_FIELD_BIT(nccl, gpu_dur)},
};
#define NMASKS (sizeof masks / sizeof masks[0])

static uint64_t mask_of(unsigned type)
{
    for (size_t i = 0; i < NMASKS; i++)
        if (masks[i].type == type)
            return masks[i].fields;
    return SP_FIELDS_ALL;
}

static size_t read_all(const char *path, struct sp_event *evs, int masked)
{
    int err;
    struct sp_reader *r = sp_reader_open(path, &err);
    if (!r) {
        fprintf(stderr, "%s: cannot open (%s)\n", path, sp_strerror(err));
        exit(1);
    }
    if (masked)
        for (size_t i = 0; i < NMASKS; i++)
            sp_reader_set_fields(r, masks[i].type, masks[i].fields);
    size_t n = 0;
    while (n < MAX_EVENTS && sp_reader_next(r, &evs[n]) == 1)
        n++;
    sp_reader_close(r);
    return n;
}

/* What the masked read must give for event `e` of the whole read. */
static struct sp_event expected(const struct sp_event *e)
{
    struct sp_event x = *e;
    int nf;
    const struct sp_field_desc *fd = sp_event_fields(e->type, &nf);
    uint64_t keep = mask_of(e->type);
    for (int i = 0; fd && i < nf; i++) {
        int is_dur = !strcmp(fd[i].name, "dur");
        if (!(keep >> i & 1) && !is_dur)
            memset((char *)&x + fd[i].offset, 0, sizeof(uint64_t));
    }
    return x;
}

static int same(const struct sp_event *a, const struct sp_event *b)
{
    return a->type == b->type && a->tid == b->tid && a->t == b->t &&
           !memcmp(&a->nccl, &b->nccl, sizeof(struct sp_event) - offsetof(struct sp_event, nccl));
}

static int check_file(const char *path, struct sp_event *whole, struct sp_event *part)
{
    memset(whole, 0, MAX_EVENTS * sizeof *whole);
    memset(part, 0, MAX_EVENTS * sizeof *part);
    size_t n = read_all(path, whole, 0), m = read_all(path, part, 1);
    if (n != m) {
        printf("FAIL %s: %zu events whole, %zu masked\n", path, n, m);
        return 1;
    }
    size_t zeroed = 0;
    for (size_t i = 0; i < n; i++) {
        struct sp_event x = expected(&whole[i]);
        if (!same(&x, &part[i])) {
            printf("FAIL %s: event %zu (%s at %llu) differs when masked\n", path, i,
                   sp_event_name(whole[i].type), (unsigned long long)whole[i].t);
            return 1;
        }
        zeroed += mask_of(whole[i].type) != SP_FIELDS_ALL;
    }
    printf("%s: %zu events, %zu read with fields left out, all alike\n", path, n, zeroed);
    return zeroed ? 0 : 2;
}

/* Checks every .sprof file under dir (gen_trace puts them in host
 * folders); counts files, and files with masked events. */
static int check_tree(const char *dir, struct sp_event *whole, struct sp_event *part, int *files,
                      int *masked)
{
    DIR *d = opendir(dir);
    if (!d) {
        perror(dir);
        return 1;
    }
    int rc = 0;
    struct dirent *e;
    while (!rc && (e = readdir(d))) {
        if (e->d_name[0] == '.')
            continue;
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        size_t len = strlen(e->d_name);
        if (e->d_type == DT_DIR) {
            rc = check_tree(path, whole, part, files, masked);
        } else if (len > 6 && !strcmp(e->d_name + len - 6, ".sprof")) {
            int r = check_file(path, whole, part);
            (*files)++;
            *masked += r == 0;
            rc = r == 1;
        }
    }
    closedir(d);
    return rc;
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: test_fields DIR\n");
        return 2;
    }
    struct sp_event *whole = malloc(MAX_EVENTS * sizeof *whole);
    struct sp_event *part = malloc(MAX_EVENTS * sizeof *part);
    if (!whole || !part)
        return 1;
    int files = 0, masked = 0;
    int rc = check_tree(argv[1], whole, part, &files, &masked);
    free(whole);
    free(part);
    if (!rc && (!files || !masked)) {
        printf("FAIL: %d trace files, %d with masked events: nothing was tested\n", files, masked);
        rc = 1;
    }
    if (!rc)
        printf("%d trace files read alike whole and masked\n", files);
    return rc;
}
