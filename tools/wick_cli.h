/* Shared pieces of the wick command-line tool's subcommands. */
#ifndef WICK_TOOLS_CLI_H
#define WICK_TOOLS_CLI_H
#include <stdbool.h>

enum { WK__CLI_UNKNOWN = 0, WK__CLI_GGUF, WK__CLI_SAFETENSORS };
/* Which model format a path is: a file starting "GGUF"; a .safetensors or
 * .json file or a directory (safetensors); else unknown. */
int wk__cli_sniff(const char *path);
/* Print "wick CMD: <last error>" to stderr; returns 1 (the exit status). */
int wk__cli_fail(const char *cmd);

int wk__cli_inspect(int argc, char **argv);
int wk__cli_quantize(int argc, char **argv);
int wk__cli_embed(int argc, char **argv);
int wk__cli_generate(int argc, char **argv);
int wk__cli_chat(int argc, char **argv);
int wk__cli_perplexity(int argc, char **argv);
int wk__cli_serve(int argc, char **argv);

#endif
