/* builtin-import.c - placeholder until the verb lands; says so and fails. */
#include <stdio.h>
#include "builtin.h"
int cmd_import(int argc, char **argv)
{
    (void)argc;
    fprintf(stderr, "scaleprof %s: not built yet\n", argv[0]);
    return 2;
}
