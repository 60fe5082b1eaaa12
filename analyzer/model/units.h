/*
 * units.h - the analyzer's units of time, defined once.
 *
 * Trace times are nanoseconds of CLOCK_MONOTONIC; the reports speak in
 * microseconds, milliseconds, seconds and GPU hours.  The constants are
 * doubles, since every use turns a count of nanoseconds into a figure to
 * print or compare; integer arithmetic casts ((uint64_t)NS_PER_S).
 */
#ifndef SP_UNITS_H
#define SP_UNITS_H

#define NS_PER_US 1e3
#define NS_PER_MS 1e6
#define NS_PER_S 1e9
#define SECONDS_PER_HOUR 3600.0

#endif
