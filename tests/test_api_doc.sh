#!/usr/bin/env bash
# The API reference Doxygen built from the installed headers (meson.build,
# api-doc): a page, HTML and man(3), for every installed header, with the
# headers' plain comments as the documentation (scripts/doxygen-filter).
#
# Usage: test_api_doc.sh API_DIR SOURCE_ROOT
set -uo pipefail
api=$1 src=$2
failed=0
for h in "$src"/include/edhoc/*.h "$src"/include/edhoc/*.h.in; do
  name=$(basename "$h" .in)
  html=$api/html/$(echo "${name%.h}" | sed 's/_/__/g')_8h.html
  [ -s "$html" ] || { echo "not ok - no $html for edhoc/$name"; failed=1; }
  [ -s "$api/man/man3/$name.3" ] || { echo "not ok - no man page $name.3"; failed=1; }
done
# A function's comment in edhoc/version.h.in is its documentation.
if grep -q 'The version of the library in use' "$api/man/man3/version.h.3" 2>/dev/null; then
  echo "ok - edhoc_version() documented from its comment"
else
  echo "not ok - version.h.3 lacks the comment of edhoc_version()"
  failed=1
fi
# A member's trailing comment is that member's (edhoc/capture.h).
if grep -q 'NULL pointer, bad length or address family' "$api/man/man3/capture.h.3" 2>/dev/null; then
  echo "ok - macros documented from their trailing comments"
else
  echo "not ok - capture.h.3 lacks the trailing comment of EDHOC_CAPTURE_ERR_ARG"
  failed=1
fi
[ "$failed" = 0 ] && echo "API reference test passed"
exit "$failed"
