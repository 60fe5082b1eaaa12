/*
 * test_parse.c - option values are checked the same way everywhere
 * (format/parse.c): a value a user mistyped is refused with a message that
 * quotes it and says what was expected; a good value is taken exactly.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "parse.h"

static int failures;
#define CHECK(cond, ...)                                \
    do {                                                \
        if (!(cond)) {                                  \
            failures++;                                 \
            printf("FAIL %s:%d: ", __FILE__, __LINE__); \
            printf(__VA_ARGS__);                        \
            printf("\n");                               \
        }                                               \
    } while (0)

static void refused_int(const char *s, long long lo, long long hi, const char *says)
{
    char err[SP_PARSE_ERR] = "";
    long long v = 12345;
    int rc = sp_parse_int(s, lo, hi, &v, err, sizeof err);
    CHECK(rc == -1 && v == 12345, "\"%s\" accepted as an integer in %lld..%lld", s, lo, hi);
    CHECK(strstr(err, says) != NULL, "message for \"%s\" is \"%s\", wanted \"%s\"", s, err, says);
}

int main(void)
{
    char err[SP_PARSE_ERR];
    long long v, a, b, *list;
    size_t n;
    int64_t ns;

    /* a rank past the last, a word, an empty value, trailing garbage,
     * a number too big for any type, a negative skip */
    refused_int("7", 0, 1, "\"7\" is out of range (expected 0..1)");
    refused_int("abc", 0, 1, "\"abc\" is not an integer");
    refused_int("", 0, 1, "is not an integer");
    refused_int("3x", 0, 10, "\"3x\" is not an integer");
    refused_int(" 3", 0, 10, "is not an integer");
    refused_int("99999999999999999999999", 0, 10, "is not an integer");
    refused_int("-1", 0, 10, "\"-1\" is out of range");
    refused_int("a\x1b[2J", 0, 10, "\"a\\x1b[2J\"");
    CHECK(sp_parse_int("-3", -5, 1, &v, err, sizeof err) == 0 && v == -3, "-3 in -5..1");
    CHECK(sp_parse_int("8", 1, 64, &v, NULL, 0) == 0 && v == 8, "8 without a message buffer");

    CHECK(sp_parse_double("0.25", 0, 1, &(double){0}, err, sizeof err) == 0, "0.25");
    CHECK(sp_parse_double("nan", 0, 1, &(double){0}, err, sizeof err) == -1, "nan accepted");
    CHECK(sp_parse_double("2", 0, 1, &(double){0}, err, sizeof err) == -1 && strstr(err, "out of range"),
          "2 in 0..1: %s", err);

    CHECK(sp_parse_range("5:8", 0, 100, &a, &b, err, sizeof err) == 0 && a == 5 && b == 8, "5:8");
    CHECK(sp_parse_range("5:", 0, 100, &a, &b, err, sizeof err) == 0 && a == 5 && b == 100, "5:");
    CHECK(sp_parse_range(":8", 0, 100, &a, &b, err, sizeof err) == 0 && a == 0 && b == 8, ":8");
    CHECK(sp_parse_range("4", 0, 100, &a, &b, err, sizeof err) == 0 && a == 4 && b == 4, "4");
    CHECK(sp_parse_range("9:5", 0, 100, &a, &b, err, sizeof err) == -1 && strstr(err, "A <= B"), "9:5: %s",
          err);
    CHECK(sp_parse_range("1:2:3", 0, 100, &a, &b, err, sizeof err) == -1, "1:2:3 accepted");
    CHECK(sp_parse_range("a:b", 0, 100, &a, &b, err, sizeof err) == -1 && strstr(err, "not a range"),
          "a:b: %s", err);

    CHECK(sp_parse_list("0,2,4-7,2", 0, 100, &list, &n, err, sizeof err) == 0 && n == 6 && list[0] == 0 &&
              list[1] == 2 && list[5] == 7,
          "0,2,4-7,2");
    if (n == 6)
        free(list);
    CHECK(sp_parse_list("0,,2", 0, 100, &list, &n, err, sizeof err) == -1, "0,,2 accepted");
    CHECK(sp_parse_list("3,200", 0, 100, &list, &n, err, sizeof err) == -1 && strstr(err, "out of range"),
          "3,200: %s", err);
    CHECK(sp_parse_list("0-2000000000", 0, 2000000000, &list, &n, err, sizeof err) == -1 &&
              strstr(err, "more than"),
          "a two-billion list: %s", err);

    CHECK(sp_parse_duration("250ms", 1000000000, 0, INT64_MAX / 2, &ns, err, sizeof err) == 0 && ns == 250000000,
          "250ms");
    CHECK(sp_parse_duration("1.5", 1000000000, 0, INT64_MAX / 2, &ns, err, sizeof err) == 0 && ns == 1500000000,
          "1.5 in seconds");
    CHECK(sp_parse_duration("3 parsecs", 1, 0, 100, &ns, err, sizeof err) == -1 && strstr(err, "unit"),
          "3 parsecs: %s", err);
    CHECK(sp_parse_duration("-1s", 1, 0, 100, &ns, err, sizeof err) == -1, "-1s accepted");

    static const char *const modes[] = {"off", "on", "auto"};
    CHECK(sp_parse_choice("auto", modes, 3, err, sizeof err) == 2, "auto");
    CHECK(sp_parse_choice("fast", modes, 3, err, sizeof err) == -1 &&
              strcmp(err, "\"fast\" is not one of: off, on, auto") == 0,
          "fast: %s", err);

    printf("%s\n", failures ? "FAILED" : "ok");
    return failures != 0;
}
