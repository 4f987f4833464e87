/* Shared pieces of the CLI subcommands: format sniffing, error exit. */
#include "tools/wick_cli.h"
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include "wick/wick.h"

int wk__cli_sniff(const char *path) {
    struct stat st;
    if (stat(path, &st) != 0) return WK__CLI_UNKNOWN;
    if (S_ISDIR(st.st_mode)) return WK__CLI_SAFETENSORS;
    FILE *f = fopen(path, "rb");
    if (!f) return WK__CLI_UNKNOWN;
    char magic[4] = {0};
    size_t n = fread(magic, 1, 4, f);
    fclose(f);
    if (n == 4 && !memcmp(magic, "GGUF", 4)) return WK__CLI_GGUF;
    size_t len = strlen(path);
    if ((len >= 12 && !strcmp(path + len - 12, ".safetensors")) || (len >= 5 && !strcmp(path + len - 5, ".json")))
        return WK__CLI_SAFETENSORS;
    return WK__CLI_UNKNOWN;
}

int wk__cli_fail(const char *cmd) {
    fprintf(stderr, "wick %s: %s\n", cmd, wk_last_error()[0] ? wk_last_error() : wk_status_name(wk_last_status()));
    return 1;
}
