/* `wick serve` in a build without libmicrohttpd (CMake did not find it
 * through pkg-config): the command exists and says why it cannot run. */
#include <stdio.h>
#include "tools/wick_cli.h"

int wk__cli_serve(int argc, char **argv) {
    (void)argc;
    (void)argv;
    fprintf(stderr, "wick serve: not compiled in: this build has no libmicrohttpd (install libmicrohttpd-dev, "
                    "pkg-config libmicrohttpd, and rebuild)\n");
    return 1;
}
