#!/usr/bin/env python3
"""The man page's option lists against the commands' option tables.

Usage: check_man_options.py EDHOC_CLI MANPAGE [COMMAND...]

Each command's options come from `edhoc-cli help --options COMMAND` (its
table, the same one its parser and --help use). An option is documented
when an entry (.TP) of the command's own section (.SS "edhoc\\-cli COMMAND
...") names it, or a shared section does (.SH "EDHOC OPTIONS", "COMMON
OPTIONS"); in simulate, --cred-i / --cred-r are documented by --cred.
Each entry of a command's section must be an option the command takes,
and each entry of a shared section an option some command takes. Exit 0,
or 1 after listing every mismatch.
"""
import re
import subprocess
import sys

COMMANDS = ["simulate", "keygen", "oscore", "initiator", "responder", "coap", "bytes", "bench",
            "load", "interop"]
SHARED = ["EDHOC OPTIONS", "COMMON OPTIONS"]


def sections(man):
    """{command or shared title: [option names of its .TP entries]}"""
    out, current, after_tp = {}, None, False
    for line in man.splitlines():
        m = re.match(r'\.SS "edhoc\\-cli (\w+)', line)
        if m:
            current = m.group(1)
            out.setdefault(current, [])
            continue
        m = re.match(r'\.SH "?([^"]+)"?', line)
        if m:
            title = m.group(1).strip()
            current = title if title in SHARED else None
            if current:
                out.setdefault(current, [])
            continue
        if line.startswith(".TP"):
            after_tp = True
            continue
        if after_tp:
            after_tp = False
            if current is None:
                continue
            # The entry's long options (".BR \-v ", " \-\-verbose" names
            # --verbose; an entry may name several, as --ead-1 ... --ead-4).
            for name in re.findall(r'\\-\\-([a-z0-9][a-z0-9\\-]*)', line):
                out[current].append(name.replace("\\-", "-"))
    return out


def table(cli, command):
    r = subprocess.run([cli, "help", "--options", command], capture_output=True, text=True)
    if r.returncode != 0:
        raise SystemExit(f"check_man_options: edhoc-cli help --options {command}: {r.stderr.strip()}")
    return [l.split()[0][2:] for l in r.stdout.splitlines() if l.startswith("--")]


def main(argv):
    if len(argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    cli, manpage, only = argv[0], argv[1], argv[2:]
    doc = sections(open(manpage).read())
    shared = {name for title in SHARED for name in doc.get(title, [])}
    problems, taken = [], set()
    for command in COMMANDS:
        if only and command not in only:
            continue
        opts = table(cli, command)
        taken.update(opts)
        if command == "simulate":
            taken.update(re.sub(r"-[ir]$", "", o) for o in opts)
        own = set(doc.get(command, []))
        for o in opts:
            base = re.sub(r"-[ir]$", "", o) if command == "simulate" else o
            if o not in own and o not in shared and base not in shared and base not in own:
                problems.append(f"{command}: --{o} is in the table but not in the man page")
        for o in sorted(own):
            if o not in opts:
                problems.append(f"{command}: the man page lists --{o}, which the command does not take")
    if not only:
        for o in sorted(shared):
            if o not in taken:
                problems.append(f"shared sections: --{o} is taken by no command")
    for p in problems:
        print(p)
    print(f"check_man_options: {len(problems)} mismatch(es)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
