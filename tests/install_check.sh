#!/usr/bin/env bash
# Install wick into a temporary prefix and build a C program against it with
# pkg-config, as a user would: #include <wick/wick.h>, $(pkg-config --libs wick).
set -euo pipefail
build_dir=$1
prefix=$(mktemp -d)
trap 'rm -rf "$prefix"' EXIT
cmake --install "$build_dir" --prefix "$prefix" >/dev/null
export PKG_CONFIG_PATH="$prefix/lib/pkgconfig:$prefix/lib/x86_64-linux-gnu/pkgconfig"
cat > "$prefix/prog.c" <<'C'
#include <stdio.h>
#include <wick/wick.h>
int main(void) {
    wk_scope_begin();
    wk_tensor *u = wk_sum_all(wk_exp(wk_arange(0, 3, 1, WK_F32, wk_cpu())));
    double v = 0;
    if (!u || wk_item(u, &v) != WK_OK) { fprintf(stderr, "%s\n", wk_last_error()); return 1; }
    printf("sum(exp(0..2)) = %.6f\n", v);
    wk_scope_end();
    return (v > 11.107 && v < 11.108) ? 0 : 1;
}
C
cc -std=c11 "$prefix/prog.c" -o "$prefix/prog_static" $(pkg-config --cflags wick) $(pkg-config --libs --static wick) -static-libgcc
LD_LIBRARY_PATH="$prefix/lib:$prefix/lib/x86_64-linux-gnu" "$prefix/prog_static"
echo "install check: ok"
