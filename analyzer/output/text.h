/* text.h - what the verbs' plain-text output shares: the terminal's width,
 * word wrapping, sizes in words. */
#ifndef SP_TEXT_H
#define SP_TEXT_H
#include <stddef.h>
#include <stdint.h>
/* sp_text_columns: the terminal's columns when stdout is one (COLUMNS,
 * else TIOCGWINSZ), 0 when it is a pipe or a file, whose layout stays
 * fixed for scripts.  sp_text_wrapped: prints text word by word to stdout;
 * a word that would pass column `cols` starts a new line indented by
 * `indent`; `used` is the column the cursor is at; cols 0 prints the text
 * as is.  Control bytes are printed as \xNN.  Ends the line. */
int sp_text_columns(void);
void sp_text_wrapped(const char *text, int used, int indent, int cols);
/* 4194304 -> "4.0 MiB", 512 -> "512 B". */
void sp_text_bytes(uint64_t b, char *out, size_t len);
/* An NCCL op's name as the trace format spells it ("allreduce"), "op"
 * when unknown. */
const char *sp_text_nccl_op(uint32_t op);
#endif
