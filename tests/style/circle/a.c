/* a.c - calls b.c, which reaches back here through c.c (circle.h). */
#include "circle.h"

int circle_a(int n)
{
    return n > 0 ? circle_b(n - 1) : 0;
}
