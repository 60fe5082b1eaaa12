/* user.c - the higher file: sets the hook and calls hook.c (circle.h). */
#include "circle.h"

static int twice(int n)
{
    return 2 * n;
}

int circle_user(int n)
{
    circle_hook = twice;
    return circle_lower(n);
}
