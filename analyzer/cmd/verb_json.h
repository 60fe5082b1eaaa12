/* verb_json.h - pieces of JSON that more than one verb writes (report's
 * hang section and hang --json): a list of ints, and a number that may be
 * unknown.  Kept beside the verbs until output/json.h takes them. */
#ifndef SP_VERB_JSON_H
#define SP_VERB_JSON_H
#include "json.h"

/* "key": [v[0], ..., v[n-1]] */
static inline void sp_verb_json_ints(struct sp_json *j, const char *key, const int *v, int n)
{
    sp_json_open(j, key, '[');
    for (int i = 0; i < n; i++)
        sp_json_int(j, NULL, v[i]);
    sp_json_close(j, ']');
}

/* "key": v, or "key": null when it is not known. */
static inline void sp_verb_json_num_if(struct sp_json *j, const char *key, int known, double v)
{
    if (known)
        sp_json_num(j, key, v);
    else
        sp_json_null(j, key);
}
#endif
