/* b.c - calls c.c (circle.h). */
#include "circle.h"

int circle_b(int n)
{
    return n > 0 ? circle_c(n - 1) : 1;
}
