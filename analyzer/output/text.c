/* text.c - see text.h.  Layout adapts to a terminal and stays fixed in a
 * pipe or a file, where scripts read it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "text.h"

#include "sprof.h"

int sp_text_columns(void)
{
    if (!isatty(STDOUT_FILENO))
        return 0;
    const char *env = getenv("COLUMNS");
    if (env && atoi(env) > 0)
        return atoi(env);
    struct winsize ws;
    if (ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0)
        return ws.ws_col;
    return 0;
}

/* n bytes of s to stdout, control bytes (an escape sequence from a trace's
 * strings) as \xNN: no terminal acts on them. */
static void put_text(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c < 32 || c == 127)
            printf("\\x%02x", c);
        else
            putchar(c);
    }
}

void sp_text_wrapped(const char *text, int used, int indent, int cols)
{
    if (cols <= 0) {
        put_text(text, strlen(text));
        putchar('\n');
        return;
    }
    int line_start = used;
    while (*text) {
        size_t sp = strspn(text, " "), len = strcspn(text + sp, " ");
        if (!len)
            break;
        if (used > line_start && used + (int)sp + (int)len > cols) {
            printf("\n%*s", indent, "");
            used = line_start = indent;
            sp = 0;
        }
        printf("%*s", (int)sp, "");
        put_text(text + strspn(text, " "), len);
        used += (int)sp + (int)len;
        text += strspn(text, " ") + len;
    }
    putchar('\n');
}

void sp_text_bytes(uint64_t b, char *out, size_t len)
{
    static const char *const unit[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    double x = (double)b;
    int u = 0;
    while (x >= 1024 && u < 4) {
        x /= 1024;
        u++;
    }
    if (u == 0)
        snprintf(out, len, "%llu B", (unsigned long long)b);
    else
        snprintf(out, len, "%.1f %s", x, unit[u]);
}

const char *sp_text_nccl_op(uint32_t op)
{
    const char *n = sp_enum_name(SP_EV_NCCL, "op", op);
    return n ? n : "op";
}
