/*
 * circle.h - a fixture for call_graph.py: four files, three of which call
 * each other in a circle (a.c -> b.c -> c.c -> a.c), one that only calls
 * into the circle (d.c), and a lower file (hook.c) that calls a higher
 * one (user.c) back through a hook, which is not a circle.
 */
#ifndef SP_CIRCLE_H
#define SP_CIRCLE_H

int circle_a(int n);
int circle_b(int n);
int circle_c(int n);
int circle_d(int n);

extern int (*circle_hook)(int n);
int circle_lower(int n);
int circle_user(int n);

#endif
