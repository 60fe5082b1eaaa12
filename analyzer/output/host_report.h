/*
 * host_report.h - the host-side report of a job that used no GPU, as
 * text and as JSON (docs/report-json.md, "Host-side report").
 */
#ifndef SP_HOST_REPORT_H
#define SP_HOST_REPORT_H

#include "host.h"
#include "model.h"

/* The view on stdout, prose wrapped to cols. */
void sp_host_text(const struct sp_model *m, const struct sp_host *h, int cols);
/* The same as one JSON object: "kind": "host", "gpu": false. */
void sp_host_json(const struct sp_model *m, const struct sp_host *h, int schema_version, const char *version);

#endif
