/*
 * sprof_events.c - print a scaleprof trace as JSON lines, for the import
 * tests: one {"header": ...} line, then one line per event with every
 * schema field by name (strings resolved), then {"diag": ...}.
 *
 * It reads through the format library's public reader only, so what the
 * tests check is what any verb would see.  Kept independent of
 * `scaleprof dump` so the import tests do not depend on that verb's
 * output format.
 */
#include <stdio.h>
#include <string.h>

#include "sprof.h"
#include "json_out.h"


static void print_header(const struct sp_file_info *info)
{
    const struct sp_file_header *h = &info->hdr;
    printf("{\"header\": {\"pid\": %d, \"ppid\": %d, \"rank\": %d, \"world_size\": %d, "
           "\"start_mono\": %llu, \"start_real\": %llu, \"end_mono\": %llu, \"end_real\": %llu, "
           "\"flags\": %u, \"events_dropped\": %llu, \"strings_dropped\": %llu, \"closed\": %d, \"host\": ",
           h->pid, h->ppid, h->rank, h->world_size, (unsigned long long)h->start_mono,
           (unsigned long long)h->start_real, (unsigned long long)h->end_mono,
           (unsigned long long)h->end_real, h->flags, (unsigned long long)h->events_dropped,
           (unsigned long long)h->strings_dropped, info->closed);
    print_json_string(info->host);
    printf(", \"source\": ");
    print_json_string(info->source);
    printf("}}\n");
}

static void print_event(const struct sp_reader *r, const struct sp_event *ev)
{
    int n = 0;
    const struct sp_field_desc *fields = sp_event_fields(ev->type, &n);
    const char *name = sp_event_name(ev->type);
    printf("{\"type\": \"%s\", \"t\": %llu, \"tid\": %u", name ? name : "?", (unsigned long long)ev->t, ev->tid);
    for (int i = 0; i < n; i++) {
        const char *base = (const char *)ev + fields[i].offset;
        printf(", \"%s\": ", fields[i].name);
        if (fields[i].kind == SP_FK_S) {
            int64_t v;
            memcpy(&v, base, sizeof v);
            printf("%lld", (long long)v);
        } else {
            uint64_t v;
            memcpy(&v, base, sizeof v);
            if (fields[i].kind == SP_FK_STR)
                print_json_string(sp_reader_string(r, v));
            else
                printf("%llu", (unsigned long long)v);
        }
    }
    printf("}\n");
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: sprof_events FILE.sprof\n");
        return 2;
    }
    int err = 0;
    struct sp_reader *r = sp_reader_open(argv[1], &err);
    if (!r) {
        fprintf(stderr, "sprof_events: %s: %s\n", argv[1], sp_strerror(err));
        return 1;
    }
    print_header(sp_reader_info(r));
    struct sp_event ev;
    while (sp_reader_next(r, &ev) == 1)
        print_event(r, &ev);
    printf("{\"diag\": ");
    print_json_string(sp_reader_diag(r));
    printf("}\n");
    sp_reader_close(r);
    return 0;
}
