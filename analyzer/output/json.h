/* json.h - a small streaming JSON writer for the verbs' --json output.
 * Keys are given for members of objects and NULL for array elements; the
 * writer places commas and escapes strings.  Non-finite numbers print as
 * null, since JSON has no NaN. */
#ifndef SP_JSON_H
#define SP_JSON_H
#include <stdio.h>

#define SP_JSON_DEPTH 32
struct sp_json {
    FILE *out;
    int depth;
    int count[SP_JSON_DEPTH];
};
void sp_json_init(struct sp_json *j, FILE *out);
/* sp_json_init, and the document's opening '{' (the verbs' documents are
 * objects; sp_json_close(j, '}') ends it with a newline). */
void sp_json_begin(struct sp_json *j, FILE *out);
/* s as a JSON string, quotes included, always valid UTF-8: a byte that does
 * not begin a well-formed sequence (RFC 3629: no overlong form, no
 * surrogate, nothing above U+10FFFF) is written as the code point of the
 * same value (\u00XX), and control characters escaped.  NULL as "". */
void sp_json_put_string(FILE *out, const char *s);
/* Length of the well-formed UTF-8 sequence at p (2..4), 0 when there is
 * none (RFC 3629, table 3-7 of Unicode: the second byte's range depends on
 * the first).  p[0] >= 0x80; reads no further than a byte that ends the
 * sequence early (a NUL ends it). */
int sp_utf8_len(const unsigned char *p);
void sp_json_open(struct sp_json *j, const char *key, char bracket); /* '{' or '[' */
void sp_json_close(struct sp_json *j, char bracket);
void sp_json_str(struct sp_json *j, const char *key, const char *v);
void sp_json_num(struct sp_json *j, const char *key, double v);
void sp_json_int(struct sp_json *j, const char *key, long long v);
void sp_json_bool(struct sp_json *j, const char *key, int v);
void sp_json_null(struct sp_json *j, const char *key);
/* v as a string, null when v is NULL. */
void sp_json_str_or_null(struct sp_json *j, const char *key, const char *v);
/* A communicator id as its fixed-width hex string ("00c0ffee..."), as
 * every verb prints it. */
void sp_json_comm(struct sp_json *j, const char *key, unsigned long long comm);
/* v, or null when it is not known. */
void sp_json_num_if(struct sp_json *j, const char *key, int known, double v);
/* An array of the n ints or strings at v (the ranks a finding names, a
 * job's hosts). */
void sp_json_int_list(struct sp_json *j, const char *key, const int *v, int n);
void sp_json_str_list(struct sp_json *j, const char *key, char *const *v, int n);
/* The same of n strings held in rows of `stride` bytes from `rows` (a
 * table of fixed-size names: the model's hosts). */
void sp_json_str_rows(struct sp_json *j, const char *key, const char *rows, size_t stride, int n);

#endif
