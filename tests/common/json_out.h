/* json_out.h - what the tests' small trace readers share to print JSON:
 * a string written with the escapes JSON requires. */
#ifndef SP_TEST_JSON_OUT_H
#define SP_TEST_JSON_OUT_H
#include <stdio.h>

static inline void print_json_string(const char *s)
{
    putchar('"');
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            printf("\\%c", c);
        else if (c < 0x20)
            printf("\\u%04x", c);
        else
            putchar(c);
    }
    putchar('"');
}
#endif
