#!/usr/bin/env python3
"""Independent EDHOC vectors: check edhoc_ref.py against RFC 9529, generate
transcripts for methods 0-3 x cipher suites 0-6 and 24, and compare
`edhoc-cli simulate` with each of them.

usage: run_independent.py --rfc-vectors DIR [--cli EDHOC_CLI] [--write-committed FILE]
                          [--committed FILE] [--write FILE] [--keep DIR]

  --rfc-vectors DIR  directory with rfc9529-trace1.json and rfc9529-trace2.json
  --cli PATH         the edhoc-cli binary to compare (omit to only self-check)
  --committed FILE   a committed copy of the generated vectors to re-check
  --write FILE       write the generated transcripts (JSON) to FILE, every value
  --write-committed FILE
                     write the subset kept in tests/independent/vectors/
  --keep DIR         keep simulate's input files, one directory per cell, in DIR

Exit status 0 when everything agrees, 1 on any disagreement; every
disagreement is printed naming the method, suite, credential form and value.
"""

import argparse
import hashlib
import json
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
try:
    import edhoc_ref as ref  # noqa: E402
except ImportError as exc:
    # Fail, not skip: CI must not pass without the independent check.
    sys.exit('run_independent.py: %s; this check needs the Python "cryptography" package '
             '(Debian: python3-cryptography, installed by scripts/install-deps)' % exc)

# Values of the RFC 9529 traces that are inputs of a session (keys, chosen
# identifiers, credentials, EAD) or not part of EDHOC (the CA key), so the
# generator takes them rather than computes them.
RFC_INPUTS = {
    'x', 'y', 'sk_i', 'sk_r', 'c_i', 'c_r', 'id_cred_i', 'id_cred_r', 'cred_i', 'cred_r',
    'cred_i_cbor', 'cred_r_cbor', 'ead_1', 'ead_2', 'ead_3', 'ead_4', 'keyupdate_context',
    'root_ca_pk',
    # Trace 2's rejected first attempt: its inputs and the responder's list.
    'x_first', 'c_i_first', 'ead_1_first', 'suites_r',
}

failures = []
failures_per_cell = {}
PRINTED_PER_CELL = 8


def fail(where, what):
    """Record a disagreement; the first few of each cell are printed (later
    values usually differ only because an earlier one did)."""
    failures.append('%s: %s' % (where, what))
    count = failures_per_cell[where] = failures_per_cell.get(where, 0) + 1
    if count <= PRINTED_PER_CELL:
        print('MISMATCH %s: %s' % (where, what), file=sys.stderr)


def hexs(value):
    return value.hex() if isinstance(value, (bytes, bytearray)) else value


def small_int(item):
    """A one-byte CBOR integer (METHOD, a suite) as a Python int."""
    b = item[0]
    return b if b < 0x18 else -1 - (b - 0x20)


def decode_suites(encoded):
    if encoded[0] >> 5 == 4:
        return [small_int(encoded[i:i + 1]) for i in range(1, 1 + (encoded[0] & 0x1f))]
    return [small_int(encoded)]


# ------------------------------------------------ 1. check against RFC 9529 ---


def check_rfc_trace(path):
    with open(path) as f:
        t = json.load(f)
    name = os.path.basename(path)
    h = {k: bytes.fromhex(v) for k, v in t.items()
         if not k.startswith('_') and isinstance(v, str)}
    p = {
        'method': small_int(h['method']),
        'suites_i': decode_suites(h['suites_i']),
        'x': h['x'], 'y': h['y'], 'sk_i': h['sk_i'], 'sk_r': h['sk_r'],
        'c_i': h['c_i'], 'c_r': h['c_r'],
        'id_cred_i': h['id_cred_i'], 'id_cred_r': h['id_cred_r'],
        # CRED_x as it enters the transcript: an X.509 certificate wrapped in
        # a bstr (RFC 9528 Section 3.5.2), a CCS as is.
        'cred_i': h.get('cred_i_cbor', h['cred_i']),
        'cred_r': h.get('cred_r_cbor', h['cred_r']),
        'ead_1': h['ead_1'], 'ead_2': h['ead_2'], 'ead_3': h['ead_3'], 'ead_4': h['ead_4'],
        'keyupdate_context': h['keyupdate_context'],
    }
    v = ref.handshake(p)
    if 'message_1_first' in t:
        # RFC 9529 Section 3: the first message_1 offers suite 6 only and is
        # refused with error code 2 and SUITES_R (RFC 9528 Section 6.3).
        # The trace prints its G_X on P-256 although suite 6 uses X25519, so
        # it is computed here as the trace did.
        first = ref.Key(1, h['x_first'])
        v['method_first'] = ref.cbor_int(p['method'])
        v['suites_i_first'] = ref.cbor_int(p['suites_i'][0])
        v['g_x_first'] = first.x
        v['g_x_cbor_first'] = ref.cbor_bstr(first.x)
        v['c_i_cbor_first'] = ref.encode_identifier(h['c_i_first'])
        v['message_1_first'] = (v['method_first'] + v['suites_i_first'] + v['g_x_cbor_first']
                                + v['c_i_cbor_first'] + h['ead_1_first'])
        v['error'] = ref.cbor_int(2) + h['suites_r']
    compared = 0
    for key, expected in t.items():
        if key.startswith('_') or key in RFC_INPUTS:
            continue
        if key not in v:
            fail(name, '%s is in the RFC trace but the generator does not compute it' % key)
            continue
        got = v[key]
        if isinstance(expected, str):
            expected_b = bytes.fromhex(expected)
            if isinstance(got, int):
                got = ref.cbor_int(got)  # the trace prints it CBOR-encoded
            if got != expected_b:
                fail(name, '%s: generator %s, RFC 9529 %s' % (key, hexs(got), expected))
        elif got != expected:
            fail(name, '%s: generator %r, RFC 9529 %r' % (key, got, expected))
        compared += 1
    return compared


# -------------------------------------------------- 2. generate transcripts ---

METHODS = (0, 1, 2, 3)
SUITE_NUMBERS = (0, 1, 2, 3, 4, 5, 6, 24)
ID_CRED_TYPES = ('kid', 'kccs', 'x5t', 'x5chain')
# Connection identifiers and kids, chosen to cover every representation of
# RFC 9528 Section 3.3.2: one-byte integers (positive and negative), one
# byte that is not an integer encoding, longer byte strings and the empty
# one. C_I and C_R differ in each pair (Section 3.3.3).
ID_PAIRS = [('2d', '18'), ('0e', '37'), ('a1b2', '05'), ('00', 'ff'), ('37', '2c3d4e'),
            ('20', '17'), ('0d', '21'), ('', '08'), ('18', '2d'), ('ffee', '0a')]
KID_PAIRS = [('2b', '32'), ('a5', '0a0b'), ('17', '24'), ('ff00ff', '20'), ('0e', 'c1')]

CURVE_ORDERS = {
    1: 0xffffffff00000000ffffffffffffffffbce6faada7179e84f3b9cac2fc632551,
    2: int('ffffffffffffffffffffffffffffffffffffffffffffffffc7634d81f4372ddf'
           '581a0db248b0a77aecec196accc52973', 16),
}


def derive_private(curve, label):
    """A fixed private key for curve, derived from a label so that the
    transcripts are reproducible."""
    if curve in (4, 6):
        return hashlib.sha256(label.encode()).digest()
    n = CURVE_ORDERS[curve]
    size = ref.COORD_LEN[curve]
    seed = hashlib.sha512(label.encode()).digest()
    return (int.from_bytes(seed, 'big') % (n - 1) + 1).to_bytes(size, 'big')


class Cell:
    """One generated session: method, the initiator's suites (the last one
    selected), the credential form, optional EAD items and, when the
    responder supports fewer suites, the rejected first attempt."""

    def __init__(self, method, suites, id_cred_type, index, ead=None, suites_r=None):
        self.method, self.suites, self.id_cred_type = method, list(suites), id_cred_type
        self.index = index
        self.ead = ead or {}           # {1: [(label, hex or None)], ...}
        self.suites_r = suites_r       # the responder's only suite, when retrying
        self.suite = self.suites[-1]
        self.key = '%d/%d/%s' % (method, self.suite, id_cred_type)
        if self.suites_r is not None:
            self.key += '/suites-' + '-'.join(str(s) for s in self.suites)
        if self.ead:
            self.key += '/ead'
        self.where = 'method %d suite %d %s%s' % (method, self.suite, id_cred_type,
                                                   self.key[len('%d/%d/%s' % (
                                                       method, self.suite, id_cred_type)):])

    def deterministic(self):
        """Whether the transcript is fixed by its inputs: no signature, or
        EdDSA (RFC 8032 signatures are deterministic); ECDSA is randomised."""
        signs = self.method in (0, 1, 2)
        return not signs or ref.Suite(self.suite).sig_alg == -8


def encode_ead(items):
    """RFC 9528 Section 3.8: ead = ( ead_label : int, ? ead_value : bstr )."""
    return b''.join(ref.cbor_int(label) + (ref.cbor_bstr(bytes.fromhex(value))
                                          if value is not None else b'')
                    for label, value in items)


def cell_inputs(cell):
    suite = ref.Suite(cell.suite)
    method, id_cred_type = cell.method, cell.id_cred_type
    c_i, c_r = ID_PAIRS[cell.index % len(ID_PAIRS)]
    kid_i, kid_r = KID_PAIRS[cell.index % len(KID_PAIRS)]
    tag = cell.where
    i_curve = suite.ecdh_curve if method in (2, 3) else suite.sig_curve
    r_curve = suite.ecdh_curve if method in (1, 3) else suite.sig_curve
    sk_i = derive_private(i_curve, 'initiator authentication key, ' + tag)
    sk_r = derive_private(r_curve, 'responder authentication key, ' + tag)
    key_i, key_r = ref.Key(i_curve, sk_i), ref.Key(r_curve, sk_r)
    cert_i = cert_r = None
    if id_cred_type in ('kid', 'kccs'):
        cred_i = key_i.ccs('initiator.independent.example', bytes.fromhex(kid_i))
        cred_r = key_r.ccs('responder.independent.example', bytes.fromhex(kid_r))
    else:
        # RFC 9528 Section 3.5.2: for X.509, CRED_x is the end-entity
        # certificate wrapped in a CBOR byte string.
        ca = ref.Key(6, derive_private(6, 'certificate authority'))
        cert_i = key_i.certificate('initiator ' + tag, ca)
        cert_r = key_r.certificate('responder ' + tag, ca)
        cred_i, cred_r = ref.cbor_bstr(cert_i), ref.cbor_bstr(cert_r)
    if id_cred_type == 'kid':
        id_cred_i, id_cred_r = ref.id_cred_kid(bytes.fromhex(kid_i)), ref.id_cred_kid(bytes.fromhex(kid_r))
    elif id_cred_type == 'kccs':
        id_cred_i, id_cred_r = ref.id_cred_kccs(cred_i), ref.id_cred_kccs(cred_r)
    elif id_cred_type == 'x5t':
        id_cred_i, id_cred_r = ref.id_cred_x5t(cert_i), ref.id_cred_x5t(cert_r)
    else:
        id_cred_i, id_cred_r = ref.id_cred_x5chain(cert_i), ref.id_cred_x5chain(cert_r)
    p = {
        'method': method, 'suites_i': cell.suites,
        'x': derive_private(suite.ecdh_curve, 'initiator ephemeral key, ' + tag),
        'y': derive_private(suite.ecdh_curve, 'responder ephemeral key, ' + tag),
        'sk_i': sk_i, 'sk_r': sk_r,
        'c_i': bytes.fromhex(c_i), 'c_r': bytes.fromhex(c_r),
        'cred_i': cred_i, 'cred_r': cred_r, 'id_cred_i': id_cred_i, 'id_cred_r': id_cred_r,
        'cert_i': cert_i, 'cert_r': cert_r,
        'keyupdate_context': hashlib.sha256(tag.encode()).digest()[:16],
    }
    for n, items in cell.ead.items():
        p['ead_%d' % n] = encode_ead(items)
    if cell.suites_r is not None:
        # The first attempt offers the initiator's most preferred suite
        # alone (RFC 9528 Section 5.2.2), with its own ephemeral key
        # ("For each message_1 the Initiator MUST generate a new ephemeral
        # ECDH key pair matching the selected cipher suite", Section 6.3.2).
        first = ref.Suite(cell.suites[0])
        p['x_first'] = derive_private(first.ecdh_curve, 'initiator first ephemeral key, ' + tag)
        p['c_i_first'] = bytes.fromhex('1f' if c_i != '1f' else '1e')
    return p


def first_attempt(p, suites_r):
    """message_1 of the refused first attempt and the responder's error: ERR_CODE 2
    with SUITES_R, "SUITES_R MAY include a single cipher suite, in which case it is
    encoded as an int" (RFC 9528 Section 6.3)."""
    first = ref.Key(ref.Suite(p['suites_i'][0]).ecdh_curve, p['x_first'])
    message_1 = (ref.cbor_int(p['method']) + ref.cbor_int(p['suites_i'][0])
                 + ref.cbor_bstr(first.x) + ref.encode_identifier(p['c_i_first'])
                 + p.get('ead_1', b''))
    return {'g_x_first': first.x, 'message_1_first': message_1,
            'error': ref.cbor_int(2) + ref.cbor_int(suites_r)}


def generate(cell, p):
    v = ref.handshake(p)
    if cell.suites_r is not None:
        v.update(first_attempt(p, cell.suites_r))
    return v


def cells():
    index = 0
    for id_cred_type in ID_CRED_TYPES:
        for method in METHODS:
            for suite_number in SUITE_NUMBERS:
                yield Cell(method, [suite_number], id_cred_type, index)
                index += 1
    # EAD in every message (RFC 9528 Section 3.8): padding (label 0, with
    # and without a value), a non-critical item and a critical one the
    # receiver understands.
    ead = {1: [(0, None), (5, 'aabb')], 2: [(-6, '01')], 3: [(7, None)], 4: [(0, '00ff')]}
    for method, suite_number, id_cred_type in ((0, 0, 'kid'), (2, 2, 'kccs'), (3, 24, 'x5chain'),
                                               (1, 4, 'x5t')):
        yield Cell(method, [suite_number], id_cred_type, index, ead=ead)
        index += 1
    # Suite negotiation (RFC 9528 Section 6.3.1): the responder supports only the
    # last suite; the second message_1 carries SUITES_I as an array.
    for method, suites, id_cred_type in ((3, [6, 2], 'kid'), (1, [0, 6, 2], 'x5t'),
                                         (0, [24, 4], 'kccs'), (2, [2, 24], 'kid')):
        yield Cell(method, suites, id_cred_type, index, suites_r=suites[-1])
        index += 1


def transcript_json(cell, p, v):
    out = {'id_cred_type': cell.id_cred_type,
           'signatures': ('deterministic' if cell.deterministic()
                          else 'ecdsa: verify signature_or_mac_2/3, do not compare them')}
    for key in ('x', 'y', 'sk_i', 'sk_r', 'c_i', 'c_r', 'x_first', 'c_i_first'):
        if key in p:
            out[key] = p[key].hex()
    out['cred_i'], out['cred_r'] = p['cred_i'].hex(), p['cred_r'].hex()
    if p['cert_i'] is not None:
        out['cert_i_der'], out['cert_r_der'] = p['cert_i'].hex(), p['cert_r'].hex()
    for key, value in v.items():
        out[key] = hexs(value)
    out['method'] = p['method']
    out['keyupdate_context'] = p['keyupdate_context'].hex()
    if cell.suites_r is not None:
        out['suites_r'] = ref.cbor_int(cell.suites_r).hex()
    return out


# ------------------------------------------------- 3. compare with simulate ---

# simulate --trace names -> generator names.
TRACE_NAMES = {'H(message_1)': 'h_message_1', 'OSCORE Master Secret': 'oscore_master_secret',
               'OSCORE Master Salt': 'oscore_master_salt'}


def write(path, text, mode):
    with open(path, 'w') as f:
        f.write(text + '\n')
    os.chmod(path, mode)


# EDHOC_Exporter requests: (label, context, length). Labels 0 and 1 are the
# OSCORE ones (RFC 9528 Section 10.1), 24 is in the Expert Review range,
# 32768 Private Use; a non-empty context and lengths above and below the
# hash length.
EXPORTS = [(0, '', 16), (1, '', 8), (24, '', 64), (32768, 'a1b2c3', 7)]


def simulate_features(cli):
    """Options of later additions to simulate that this check uses when the
    binary has them: --key-update (RFC 9528 Appendix H) and --export
    (Section 4.2.1)."""
    proc = subprocess.run([cli, 'simulate', '--help'], stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, timeout=60)
    text = proc.stdout.decode(errors='replace')
    return {name for name in ('--key-update', '--export') if name + ' ' in text}


def run_simulate(cli, workdir, cell, p, features=()):
    files = {}
    for side in ('i', 'r'):
        # A certificate goes to simulate as DER, a CCS as hex text.
        if p['cert_' + side] is not None:
            files['cred_' + side] = os.path.join(workdir, 'cred_%s.der' % side)
            with open(files['cred_' + side], 'wb') as f:
                f.write(p['cert_' + side])
        else:
            files['cred_' + side] = os.path.join(workdir, 'cred_%s.hex' % side)
            write(files['cred_' + side], p['cred_' + side].hex(), 0o644)
    ephemeral_i = p['x'].hex()
    c_i = p['c_i'].hex()
    if cell.suites_r is not None:
        ephemeral_i = p['x_first'].hex() + '\n' + ephemeral_i
        c_i = p['c_i_first'].hex() + ',' + c_i
    for name, value, mode in (('key_i', p['sk_i'].hex(), 0o600),
                              ('key_r', p['sk_r'].hex(), 0o600),
                              ('eph_i', ephemeral_i, 0o600), ('eph_r', p['y'].hex(), 0o600)):
        files[name] = os.path.join(workdir, name + '.hex')
        write(files[name], value, mode)
    args = [cli, 'simulate', '--method', str(p['method']),
            '--suites', ','.join(str(s) for s in cell.suites),
            '--cred-i', files['cred_i'], '--key-i', files['key_i'],
            '--cred-r', files['cred_r'], '--key-r', files['key_r'],
            '--id-cred-i', cell.id_cred_type, '--id-cred-r', cell.id_cred_type,
            '--c-i=' + c_i, '--c-r=' + p['c_r'].hex(),
            '--ephemeral-i', files['eph_i'], '--ephemeral-r', files['eph_r'],
            '--message-4', '--json', '--export-secrets', '--trace']
    if cell.suites_r is not None:
        args += ['--suites-r', str(cell.suites_r)]
    # KeyUpdate in every other cell, so that exports are checked both on the
    # handshake's PRK_exporter and on the updated one.
    if '--key-update' in features and cell.index % 2 == 0:
        args += ['--key-update', p['keyupdate_context'].hex()]
    if '--export' in features:
        for label, context, length in EXPORTS:
            args += ['--export', '%d,%s,%d' % (label, context, length)]
    for n, items in sorted(cell.ead.items()):
        for label, value in items:
            args.append('--ead-%d=%d%s' % (n, label, ':' + value if value is not None else ''))
            if label < 0:
                args.append('--ead-accept=%d' % label)
    # The command line, to rerun a cell by hand (--keep).
    write(os.path.join(workdir, 'command'), ' '.join(shlex.quote(a) for a in args), 0o644)
    proc = subprocess.run(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=60)
    return proc, args


def compare_cell(cli, workdir, cell, committed, features=()):
    where = cell.where
    p = cell_inputs(cell)
    v = generate(cell, p)
    proc, args = run_simulate(cli, workdir, cell, p, features)
    if proc.returncode != 0:
        fail(where, 'simulate exited %d: %s\n  command: %s' % (
            proc.returncode, proc.stderr.decode(errors='replace').strip(),
            ' '.join(shlex.quote(a) for a in args)))
        return v, p, 0
    out = json.loads(proc.stdout)
    got_messages = [(m['name'], bytes.fromhex(m['hex'])) for m in out['messages']]
    expected_names = ['message_1', 'message_2', 'message_3', 'message_4']
    if cell.suites_r is not None:
        expected_names = ['message_1', 'error'] + expected_names
    if [name for name, _ in got_messages] != expected_names:
        fail(where, 'simulate sent %s, expected %s' % ([n for n, _ in got_messages],
                                                       expected_names))
        return v, p, 0
    messages = dict(got_messages[-4:])

    if not cell.deterministic():
        # RFC 9528 Section 5.3.2 / 5.4.2: a signing party's
        # Signature_or_MAC_x is a COSE_Sign1 signature; ECDSA (RFC 9053
        # Section 2.1) takes a random k, so simulate's signature is checked
        # with the public key over the message to be signed computed here,
        # then carried into this transcript so that everything after it is
        # compared byte for byte.
        try:
            if cell.method in (0, 2):
                _, pt2 = ref.open_message_2(messages['message_2'], len(v['g_y']),
                                            lambda n: ref.keystream_2(v, n))
                p['signature_or_mac_2'] = ref.signature_from_plaintext_2(pt2)
                v = generate(cell, p)
            if cell.method in (0, 1):
                suite = ref.Suite(cell.suite)
                pt3 = suite.aead_decrypt(v['k_3'], v['iv_3'],
                                         ref.cbor_bstr_value(messages['message_3']), v['a_3'])
                p['signature_or_mac_3'] = ref.signature_from_plaintext_3(pt3)
                v = generate(cell, p)
        except ref.SignatureMismatch as exc:
            fail(where, str(exc))
            return v, p, 0
        except Exception as exc:  # a decryption or parse failure is a mismatch too
            fail(where, 'cannot open simulate\'s message to check its signature: %r' % exc)
            return v, p, 0

    compared = 0
    expected_bytes = [v['message_1'], v['message_2'], v['message_3'], v['message_4']]
    if cell.suites_r is not None:
        expected_bytes = [v['message_1_first'], v['error']] + expected_bytes
    for (name, got), expected, position in zip(got_messages, expected_bytes, range(1, 7)):
        compared += 1
        if got != expected:
            fail(where, '%s (message %d of the exchange): simulate %s, generator %s' % (
                name, position, got.hex(), expected.hex()))
    # Trace values of the attempt that completed: from the initiator's last X.
    trace = out.get('trace') or []
    last_x = max([i for i, e in enumerate(trace) if e['name'] == 'X'] or [0])
    trace_seen = set()
    for entry in trace[last_x:]:
        key = TRACE_NAMES.get(entry['name'], entry['name'].lower().replace('(', '_')
                              .replace(')', ''))
        if key not in v:
            continue
        trace_seen.add(key)
        compared += 1
        if bytes.fromhex(entry['hex']) != v[key]:
            fail(where, '%s (%s, trace): simulate %s, generator %s' % (
                entry['name'], entry['side'], entry['hex'], hexs(v[key])))
    for key in ('prk_out', 'prk_exporter', 'th_2', 'th_3', 'th_4', 'plaintext_2',
                'plaintext_3'):
        if key not in trace_seen:
            fail(where, '%s not in simulate --trace output' % key)
    osc = out.get('oscore') or {}
    expected_oscore = {
        'master_secret': v['oscore_master_secret'].hex(),
        'master_salt': v['oscore_master_salt'].hex(),
        # RFC 9528 Appendix A.1, Figure 17: the initiator's Sender ID is C_R,
        # its Recipient ID C_I.
        'sender_id': p['c_r'].hex(), 'recipient_id': p['c_i'].hex(),
        'aead_alg': v['application_aead_algorithm'],
    }
    for key, expected in expected_oscore.items():
        compared += 1
        if osc.get(key) != expected:
            fail(where, 'oscore.%s: simulate %r, generator %r' % (key, osc.get(key), expected))
    if out.get('oscore_contexts_match') is not True:
        fail(where, 'simulate reports oscore_contexts_match %r' % out.get('oscore_contexts_match'))
    compared += compare_key_update_and_exports(where, cell, v, out, features)
    if committed is not None:
        compared += check_committed_cell(cell, committed, p)
    return v, p, compared


# The committed copy (tests/independent/vectors/) holds the cells with CCS
# credentials (kid, kccs; the X.509 cells only repeat certificates) and, of
# each, the inputs, the messages and the keys; --write gives every value.
COMMITTED_VALUES = {
    'method', 'suites_i', 'cipher_suite', 'id_cred_type', 'signatures',
    'x', 'y', 'sk_i', 'sk_r', 'c_i', 'c_r', 'cred_i', 'cred_r', 'id_cred_i', 'id_cred_r',
    'ead_1', 'ead_2', 'ead_3', 'ead_4', 'x_first', 'c_i_first', 'suites_r', 'keyupdate_context',
    'pk_i', 'pk_r', 'pk_i_x', 'pk_i_y', 'pk_r_x', 'pk_r_y', 'g_x', 'g_y',
    'message_1_first', 'error', 'message_1', 'message_2', 'message_3', 'message_4',
    'th_2', 'th_3', 'th_4', 'prk_2e', 'prk_3e2m', 'prk_4e3m', 'mac_2', 'mac_3',
    'signature_or_mac_2', 'signature_or_mac_3', 'prk_out', 'prk_exporter',
    'oscore_master_secret', 'oscore_master_salt', 'oscore_client_sender_id',
    'oscore_server_sender_id', 'prk_out_after_keyupdate', 'prk_exporter_after_keyupdate',
    'oscore_master_secret_after_keyupdate', 'oscore_master_salt_after_keyupdate',
}


def committed_cell(cell):
    return cell.id_cred_type in ('kid', 'kccs')


def committed_json(cell, p, v):
    return {k: x for k, x in transcript_json(cell, p, v).items() if k in COMMITTED_VALUES}


def compare_key_update_and_exports(where, cell, v, out, features):
    compared = 0
    updated = '--key-update' in features and cell.index % 2 == 0
    if updated:
        ku = out.get('key_update') or {}
        # RFC 9528 Appendix H: new PRK_out = EDHOC_KDF( old PRK_out, 11,
        # context, hash_length ), new PRK_exporter from it, and the OSCORE
        # context derived again (Appendix A.1) from the new PRK_exporter.
        expected = {'context': v['keyupdate_context'].hex(),
                    'prk_out_before': v['prk_out'].hex(),
                    'prk_out_after': v['prk_out_after_keyupdate'].hex(),
                    'prk_exporter_after': v['prk_exporter_after_keyupdate'].hex()}
        got = {k: ku.get(k) for k in expected}
        osc = ku.get('oscore') or {}
        expected['oscore.master_secret'] = v['oscore_master_secret_after_keyupdate'].hex()
        expected['oscore.master_salt'] = v['oscore_master_salt_after_keyupdate'].hex()
        got['oscore.master_secret'] = osc.get('master_secret')
        got['oscore.master_salt'] = osc.get('master_salt')
        for key in expected:
            compared += 1
            if got[key] != expected[key]:
                fail(where, 'key_update.%s: simulate %r, generator %r' % (key, got[key],
                                                                          expected[key]))
        if ku.get('sides_agree') is not True:
            fail(where, 'key_update.sides_agree is %r' % ku.get('sides_agree'))
    if '--export' in features:
        exports = out.get('exports') or []
        if len(exports) != len(EXPORTS):
            fail(where, 'simulate printed %d exports, %d requested' % (len(exports), len(EXPORTS)))
            return compared
        prk = v['prk_exporter_after_keyupdate'] if updated else v['prk_exporter']
        for (label, context, length), e in zip(EXPORTS, exports):
            compared += 1
            value = ref.exporter(cell.suite, prk, label, bytes.fromhex(context), length).hex()
            if (e.get('label'), e.get('context'), e.get('length'), e.get('value'),
                    e.get('after_key_update')) != (label, context, length, value, updated):
                fail(where, 'export %d,%s,%d: simulate %r, generator value %s (after key '
                            'update: %s)' % (label, context, length, e, value, updated))
        if out.get('exports_match') is not True:
            fail(where, 'exports_match is %r' % out.get('exports_match'))
    return compared


def check_committed_cell(cell, committed, p):
    """The committed copy must still be what this generator computes: byte
    for byte where deterministic, else after re-verifying its signatures."""
    where = cell.where + ' (committed vectors)'
    if not committed_cell(cell):
        return 0
    c = committed.get(cell.key)
    if c is None:
        fail(where, 'not in the committed vectors')
        return 0
    q = dict(p)
    q.pop('signature_or_mac_2', None)
    q.pop('signature_or_mac_3', None)
    if not cell.deterministic():
        if cell.method in (0, 2):
            q['signature_or_mac_2'] = bytes.fromhex(c['signature_or_mac_2'])
        if cell.method in (0, 1):
            q['signature_or_mac_3'] = bytes.fromhex(c['signature_or_mac_3'])
    try:
        fresh = committed_json(cell, q, generate(cell, q))
    except ref.SignatureMismatch as exc:
        fail(where, str(exc))
        return 0
    n = 0
    for name in sorted(set(fresh) | set(c)):
        n += 1
        if c.get(name) != fresh.get(name):
            fail(where, '%s: committed %r, generated %r' % (name, c.get(name), fresh.get(name)))
    return n


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--rfc-vectors', required=True)
    ap.add_argument('--cli')
    ap.add_argument('--committed')
    ap.add_argument('--write')
    ap.add_argument('--write-committed')
    ap.add_argument('--keep')
    a = ap.parse_args()
    start = time.monotonic()

    n1 = check_rfc_trace(os.path.join(a.rfc_vectors, 'rfc9529-trace1.json'))
    n2 = check_rfc_trace(os.path.join(a.rfc_vectors, 'rfc9529-trace2.json'))
    print('generator vs RFC 9529: trace 1 %d values, trace 2 %d values compared' % (n1, n2))
    if failures:
        print('FAIL: the generator disagrees with RFC 9529 (%d values); nothing else is '
              'checked' % len(failures), file=sys.stderr)
        return 1

    committed = None
    if a.committed:
        with open(a.committed) as f:
            committed = json.load(f)['transcripts']

    transcripts, for_commit = {}, {}
    by_bytes, by_signature = [], []
    workdir = a.keep or tempfile.mkdtemp(prefix='edhoc-independent-')
    os.makedirs(workdir, mode=0o700, exist_ok=True)
    os.chmod(workdir, 0o700)
    total = 0
    features = simulate_features(a.cli) if a.cli else set()
    try:
        for cell in cells():
            if a.cli:
                before = len(failures)
                celldir = os.path.join(workdir, cell.key.replace('/', '_'))
                os.mkdir(celldir, 0o700)
                v, p, n = compare_cell(a.cli, celldir, cell, committed, features)
                total += n
                if len(failures) == before:
                    (by_bytes if cell.deterministic() else by_signature).append(cell.key)
            else:
                p = cell_inputs(cell)
                v = generate(cell, p)
                if committed is not None:
                    total += check_committed_cell(cell, committed, p)
            transcripts[cell.key] = transcript_json(cell, p, v)
            if committed_cell(cell):
                for_commit[cell.key] = committed_json(cell, p, v)
    finally:
        if not a.keep:
            shutil.rmtree(workdir)

    for path, selection, what in ((a.write, transcripts, 'every value'),
                                  (a.write_committed, for_commit,
                                   'the cells with CCS credentials (kid, kccs): inputs, '
                                   'messages and keys; run_independent.py --write gives '
                                   'every value of every cell')):
        if not path:
            continue
        doc = {
            '_source': 'tests/independent/run_independent.py --write: EDHOC (RFC 9528) '
                       'transcripts computed by tests/independent/edhoc_ref.py, which '
                       'reproduces RFC 9529 traces 1 and 2 byte for byte',
            '_notes': 'Keys "METHOD/SUITE/ID_CRED". Names as in tests/vectors/rfc9529-*.json '
                      '(lowercase hex; *_cbor the CBOR encoding; id_cred_* and cred_* the '
                      'encoded CBOR items). Cells whose "signatures" is not "deterministic" '
                      'use ECDSA: their signature_or_mac_2/3 are one valid signature among '
                      'many; verify another implementation\'s with pk_* over the message to '
                      'be signed (RFC 9528 Sections 5.3.2, 5.4.2; message_to_be_signed_* '
                      'in the --write output), then compare the rest after substituting it.',
            '_contents': what,
            'transcripts': selection,
        }
        with open(path, 'w') as f:
            json.dump(doc, f, indent=1, sort_keys=True)
            f.write('\n')

    elapsed = time.monotonic() - start
    if a.cli:
        print('simulate vs generator: %d cells, %d values compared%s' % (
            len(transcripts), total,
            ', with ' + ' and '.join(sorted(features)) if features else
            ' (this simulate has neither --key-update nor --export)'))
        print('  byte for byte (%d): %s' % (len(by_bytes), ' '.join(by_bytes)))
        print('  ECDSA signatures verified, rest byte for byte (%d): %s' % (
            len(by_signature), ' '.join(by_signature)))
    print('%.1f s' % elapsed)
    if failures:
        for where, count in failures_per_cell.items():
            if count > PRINTED_PER_CELL:
                print('MISMATCH %s: %d more values differ' % (where, count - PRINTED_PER_CELL),
                      file=sys.stderr)
        print('FAIL: %d disagreements in %d cells: %s' % (
            len(failures), len(failures_per_cell), ', '.join(failures_per_cell)), file=sys.stderr)
        return 1
    return 0


if __name__ == '__main__':
    sys.exit(main())
