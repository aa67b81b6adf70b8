#!/usr/bin/env bash
# scripts/check-layers on the tree (passes) and on small trees that break
# each rule (each must fail, naming the file): an include of a higher
# layer, and two modules that include each other.
# usage: test_check_layers.sh SCRIPT SOURCE_ROOT
set -euo pipefail
check=$1 root=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

"$check" "$root" >/dev/null || fail "the tree itself breaks a layer rule"

mk() { mkdir -p "$(dirname "$tmp/$1/$2")"; printf '%s\n' "$3" >"$tmp/$1/$2"; }
# A protocol core that includes the transport.
mk up src/edhoc/core.c '#include "../coap/glue.h"'
mk up src/coap/glue.h '/* transport */'
out=$("$check" "$tmp/up" 2>&1) && fail "an upward include passed"
grep -q 'src/edhoc/core.c (src/edhoc) includes src/coap/glue.h' <<<"$out" || fail "upward: $out"

# Two modules of one folder that include each other.
mk circle cli/a.c '#include "b.h"'
mk circle cli/a.h ''
mk circle cli/b.c '#include "a.h"'
mk circle cli/b.h ''
out=$("$check" "$tmp/circle" 2>&1) && fail "a circle passed"
grep -q 'modules in a circle: cli/a -> cli/b' <<<"$out" || fail "circle: $out"

# A private header shared by a folder is no circle.
mk private src/state/x.c '#include "x_internal.h"'
mk private src/state/x_internal.h '#include "x.h"'
mk private src/state/x.h ''
"$check" "$tmp/private" >/dev/null || fail "a private header counted as a circle"
echo "check-layers: the tree passes, an upward include and a circle fail"
