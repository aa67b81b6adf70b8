#!/usr/bin/env python3
"""What the documentation says against what the program does, where the
two drifted apart before (issue #26):

  - every value list the man page's SYNOPSIS, an option entry (.TP) or a
    command's usage line (`edhoc-cli CMD --help`) gives for an option
    ("--type ccs|x509|cwt") is the one of the command's option table
    (`edhoc-cli help --options CMD`);
  - the ID_CRED types the man page's DESCRIPTION names are the ones the
    parser takes (read from its refusal of an unknown type, each then
    checked to be accepted);
  - every header README.md and docs/DESIGN.md name for include/edhoc/
    exists there, and README.md names every installed one.

Usage: check_doc_drift.py EDHOC_CLI SOURCE_ROOT. Exit 0, or 1 after
listing every mismatch.
"""
import os
import re
import shlex
import subprocess
import sys

COMMANDS = ["simulate", "keygen", "oscore", "initiator", "responder", "coap", "bytes", "bench",
            "load", "interop"]
ALTERNATING = {"BR", "RB", "BI", "IB", "IR", "RI"}
PLAIN = {"B", "I", "SM", "SB"}


def unescape(text):
    text = re.sub(r"\\f(\(..|\[[^]]*\]|.)", "", text)
    text = text.replace("\\-", "-").replace("\\&", "").replace("\\ ", " ").replace("\\|", "")
    text = text.replace("\\(em", "-").replace("\\e", "\\")
    return text


def render(line):
    """One roff line as the text it shows (fonts dropped)."""
    if not line.startswith("."):
        return unescape(line)
    name, _, rest = line[1:].partition(" ")
    try:
        args = shlex.split(rest.replace("\\", "\\\\"), posix=True)
    except ValueError:
        args = rest.split()
    if name in ALTERNATING:
        return unescape("".join(args))
    if name in PLAIN:
        return unescape(" ".join(args))
    return None  # a request without text (.br, .PP, .TP, ...)


def man_sections(man):
    """{section title: [roff lines]}"""
    out, title = {}, None
    for line in man.splitlines():
        m = re.match(r'\.SH "?([^"]+)"?', line)
        if m:
            title = m.group(1).strip()
            out[title] = []
        elif title:
            out[title].append(line)
    return out


def synopsis_items(lines):
    """The SYNOPSIS as one text per .br-separated usage line."""
    items, cur = [], []
    for line in lines:
        if line.startswith(".br"):
            items.append(" ".join(cur))
            cur = []
            continue
        text = render(line)
        if text:
            cur.append(text)
    if cur:
        items.append(" ".join(cur))
    return items


def entries(man):
    """(command or None, text of the line after each .TP)"""
    out, command, after_tp = [], None, False
    for line in man.splitlines():
        m = re.match(r'\.SS "edhoc\\-cli (\w+)', line)
        if m:
            command = m.group(1)
            continue
        if line.startswith(".SH"):
            command = None
            continue
        if line.startswith(".TP"):
            after_tp = True
            continue
        if after_tp:
            after_tp = False
            text = render(line)
            if text:
                out.append((command, text))
    return out


LIST = re.compile(r"--([a-z0-9][a-z0-9-]*)[ =]([^\s()\[\]]*\|[^\s()\[\]]*)")


def value_lists(text):
    return [(m.group(1), m.group(2)) for m in LIST.finditer(text)]


def run(cmd):
    return subprocess.run(cmd, capture_output=True, text=True)


def tables(cli):
    """{command: {option: ARG}}"""
    out = {}
    for command in COMMANDS:
        r = run([cli, "help", "--options", command])
        if r.returncode != 0:
            raise SystemExit(f"check_doc_drift: edhoc-cli help --options {command}: {r.stderr}")
        out[command] = {}
        for line in r.stdout.splitlines():
            name, _, arg = line[2:].partition(" ")
            out[command][name] = arg
    return out


def check_value_lists(cli, man, problems):
    table = tables(cli)
    sections = man_sections(man)

    def compare(where, command, name, values):
        commands = [command] if command else [c for c in COMMANDS if name in table[c]]
        for c in commands:
            arg = table[c].get(name)
            if arg is None:
                continue  # check_man_options.py reports options a command lacks
            if arg != values:
                problems.append(f"{where}: --{name} {values}, but {c}'s table says --{name} {arg}")

    for item in synopsis_items(sections.get("SYNOPSIS", [])):
        m = re.match(r"edhoc-cli (\w+)", item)
        command = m.group(1) if m and m.group(1) in COMMANDS else None
        if command is None:
            continue
        for name, values in value_lists(item):
            compare(f"man SYNOPSIS of {command}", command, name, values)
    for command, text in entries(man):
        for name, values in value_lists(text):
            compare(f"man entry '{text}'" + (f" of {command}" if command else ""), command, name,
                    values)
    for command in COMMANDS:
        usage = run([cli, command, "--help"]).stdout.split("\n\n")[0]
        for name, values in value_lists(usage):
            compare(f"edhoc-cli {command} --help usage", command, name, values)


def check_id_cred_types(cli, man, problems):
    r = run([cli, "simulate", "--id-cred-i", "no-such-type"])
    m = re.search(r"expected ([a-z0-9, ]+) or ([a-z0-9]+), got", r.stderr)
    if not m:
        problems.append(f"simulate --id-cred-i no-such-type: no list of types in '{r.stderr.strip()}'")
        return
    types = m.group(1).split(", ") + [m.group(2)]
    for t in types:
        r = run([cli, "simulate", "--id-cred-i", t, "--id-cred-r", t])
        if "expected " + m.group(1) in r.stderr:
            problems.append(f"--id-cred-i {t}: named by the parser's message, refused by the parser")
    text = " ".join(t for t in map(render, man_sections(man).get("DESCRIPTION", [])) if t)
    sentence = re.search(r"[^.]*named on the wire by ID_CRED[^.]*\.", text)
    if not sentence:
        problems.append("man DESCRIPTION: no sentence naming the ID_CRED types")
        return
    named = set(re.findall(r"[a-z0-9]+", sentence.group(0)))
    for t in types:
        if t not in named:
            problems.append(f"man DESCRIPTION: ID_CRED type {t} (the parser takes it) is not named")


def check_headers(root, problems):
    installed = {f for f in os.listdir(os.path.join(root, "include", "edhoc")) if f.endswith(".h")}
    # Generated at build time from version.h.in.
    installed |= {f[:-3] for f in os.listdir(os.path.join(root, "include", "edhoc"))
                  if f.endswith(".h.in")}
    readme = open(os.path.join(root, "README.md")).read()
    row = next((l for l in readme.splitlines() if l.startswith("| `include/edhoc/`")), None)
    if row is None:
        problems.append("README.md: no layout row for include/edhoc/")
    else:
        named = set(re.findall(r"`([a-z_0-9]+\.h)`", row))
        for h in sorted(named - installed):
            problems.append(f"README.md names include/edhoc/{h}, which is not an installed header")
        for h in sorted(installed - named):
            problems.append(f"README.md's layout does not name the installed edhoc/{h}")
    design = open(os.path.join(root, "docs", "DESIGN.md")).read()
    m = re.search(r"include/edhoc/ +public API \(installed\):([^`]*?)(?:\n\S|\.\.\.)", design)
    if m is None:
        problems.append("docs/DESIGN.md: no line for include/edhoc/ (public API)")
    else:
        for h in sorted(set(re.findall(r"[a-z_0-9]+\.h", m.group(1))) - installed):
            problems.append(f"docs/DESIGN.md names include/edhoc/{h}, which is not installed")


def main(argv):
    if len(argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    cli, root = argv
    man = open(os.path.join(root, "docs", "edhoc-cli.1")).read()
    problems = []
    check_value_lists(cli, man, problems)
    check_id_cred_types(cli, man, problems)
    check_headers(root, problems)
    for p in problems:
        print(p)
    print(f"check_doc_drift: {len(problems)} mismatch(es)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
