/* builtin.h - the verbs of the scaleprof command, one file each.  Each takes
 * argv with argv[0] the verb's name and returns the process exit status:
 * 0 success, 1 the analysis found nothing to analyze or failed, 2 usage. */
#ifndef SP_BUILTIN_H
#define SP_BUILTIN_H
int cmd_run(int argc, char **argv);
int cmd_report(int argc, char **argv);
int cmd_compare(int argc, char **argv);
int cmd_hang(int argc, char **argv);
int cmd_import(int argc, char **argv);
int cmd_dump(int argc, char **argv);
int cmd_export(int argc, char **argv);
int cmd_html(int argc, char **argv);
int cmd_reduce(int argc, char **argv);
#endif
