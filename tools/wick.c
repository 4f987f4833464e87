#include <stdio.h>
#include <string.h>
#include "wick/wick.h"
int main(int argc, char **argv) {
    if (argc > 1 && strcmp(argv[1], "info") == 0) {
        printf("wick %s\n", WICK_VERSION_STRING);
        return 0;
    }
    return 0;
}
