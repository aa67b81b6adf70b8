#!/usr/bin/env bash
# The installed tree as a distribution packages it and a user builds
# against it (issue #14, item 8 "Packaging"):
#   - `meson install --destdir` of the build directory;
#   - a program that includes every installed header and calls functions
#     of each (tests/test_link_installed.c) compiles and links with
#     `pkg-config --cflags --libs edhoc` against the shared library, and
#     runs; linked against the static library with the dependencies
#     edhoc.pc lists, it runs too;
#   - libedhoc.so exports exactly the functions the installed headers
#     declare (no internal helper such as cred_read_file), all under the
#     public prefixes, and every one of them resolves at link time;
#   - the systemd unit is where pkg-config's systemd says, starts the
#     installed binary with credentials and trust, keeps LimitCORE=0, and
#     passes `systemd-analyze verify` where systemd-analyze is installed.
#
# Usage: test_install.sh BUILD_DIR SOURCE_ROOT VERSION BINDIR UNIT_DIR
# Environment: CC (the project's compiler), MESON (meson's command).
set -euo pipefail

build=$1 src=$2 version=$3 bindir=$4 unit_dir=$5
# Both may be a command with arguments ("ccache cc", "python3 meson.py").
read -r -a cc <<<"${CC:-cc}"
read -r -a meson <<<"${MESON:-meson}"

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
root=$work/root
failed=0
ok() { echo "ok - $*"; }
not_ok() {
  echo "not ok - $*"
  failed=1
}

# ---- install ------------------------------------------------------------
"${meson[@]}" install -C "$build" --destdir "$root" --no-rebuild --quiet >"$work/install.log" 2>&1 || {
  cat "$work/install.log"
  echo "not ok - meson install --destdir failed"
  exit 1
}
ok "meson install --destdir $root"

pc=$(find "$root" -name edhoc.pc -path '*/pkgconfig/*' | head -1)
if [ -z "$pc" ]; then
  echo "not ok - no edhoc.pc installed"
  exit 1
fi
libdir=$(dirname "$(dirname "$pc")")
incdir=$(find "$root" -type d -path '*/include/edhoc' | head -1)
so=$libdir/libedhoc.so
# The pkg-config a packager's user runs, pointed at the staged tree.
PKG_CONFIG_PATH=$(dirname "$pc")
export PKG_CONFIG_PATH
export PKG_CONFIG_SYSROOT_DIR=$root
cflags=(-std=c11 -Wall -Wextra -Werror)

# ---- the shared library: SONAME, links, runs -----------------------------
soname=$(readelf -d "$so" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
if [ "$soname" = "libedhoc.so.${version%%.*}" ] && [ -e "$libdir/$soname" ]; then
  ok "SONAME $soname, installed with its links"
else
  not_ok "SONAME '$soname' (want libedhoc.so.${version%%.*}, present in $libdir)"
fi
if [ -f "$libdir/libedhoc.a" ]; then
  ok "static libedhoc.a installed"
else
  not_ok "no libedhoc.a in $libdir"
fi
if [ "$(pkg-config --modversion edhoc)" = "$version" ]; then
  ok "edhoc.pc version $version"
else
  not_ok "edhoc.pc version $(pkg-config --modversion edhoc), want $version"
fi
# No installed header includes a dependency's header: nothing is public,
# so a program linked against the shared library needs -ledhoc alone.
if [ -z "$(pkg-config --print-requires edhoc)" ] &&
   [ "$(pkg-config --libs-only-l edhoc | xargs)" = "-ledhoc" ]; then
  ok "shared use: pkg-config --libs edhoc is -ledhoc alone"
else
  not_ok "shared use: Requires '$(pkg-config --print-requires edhoc)', libs '$(pkg-config --libs edhoc)'"
fi

# edhoc/version.h is generated from the project's version.
if grep -qx "#define EDHOC_VERSION_STRING \"$version\"" "$incdir/version.h" 2>/dev/null; then
  ok "edhoc/version.h: EDHOC_VERSION_STRING \"$version\""
else
  not_ok "edhoc/version.h missing or without EDHOC_VERSION_STRING \"$version\""
fi
if [ -e "$incdir/version.h.in" ] || [ -e "$incdir/meson.build" ]; then
  not_ok "the template or meson.build of edhoc/version.h is installed"
fi

# Every installed header is the program's to include, and it includes only
# those (the transport's headers are the CLI's and not installed).
installed=$(find "$incdir" -maxdepth 1 -name '*.h' -printf 'edhoc/%f\n' | sort)
included=$(sed -n 's/^#include <\(edhoc\/[a-z_0-9]*\.h\)>.*/\1/p' "$src/tests/test_link_installed.c" | sort)
if [ "$installed" = "$included" ]; then
  ok "installed headers: $(echo "$installed" | xargs)"
else
  not_ok "installed headers differ from those test_link_installed.c includes"
  diff <(echo "$installed") <(echo "$included") || true
fi

# Each installed header compiles alone, under C99 as under C11, pedantic:
# a user's program may include any one of them first, built with either
# standard (capture.h used struct timespec, which <time.h> declares only
# from C11 or with POSIX feature macros).
headers_ok=1
for h in $installed; do
  for std in c99 c11; do
    if ! echo "#include <$h>" | "${cc[@]}" -std=$std -pedantic -Wall -Wextra -Werror \
         -I"$(dirname "$incdir")" -x c -fsyntax-only - 2>"$work/header.log"; then
      not_ok "$h alone does not compile with -std=$std -pedantic -Wall -Wextra -Werror"
      head -5 "$work/header.log"
      headers_ok=0
    fi
  done
done
[ "$headers_ok" = 1 ] && ok "each installed header compiles alone with -std=c99 and -std=c11 -pedantic"

# struct edhoc_session is opaque: an application can allocate one (its
# size is EDHOC_SESSION_SIZE) but cannot reach a field, so a new field in
# a release breaks no program (the library's layout is private).
opaque_src='#include <edhoc/edhoc.h>
_Static_assert(sizeof(struct edhoc_session) == EDHOC_SESSION_SIZE, "size");
int f(struct edhoc_session *s);'
if echo "$opaque_src" | "${cc[@]}" -std=c11 -I"$(dirname "$incdir")" -x c -fsyntax-only - 2>"$work/opaque.log" &&
   ! printf '%s\n%s\n' "$opaque_src" 'int f(struct edhoc_session *s) { return s->state; }' |
     "${cc[@]}" -std=c11 -I"$(dirname "$incdir")" -x c -fsyntax-only - 2>"$work/opaque.log"; then
  ok "struct edhoc_session is opaque (EDHOC_SESSION_SIZE bytes, no field reachable)"
else
  not_ok "struct edhoc_session exposes its layout, or its size is not EDHOC_SESSION_SIZE"
fi

# shellcheck disable=SC2046
if "${cc[@]}" "${cflags[@]}" "$src/tests/test_link_installed.c" -o "$work/linked_shared" \
     $(pkg-config --cflags --libs edhoc) 2>"$work/cc.log"; then
  if readelf -d "$work/linked_shared" | grep -q "NEEDED.*\[$soname\]"; then
    ok "compiled and linked with pkg-config --cflags --libs edhoc (shared)"
  else
    not_ok "the program is not linked against $soname"
  fi
  mkdir "$work/run_shared"
  if LD_LIBRARY_PATH=$libdir "$work/linked_shared" "$work/run_shared"; then
    ok "runs against the installed $soname"
  else
    not_ok "the program linked against $soname fails"
  fi
else
  cat "$work/cc.log"
  not_ok "compile/link with pkg-config --cflags --libs edhoc"
fi

# Static: libedhoc.a plus what edhoc.pc says it needs (its own
# Libs.private and the Requires.private packages). The packages' own
# private libraries are left out: Debian's libpcap.pc names static
# libraries (libsystemd) that its -dev packages do not ship.
own_private=$(sed -n 's/^Libs.private: *//p' "$pc")
deps=$(pkg-config --print-requires-private edhoc | awk '{print $1}' | xargs)
# shellcheck disable=SC2046,SC2086
if "${cc[@]}" "${cflags[@]}" "$src/tests/test_link_installed.c" -o "$work/linked_static" \
     $(pkg-config --cflags edhoc) $(pkg-config --libs-only-L edhoc) -l:libedhoc.a \
     $own_private $(pkg-config --libs $deps) 2>"$work/cc.log"; then
  mkdir "$work/run_static"
  if "$work/linked_static" "$work/run_static"; then
    ok "static use: libedhoc.a with Requires.private ($deps) links and runs"
  else
    not_ok "the program linked against libedhoc.a fails"
  fi
else
  cat "$work/cc.log"
  not_ok "static link with libedhoc.a and Requires.private ($deps)"
fi

# ---- exported symbols ----------------------------------------------------
# (Type A: the version nodes' own names, which are not functions.)
nm -D --defined-only "$so" | awk '$2 != "A" {print $3}' | sed 's/@.*//' | sort -u >"$work/exported"
n_exported=$(wc -l <"$work/exported")
# libcoap's namespace (coap_*) stays libcoap's: a program linking both
# must never resolve one of its calls to ours.
bad_prefix=$(grep -vE '^(edhoc_|oscore_)' "$work/exported" || true)
if [ -z "$bad_prefix" ]; then
  ok "$n_exported exported symbols, all edhoc_* or oscore_*"
else
  not_ok "exported outside the public prefixes: $(echo "$bad_prefix" | xargs)"
fi
# Every export is bound to a version node of src/libedhoc.map, so a later
# incompatible change can get a new node while programs linked before it
# keep resolving the symbols they were linked against.
nodes=$(sed -n 's/^\(LIBEDHOC_[0-9][0-9.]*\) *{.*/\1/p' "$src/src/libedhoc.map" | xargs)
if [ -z "$nodes" ]; then
  not_ok "src/libedhoc.map has no version node (LIBEDHOC_x.y { ... })"
else
  unversioned=$(nm -D --defined-only "$so" | awk -v nodes=" $nodes " '$2 != "A" {
      split($3, v, "@+"); if (index(nodes, " " v[2] " ") == 0) print $3 }')
  if [ -z "$unversioned" ]; then
    ok "every export carries a version node of src/libedhoc.map ($nodes)"
  else
    not_ok "exports outside the version nodes $nodes: $(echo "$unversioned" | head -5 | xargs)"
  fi
  first_node=${nodes%% *}
  if readelf -V "$work/linked_shared" 2>/dev/null | grep -q "Name: $first_node "; then
    ok "a program linked against $soname requires $first_node (readelf -V)"
  else
    not_ok "the program linked against $soname records no requirement of $first_node (readelf -V)"
  fi
fi
# The demo credentials' private keys are published (data/demo/): the CLI
# and the tests carry them, the installed library must not, neither as
# functions nor as bytes.
if grep -q '^edhoc_demo_' "$work/exported"; then
  not_ok "libedhoc exports the demo credentials: $(grep '^edhoc_demo_' "$work/exported" | xargs)"
fi
demo_key_found=
for keyfile in "$src"/data/demo/*.key.hex; do
  pattern=$(tr -d '\n' <"$keyfile" | sed 's/../\\x&/g')
  for lib in "$so" "$libdir/libedhoc.a"; do
    if LC_ALL=C grep -qaP "$pattern" "$lib"; then
      demo_key_found="$demo_key_found $(basename "$keyfile") in $(basename "$lib");"
    fi
  done
done
if [ -z "$demo_key_found" ]; then
  ok "no demo private key ($(ls "$src"/data/demo/*.key.hex | wc -l) of data/demo/) in libedhoc.so or libedhoc.a"
else
  not_ok "demo private keys in the installed library:$demo_key_found"
fi
for internal in cred_read_file cred_sha256 edhoc_ead_parse; do
  if grep -qx "$internal" "$work/exported"; then
    not_ok "internal $internal is exported"
  fi
done

# The functions the installed headers declare, as the compiler sees them
# (gcc's -aux-info lists every prototype with the file that declares it).
aux_cc=
if "${cc[@]}" --version 2>/dev/null | grep -qi 'gcc\|free software foundation'; then
  aux_cc=${cc[*]}
elif command -v gcc >/dev/null; then
  aux_cc=gcc
fi
if [ -n "$aux_cc" ]; then
  for h in $installed; do echo "#include <$h>"; done >"$work/all_headers.c"
  # shellcheck disable=SC2086
  $aux_cc -std=c11 -I"$(dirname "$incdir")" -fsyntax-only -aux-info "$work/aux" "$work/all_headers.c"
  grep -F "/* $incdir/" "$work/aux" | grep -E ':NC \*/ extern ' |
    sed -E 's#^/\* [^ ]+ \*/ extern ##; s/ \(.*//; s/.*[ *]//' | sort -u >"$work/declared"
  n_declared=$(wc -l <"$work/declared")
  if cmp -s "$work/declared" "$work/exported"; then
    ok "exports = the $n_declared functions the installed headers declare"
  else
    not_ok "exports differ from the installed headers' functions (< declared only, > exported only; src/libedhoc.map):"
    diff "$work/declared" "$work/exported" | grep '^[<>]' || true
  fi
  # Each declared function resolves in the shared library at link time.
  {
    cat "$work/all_headers.c"
    echo "typedef void (*fn)(void);"
    echo "fn const every_function[] = {"
    sed 's/.*/    (fn)\&&,/' "$work/declared"
    echo "};"
    echo "int main(void) { return every_function[0] == 0; }"
  } >"$work/every_function.c"
  # shellcheck disable=SC2046
  if "${cc[@]}" -std=c11 "$work/every_function.c" -o "$work/every_function" \
       $(pkg-config --cflags --libs edhoc) 2>"$work/cc.log"; then
    ok "all $n_declared declared functions resolve against $soname"
  else
    grep -m 20 'undefined reference' "$work/cc.log" || cat "$work/cc.log"
    not_ok "declared functions missing from $soname"
  fi
else
  echo "skip - no gcc to list the installed headers' prototypes (-aux-info)"
fi

# ---- data and documentation ----------------------------------------------
# The JSON Schemas (the man page's FILES) and the documents, each one
# installed from the source tree byte for byte.
datadir=$(dirname "$(dirname "$(find "$root" -name edhoc-cli.1 -path '*/man1/*' | head -1)")")
datadir=$(dirname "$datadir") # .../share
files_ok=1
for schema in "$src"/docs/json/*.schema.json; do
  installed_file=$datadir/edhoc-cli/json/$(basename "$schema")
  if ! cmp -s "$schema" "$installed_file"; then
    not_ok "${installed_file#"$root"} missing or not docs/json/$(basename "$schema")"
    files_ok=0
  fi
done
extra=$(comm -13 <(cd "$src/docs/json" && ls) <(cd "$datadir/edhoc-cli/json" 2>/dev/null && ls))
if [ -n "$extra" ]; then
  not_ok "installed in share/edhoc-cli/json but not in docs/json: $extra"
  files_ok=0
fi
[ "$files_ok" = 1 ] && ok "JSON Schemas in ${datadir#"$root"}/edhoc-cli/json: $(cd "$src/docs/json" && echo *)"
files_ok=1
for doc in README.md HACKING.md docs/DESIGN.md docs/json.md docs/airtime.md docs/exporter.md docs/oscore-b2.md; do
  if ! cmp -s "$src/$doc" "$datadir/doc/edhoc-cli/$(basename "$doc")"; then
    not_ok "share/doc/edhoc-cli/$(basename "$doc") missing or not $doc"
    files_ok=0
  fi
done
[ "$files_ok" = 1 ] && ok "documents in ${datadir#"$root"}/doc/edhoc-cli: $(cd "$datadir/doc/edhoc-cli" && echo *)"
# Shell completion where bash-completion (XDG_DATA_DIRS/bash-completion/
# completions, loaded on demand by the command's name) and Debian's zsh
# (vendor-completions in its fpath) look.
for f in bash-completion/completions/edhoc-cli zsh/vendor-completions/_edhoc-cli; do
  if [ -s "$datadir/$f" ]; then
    ok "completion ${datadir#"$root"}/$f"
  else
    not_ok "no completion at ${datadir#"$root"}/$f"
  fi
done
if bash -c 'source "$1" && complete -p edhoc-cli' _ "$datadir/bash-completion/completions/edhoc-cli" \
     >/dev/null 2>&1; then
  ok "the installed bash completion registers itself for edhoc-cli"
else
  not_ok "sourcing the installed bash completion does not register a completion for edhoc-cli"
fi
if grep -q 'share/edhoc\\-cli/json/' "$datadir/man/man1/edhoc-cli.1"; then
  ok "the man page names share/edhoc-cli/json/"
else
  not_ok "the man page does not name share/edhoc-cli/json/"
fi

# ---- the systemd unit ----------------------------------------------------
unit=$root$unit_dir/edhoc-cli-responder.service
if [ ! -f "$unit" ]; then
  not_ok "no unit at $unit_dir/edhoc-cli-responder.service"
  find "$root" -name 'edhoc-cli-responder.service'
else
  ok "unit installed in $unit_dir"
  # ExecStart with its continuation lines joined.
  exec_start=$(sed -e ':a' -e '/\\$/N; s/\\\n//; ta' "$unit" | sed -n 's/^ExecStart=//p' | tr -s ' ')
  exe=${exec_start%% *}
  if [ "$exe" = "$bindir/edhoc-cli" ] && [ -x "$root$exe" ]; then
    ok "ExecStart runs the installed $exe"
  else
    not_ok "ExecStart runs '$exe', the binary is installed as $bindir/edhoc-cli"
  fi
  if grep -q '@[A-Z_]*@' "$unit"; then
    not_ok "unsubstituted @VARIABLE@ in the unit"
  fi
  if grep -qx 'LimitCORE=0' "$unit"; then
    ok "LimitCORE=0"
  else
    not_ok "LimitCORE=0 missing"
  fi
  # Without credentials the responder would refuse the demo set, and
  # without trust it would accept nobody (issue #14, item 5).
  for opt in --cred --key --trust; do
    case " $exec_start " in
      *" $opt /etc/edhoc-cli/"*) ;;
      *) not_ok "ExecStart lacks $opt /etc/edhoc-cli/...: $exec_start" ;;
    esac
  done
  ok "ExecStart: $exec_start"

  if command -v systemd-analyze >/dev/null; then
    # verify checks that ExecStart's binary exists: point it into the
    # staged tree, and the man page of Documentation= there too.
    mkdir "$work/verify" "$work/verify_bad"
    sed "s#^ExecStart=$bindir/#ExecStart=$root$bindir/#" "$unit" >"$work/verify/edhoc-cli-responder.service"
    man_dir=$(dirname "$(dirname "$(find "$root" -name edhoc-cli.1 | head -1)")")
    man_opt=()
    command -v man >/dev/null || man_opt=(--man=no)
    if MANPATH=$man_dir systemd-analyze verify "${man_opt[@]}" "$work/verify/edhoc-cli-responder.service" \
         >"$work/verify.log" 2>&1; then
      ok "systemd-analyze verify"
    else
      cat "$work/verify.log"
      not_ok "systemd-analyze verify"
    fi
    # The check can fail: a unit whose binary is missing is refused.
    sed "s#^ExecStart=$bindir/#ExecStart=$work/nonexistent/#" "$unit" >"$work/verify_bad/edhoc-cli-responder.service"
    if MANPATH=$man_dir systemd-analyze verify "${man_opt[@]}" "$work/verify_bad/edhoc-cli-responder.service" \
         >/dev/null 2>&1; then
      not_ok "systemd-analyze verify accepts a unit whose ExecStart binary is missing"
    else
      ok "systemd-analyze verify refuses a unit whose ExecStart binary is missing"
    fi
  else
    echo "skip - systemd-analyze not installed: unit not verified"
  fi
fi

if [ "$failed" -ne 0 ]; then
  echo "install test FAILED"
  exit 1
fi
echo "install test passed"
