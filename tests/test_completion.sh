#!/usr/bin/env bash
# The bash completion (generated from the option tables by
# scripts/completion.py) fed to bash as bash-completion would: sourced,
# COMP_WORDS/COMP_CWORD set for a command line, the function run, COMPREPLY
# compared with what the program says (its --help, `help --options CMD`).
# A zsh syntax check too, where zsh is installed.
#
# Usage: test_completion.sh BASH_COMPLETION ZSH_COMPLETION EDHOC_CLI
set -uo pipefail

bash_file=$1 zsh_file=$2 cli=$3
failed=0
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# shellcheck disable=SC1090
source "$bash_file" || { echo "not ok - cannot source $bash_file"; exit 1; }

# complete WORD... : COMPREPLY for the line, the last word being completed,
# sorted, one per line.
complete_line() {
  COMP_WORDS=("$@")
  COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
  COMPREPLY=()
  _edhoc_cli
  printf '%s\n' "${COMPREPLY[@]}" | sed '/^$/d' | sort
}

expect() { # WANT(lines) WORD...
  local want=$1
  shift
  local got
  got=$(complete_line "$@")
  # shellcheck disable=SC2086 # one expected word per line
  want=$(printf '%s\n' $want | sort)
  if [ "$got" = "$want" ]; then
    echo "ok - '$*' completes to $(echo "$got" | xargs)"
  else
    echo "not ok - '$*': got '$(echo "$got" | xargs)', want '$(echo "$want" | xargs)'"
    failed=1
  fi
}

# The example of issue #26.
expect "--observe" edhoc-cli coap --ob
# Commands, from the program's own list, also after common options (which
# may come before the command, docs/edhoc-cli.1 COMMON OPTIONS).
commands=$("$cli" --help | sed -n 's/^  \([a-z]*\) .*/\1/p' | xargs)
expect "$commands help" edhoc-cli ""
expect "simulate" edhoc-cli -q --crypto sodium si
expect "openssl sodium auto" edhoc-cli --crypto ""
expect "--verbose --version" edhoc-cli --ver
# Every command's options are exactly its table's.
for c in $commands; do
  expect "$("$cli" help --options "$c" | awk '$1 ~ /^--/ {print $1}' | xargs)" edhoc-cli "$c" --
done
# Values where the table lists them, in both spellings.
expect "ccs x509 cwt" edhoc-cli keygen --type ""
expect "ccs cwt" edhoc-cli keygen --type=c
expect "ccs cwt" edhoc-cli keygen --type = c
expect "sign dh" edhoc-cli keygen --suite 2 --use ""
expect "a2 bare both" edhoc-cli responder --framing ""
# No value to offer: nothing, rather than an option name.
expect "" edhoc-cli simulate --method ""
# Positional words: bench's benchmarks (and load), oscore's operation.
expect "crypto contexts" edhoc-cli bench --json c
expect "" edhoc-cli bench crypto ""
expect "--peers" edhoc-cli bench load --pe
expect "protect" edhoc-cli oscore --context c.conf pro
expect "simulate" edhoc-cli help --options sim
# File names where the table says FILE / DIR.
mkdir "$work/states" && touch "$work/capture.pcap" "$work/cred.pem"
(
  cd "$work" || exit 1
  expect "capture.pcap" edhoc-cli bytes capt
  expect "cred.pem" edhoc-cli initiator --cred cr
  expect "none" edhoc-cli coap --state-dir no
  expect "states" edhoc-cli coap --state-dir st
  [ "$failed" = 0 ]
) || failed=1

if command -v zsh >/dev/null; then
  if zsh -n "$zsh_file"; then
    echo "ok - zsh -n $zsh_file"
  else
    echo "not ok - zsh -n $zsh_file"
    failed=1
  fi
else
  echo "skip - zsh not installed: _edhoc-cli not parsed"
fi
head -1 "$zsh_file" | grep -qx '#compdef edhoc-cli' || { echo "not ok - _edhoc-cli lacks #compdef"; failed=1; }

if [ "$failed" -ne 0 ]; then
  echo "completion test FAILED"
  exit 1
fi
echo "completion test passed"
