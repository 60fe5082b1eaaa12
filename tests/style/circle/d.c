/* d.c - calls into the circle, and nothing calls it (circle.h). */
#include "circle.h"

int circle_d(int n)
{
    return circle_a(n) + circle_lower(n);
}
