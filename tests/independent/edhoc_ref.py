"""A second, independent EDHOC (RFC 9528) written from the RFC text alone.

It uses only the Python standard library and the `cryptography` package
(Debian's python3-cryptography); nothing here comes from the C code it is
used to check.  CBOR is encoded and decoded by hand, and only as far as EDHOC
needs it (RFC 8949 Section 3: major types 0-5 with definite lengths).

`handshake()` plays both parties of one EDHOC session with every private key
known and returns every intermediate value under the names RFC 9529 gives
them (lower case, as in tests/vectors/rfc9529-trace*.json), so the same
function can be checked against RFC 9529 and then used to produce new
transcripts.
"""

import datetime
import hashlib
import hmac

from cryptography import x509
from cryptography.x509.oid import NameOID

from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, x25519
from cryptography.hazmat.primitives.asymmetric.utils import (
    decode_dss_signature, encode_dss_signature)
from cryptography.hazmat.primitives.ciphers.aead import (
    AESCCM, AESGCM, ChaCha20Poly1305)
from cryptography.hazmat.primitives.kdf.hkdf import HKDFExpand

# ---------------------------------------------------------------- CBOR ---


def _head(major, value):
    """RFC 8949 Section 3: the initial byte and its argument, shortest form
    (Section 4.2.1: preferred serialization, as EDHOC requires)."""
    if value < 24:
        return bytes([(major << 5) | value])
    for extra, size in ((24, 1), (25, 2), (26, 4), (27, 8)):
        if value < (1 << (8 * size)):
            return bytes([(major << 5) | extra]) + value.to_bytes(size, 'big')
    raise ValueError('CBOR argument too large')


def cbor_int(value):
    return _head(0, value) if value >= 0 else _head(1, -1 - value)


def cbor_bstr(data):
    return _head(2, len(data)) + bytes(data)


def cbor_tstr(text):
    raw = text.encode('utf-8')
    return _head(3, len(raw)) + raw


def cbor_array(encoded_items):
    return _head(4, len(encoded_items)) + b''.join(encoded_items)


def cbor_map(encoded_pairs):
    """encoded_pairs: list of (encoded key, encoded value), kept in order."""
    return _head(5, len(encoded_pairs)) + b''.join(k + v for k, v in encoded_pairs)


def cbor_item_end(data, pos=0):
    """Offset just past the well-formed data item starting at pos."""
    if pos >= len(data):
        raise ValueError('CBOR: truncated item')
    initial = data[pos]
    major, info = initial >> 5, initial & 0x1f
    pos += 1
    if info < 24:
        arg = info
    elif info in (24, 25, 26, 27):
        size = 1 << (info - 24)
        if pos + size > len(data):
            raise ValueError('CBOR: truncated argument')
        arg = int.from_bytes(data[pos:pos + size], 'big')
        pos += size
    else:
        raise ValueError('CBOR: indefinite or reserved length not used by EDHOC')
    if major in (0, 1, 7):
        return pos
    if major in (2, 3):
        if pos + arg > len(data):
            raise ValueError('CBOR: truncated string')
        return pos + arg
    if major == 4:
        for _ in range(arg):
            pos = cbor_item_end(data, pos)
        return pos
    if major == 5:
        for _ in range(2 * arg):
            pos = cbor_item_end(data, pos)
        return pos
    if major == 6:
        return cbor_item_end(data, pos)
    raise ValueError('CBOR: bad major type')


def cbor_split(seq):
    """A CBOR sequence (RFC 8742) as the list of its encoded items."""
    items, pos = [], 0
    while pos < len(seq):
        end = cbor_item_end(seq, pos)
        items.append(seq[pos:end])
        pos = end
    return items


def cbor_bstr_value(item):
    """The content of an encoded byte string."""
    if not item or item[0] >> 5 != 2 or cbor_item_end(item) != len(item):
        raise ValueError('CBOR: not a byte string: ' + item.hex())
    head = cbor_item_end(item) - _content_length(item)
    return item[head:]


def _content_length(item):
    info = item[0] & 0x1f
    if info < 24:
        return info
    size = 1 << (info - 24)
    return int.from_bytes(item[1:1 + size], 'big')


def cbor_map_entries(item):
    """The (encoded key, encoded value) pairs of an encoded map."""
    if not item or item[0] >> 5 != 5:
        raise ValueError('CBOR: not a map: ' + item.hex())
    count = _content_length(item)
    pos = len(_head(5, count))
    pairs = []
    for _ in range(count):
        k_end = cbor_item_end(item, pos)
        v_end = cbor_item_end(item, k_end)
        pairs.append((item[pos:k_end], item[k_end:v_end]))
        pos = v_end
    return pairs


# ------------------------------------------- identifiers (RFC 9528 3.3.2) ---


def encode_identifier(ident):
    """RFC 9528 Section 3.3.2: "The byte strings which coincide with a one-byte
    CBOR encoding of an integer MUST be represented by the CBOR encoding of
    that integer. Other byte strings are simply encoded as CBOR byte strings."
    The one-byte integers are -24..23: encodings 0x00-0x17 and 0x20-0x37."""
    if len(ident) == 1 and (ident[0] <= 0x17 or 0x20 <= ident[0] <= 0x37):
        return bytes(ident)
    return cbor_bstr(ident)


def id_cred_kid(kid):
    """ID_CRED_x = { 4 : kid_x } (RFC 9528 Section 3.5.3)."""
    return cbor_map([(cbor_int(4), cbor_bstr(kid))])


def id_cred_kccs(ccs):
    """ID_CRED_x = { 14 : CCS } (RFC 9528 Section 3.5.3.1, 'kccs' = 14 in
    the COSE Header Parameters registry, Section 10.6)."""
    return cbor_map([(cbor_int(14), ccs)])


def id_cred_x5t(cert_der):
    """ID_CRED_x = { 34 : COSE_CertHash } with COSE_CertHash = [ -15, the
    first 64 bits of SHA-256(certificate) ] (RFC 9360 Section 2, SHA-256/64
    from RFC 9054 Section 2.1), the form of RFC 9529 Section 2."""
    return cbor_map([(cbor_int(34), cbor_array([cbor_int(-15),
                                                cbor_bstr(hashlib.sha256(cert_der).digest()[:8])]))])


def id_cred_x5chain(cert_der):
    """ID_CRED_x = { 33 : COSE_X509 }: "If a single certificate is conveyed,
    it is placed in a CBOR byte string" (RFC 9360 Section 2)."""
    return cbor_map([(cbor_int(33), cbor_bstr(cert_der))])


def id_cred_in_plaintext(id_cred):
    """RFC 9528 Section 3.5.3.2: when ID_CRED_x = { 4 : kid_x } "the CBOR map
    { 4 : kid_x } is replaced by the byte string kid_x" and "the
    representation of identifiers specified in Section 3.3.2 is applied to
    kid_x"; "MUST be applied if and only if ID_CRED_x = { 4 : kid_x }"."""
    entries = cbor_map_entries(id_cred)
    if len(entries) == 1 and entries[0][0] == cbor_int(4):
        return encode_identifier(cbor_bstr_value(entries[0][1]))
    return id_cred


# ------------------------------------------------- cipher suites (10.2) ---

# RFC 9528 Section 10.2 (EDHOC Cipher Suites Registry): EDHOC AEAD, hash,
# MAC length, ECDH curve, signature algorithm, application AEAD and hash.
SUITES = {
    0: (10, -16, 8, 4, -8, 10, -16),
    1: (30, -16, 16, 4, -8, 10, -16),
    2: (10, -16, 8, 1, -7, 10, -16),
    3: (30, -16, 16, 1, -7, 10, -16),
    4: (24, -16, 16, 4, -8, 24, -16),
    5: (24, -16, 16, 1, -7, 24, -16),
    6: (1, -16, 16, 4, -7, 1, -16),
    24: (3, -43, 16, 2, -35, 3, -43),
}

# COSE AEAD algorithms (RFC 9053 Sections 4.1-4.3): key length, nonce
# length, tag length.
AEADS = {
    1: (16, 12, 16),    # A128GCM
    3: (32, 12, 16),    # A256GCM
    10: (16, 13, 8),    # AES-CCM-16-64-128
    30: (16, 13, 16),   # AES-CCM-16-128-128
    24: (32, 12, 16),   # ChaCha20/Poly1305
}

HASHES = {-16: hashlib.sha256, -43: hashlib.sha384}
CRYPTO_HASHES = {-16: hashes.SHA256, -43: hashes.SHA384}
# COSE elliptic curves (RFC 9053 Section 7.1): 1 P-256, 2 P-384, 4 X25519,
# 6 Ed25519.
EC_CURVES = {1: ec.SECP256R1, 2: ec.SECP384R1}
COORD_LEN = {1: 32, 2: 48, 4: 32, 6: 32}
# Signature algorithm -> (curve of the signing key, hash for ECDSA).
SIGNATURE_KEYS = {-8: (6, None), -7: (1, hashes.SHA256), -35: (2, hashes.SHA384)}


class Suite:
    def __init__(self, number):
        (self.aead, self.hash_alg, self.mac_length, self.ecdh_curve,
         self.sig_alg, self.app_aead, self.app_hash) = SUITES[number]
        self.number = number
        self.hash_length = HASHES[self.hash_alg]().digest_size
        self.key_length, self.iv_length, self.tag_length = AEADS[self.aead]
        self.sig_curve = SIGNATURE_KEYS[self.sig_alg][0]

    def hash(self, data):
        return HASHES[self.hash_alg](data).digest()

    def extract(self, salt, ikm):
        """RFC 9528 Section 4.1.1: EDHOC_Extract = HKDF-Extract for SHA-2
        (RFC 5869 Section 2.2: PRK = HMAC-Hash(salt, IKM))."""
        return hmac.new(salt, ikm, HASHES[self.hash_alg]).digest()

    def expand(self, prk, info, length):
        """RFC 9528 Section 4.1.2: EDHOC_Expand = HKDF-Expand for SHA-2."""
        return HKDFExpand(CRYPTO_HASHES[self.hash_alg](), length, info).derive(prk)

    def aead_encrypt(self, key, nonce, plaintext, aad):
        return _aead(self.aead, key).encrypt(nonce, plaintext, aad)

    def aead_decrypt(self, key, nonce, ciphertext, aad):
        return _aead(self.aead, key).decrypt(nonce, ciphertext, aad)


def _aead(alg, key):
    if alg in (10, 30):
        return AESCCM(key, tag_length=AEADS[alg][2])
    if alg in (1, 3):
        return AESGCM(key)
    if alg == 24:
        return ChaCha20Poly1305(key)
    raise ValueError('unknown AEAD %d' % alg)


# ------------------------------------------------------------- keys ---


class Key:
    """A private key on one COSE curve, from its raw bytes (RFC 9529 prints
    X25519/Ed25519 private keys as 32 raw bytes and P-256/P-384 ones as the
    big-endian scalar)."""

    def __init__(self, curve, raw):
        self.curve, self.raw = curve, bytes(raw)
        if curve == 4:
            self.priv = x25519.X25519PrivateKey.from_private_bytes(self.raw)
        elif curve == 6:
            self.priv = ed25519.Ed25519PrivateKey.from_private_bytes(self.raw)
        elif curve in EC_CURVES:
            self.priv = ec.derive_private_key(int.from_bytes(self.raw, 'big'),
                                              EC_CURVES[curve]())
        else:
            raise ValueError('unknown curve %d' % curve)
        self.pub = self.priv.public_key()

    @property
    def x(self):
        """The COSE_Key 'x' parameter: the whole key for OKP, the
        x-coordinate for EC2 (RFC 9053 Section 7)."""
        if self.curve in (4, 6):
            return self.pub.public_bytes(serialization.Encoding.Raw,
                                         serialization.PublicFormat.Raw)
        return self.pub.public_numbers().x.to_bytes(COORD_LEN[self.curve], 'big')

    @property
    def y(self):
        return self.pub.public_numbers().y.to_bytes(COORD_LEN[self.curve], 'big')

    def ecdh(self, peer):
        """RFC 9053 Section 6.3.1: the shared secret is the X25519 output or
        the x-coordinate of the shared point."""
        if self.curve == 4:
            return self.priv.exchange(peer.pub)
        return self.priv.exchange(ec.ECDH(), peer.pub)

    def sign(self, alg, message):
        if alg == -8:
            return self.priv.sign(message)
        r, s = decode_dss_signature(self.priv.sign(message,
                                                   ec.ECDSA(SIGNATURE_KEYS[alg][1]())))
        # RFC 9053 Section 2.1: the signature is r || s, each left-padded to
        # the curve's size.
        n = COORD_LEN[self.curve]
        return r.to_bytes(n, 'big') + s.to_bytes(n, 'big')

    def cose_key(self, kid):
        """COSE_Key (RFC 9052 Section 7, RFC 9053 Section 7): kty, kid, crv,
        x (and y for EC2), labels in the deterministic order 1, 2, -1, -2,
        -3 (RFC 8949 Section 4.2.1)."""
        if self.curve in (4, 6):
            pairs = [(cbor_int(1), cbor_int(1)), (cbor_int(2), cbor_bstr(kid)),
                     (cbor_int(-1), cbor_int(self.curve)), (cbor_int(-2), cbor_bstr(self.x))]
        else:
            pairs = [(cbor_int(1), cbor_int(2)), (cbor_int(2), cbor_bstr(kid)),
                     (cbor_int(-1), cbor_int(self.curve)), (cbor_int(-2), cbor_bstr(self.x)),
                     (cbor_int(-3), cbor_bstr(self.y))]
        return cbor_map(pairs)

    def certificate(self, subject, issuer):
        """A DER X.509 end-entity certificate for this key, signed by issuer
        (an Ed25519 Key, so that the bytes are reproducible) with fixed
        serial number and validity."""
        name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, subject)])
        issuer_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, 'independent test CA')])
        cert = (x509.CertificateBuilder()
                .subject_name(name).issuer_name(issuer_name).public_key(self.pub)
                .serial_number(int.from_bytes(hashlib.sha256(subject.encode()).digest()[:8], 'big'))
                .not_valid_before(datetime.datetime(2024, 1, 1))
                .not_valid_after(datetime.datetime(2049, 12, 31))
                .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
                .sign(issuer.priv, None))
        return cert.public_bytes(serialization.Encoding.DER)

    def ccs(self, subject, kid):
        """A CWT Claims Set with 'sub' (2) and 'cnf' (8) holding the
        COSE_Key (RFC 8392, RFC 8747; RFC 9528 Section 3.5.2), the form of
        RFC 9529 Section 3's credentials."""
        return cbor_map([(cbor_int(2), cbor_tstr(subject)),
                         (cbor_int(8), cbor_map([(cbor_int(1), self.cose_key(kid))]))])


def verify_signature(alg, public_key, message, signature):
    """Raises cryptography's InvalidSignature unless signature is valid."""
    if alg == -8:
        public_key.verify(signature, message)
        return
    n = len(signature) // 2
    der = encode_dss_signature(int.from_bytes(signature[:n], 'big'),
                               int.from_bytes(signature[n:], 'big'))
    public_key.verify(der, message, ec.ECDSA(SIGNATURE_KEYS[alg][1]()))


# -------------------------------------------------------- the protocol ---


class SignatureMismatch(Exception):
    pass


def handshake(p):
    """Both parties of one EDHOC session (RFC 9528 Section 5).

    p: dict with
      method (0..3), suites_i (list of ints; the last is the selected one,
      RFC 9528 Section 5.2.2), x, y (ephemeral private keys, raw),
      c_i, c_r (connection identifiers as byte strings), sk_i, sk_r (private
      authentication keys, raw), id_cred_i, id_cred_r (encoded COSE header
      maps), cred_i, cred_r (encoded CBOR items as they enter the transcript),
      optional ead_1..ead_4 (encoded EAD items), optional keyupdate_context,
      optional signature_or_mac_2 / signature_or_mac_3: a signature made by
      someone else (ECDSA is randomised), which is verified and then used
      instead of the one this code would make so that the rest of the
      transcript can be compared byte for byte.

    Returns a dict of bytes (and a few ints) named as in RFC 9529.
    """
    v = {}
    method = p['method']
    suites_i = list(p['suites_i'])
    suite = Suite(suites_i[-1])
    r_static = method in (1, 3)   # RFC 9528 Section 3.2, Figure 3
    i_static = method in (2, 3)
    ead = {n: p.get('ead_%d' % n, b'') for n in (1, 2, 3, 4)}

    def kdf(name, prk, label, context, length):
        """RFC 9528 Section 4.1.2: info = (info_label : int, context : bstr,
        length : uint) as a CBOR sequence."""
        info = cbor_int(label) + cbor_bstr(context) + cbor_int(length)
        if name:
            v['info_' + name] = info
        return suite.expand(prk, info, length)

    # Ephemeral keys on the suite's curve (RFC 9528 Section 3.7).
    eph_i = Key(suite.ecdh_curve, p['x'])
    eph_r = Key(suite.ecdh_curve, p['y'])
    # Authentication keys: the signature curve of the suite for a party that
    # signs, its ECDH curve for a party using static DH (Section 3.2).
    auth_i = Key(suite.ecdh_curve if i_static else suite.sig_curve, p['sk_i'])
    auth_r = Key(suite.ecdh_curve if r_static else suite.sig_curve, p['sk_r'])
    v['g_x'], v['g_y'] = eph_i.x, eph_r.x
    if suite.ecdh_curve in EC_CURVES:
        v['g_x_y_coordinate'], v['g_y_y_coordinate'] = eph_i.y, eph_r.y
    if auth_i.curve in EC_CURVES:
        v['pk_i_x'], v['pk_i_y'] = auth_i.x, auth_i.y
    else:
        v['pk_i'] = auth_i.x
    if auth_r.curve in EC_CURVES:
        v['pk_r_x'], v['pk_r_y'] = auth_r.x, auth_r.y
    else:
        v['pk_r'] = auth_r.x

    # message_1 (Section 5.2.1): METHOD, SUITES_I (an int when it holds one
    # suite, Section 5.2.2), G_X, C_I, ? EAD_1.
    v['method'] = cbor_int(method)
    v['suites_i'] = (cbor_int(suites_i[0]) if len(suites_i) == 1
                     else cbor_array([cbor_int(s) for s in suites_i]))
    v['g_x_cbor'] = cbor_bstr(v['g_x'])
    v['c_i_cbor'] = encode_identifier(p['c_i'])
    v['ead_1'] = ead[1]
    v['message_1'] = v['method'] + v['suites_i'] + v['g_x_cbor'] + v['c_i_cbor'] + ead[1]

    # TH_2 = H( G_Y, H(message_1) ) (Section 5.3.2).
    v['h_message_1'] = suite.hash(v['message_1'])
    v['h_message_1_cbor'] = cbor_bstr(v['h_message_1'])
    v['g_y_cbor'] = cbor_bstr(v['g_y'])
    v['input_th_2'] = v['g_y_cbor'] + v['h_message_1_cbor']
    v['th_2'] = suite.hash(v['input_th_2'])
    v['th_2_cbor'] = cbor_bstr(v['th_2'])

    # PRK_2e = EDHOC_Extract( TH_2, G_XY ) (Section 4.1.1.1).
    v['g_xy'] = eph_r.ecdh(eph_i)
    if v['g_xy'] != eph_i.ecdh(eph_r):
        raise AssertionError('ECDH is not symmetric')
    v['salt'] = v['th_2']
    v['prk_2e'] = suite.extract(v['th_2'], v['g_xy'])

    # PRK_3e2m (Section 4.1.1.2).
    if r_static:
        v['salt_3e2m'] = kdf('salt_3e2m', v['prk_2e'], 1, v['th_2'], suite.hash_length)
        v['g_rx'] = auth_r.ecdh(eph_i)
        if v['g_rx'] != eph_i.ecdh(auth_r):
            raise AssertionError('ECDH is not symmetric')
        v['prk_3e2m'] = suite.extract(v['salt_3e2m'], v['g_rx'])
    else:
        v['prk_3e2m'] = v['prk_2e']

    # MAC_2 with context_2 = << C_R, ID_CRED_R, TH_2, CRED_R, ? EAD_2 >>
    # (Section 5.3.2); mac_length_2 is the suite's MAC length for static DH,
    # hash_length for a signature.
    v['c_r_cbor'] = encode_identifier(p['c_r'])
    v['id_cred_r'], v['cred_r_cbor'] = p['id_cred_r'], p['cred_r']
    v['ead_2'] = ead[2]
    v['context_2'] = (v['c_r_cbor'] + p['id_cred_r'] + v['th_2_cbor'] + p['cred_r'] + ead[2])
    v['context_2_bstr'] = cbor_bstr(v['context_2'])
    v['mac_2'] = kdf('mac_2', v['prk_3e2m'], 2, v['context_2'],
                     suite.mac_length if r_static else suite.hash_length)
    v['mac_2_cbor'] = cbor_bstr(v['mac_2'])
    if r_static:
        v['signature_or_mac_2'] = v['mac_2']
    else:
        # COSE_Sign1 (RFC 9052 Section 4.4): [ "Signature1", protected =
        # << ID_CRED_R >>, external_aad = << TH_2, CRED_R, ? EAD_2 >>,
        # payload = MAC_2 ].
        v['message_to_be_signed_2'] = cbor_array([
            cbor_tstr('Signature1'), cbor_bstr(p['id_cred_r']),
            cbor_bstr(v['th_2_cbor'] + p['cred_r'] + ead[2]), v['mac_2_cbor']])
        given = p.get('signature_or_mac_2')
        if given is not None:
            try:
                verify_signature(suite.sig_alg, auth_r.pub, v['message_to_be_signed_2'], given)
            except Exception as exc:
                raise SignatureMismatch('Signature_or_MAC_2 does not verify with PK_R over '
                                        'the message to be signed: %r' % exc)
            v['signature_or_mac_2'] = given
        else:
            v['signature_or_mac_2'] = auth_r.sign(suite.sig_alg, v['message_to_be_signed_2'])
            verify_signature(suite.sig_alg, auth_r.pub, v['message_to_be_signed_2'],
                             v['signature_or_mac_2'])
    v['signature_or_mac_2_cbor'] = cbor_bstr(v['signature_or_mac_2'])

    # PLAINTEXT_2 = ( C_R, ID_CRED_R / bstr / -24..23, Signature_or_MAC_2,
    # ? EAD_2 ); CIPHERTEXT_2 = PLAINTEXT_2 XOR KEYSTREAM_2.
    v['plaintext_2'] = (v['c_r_cbor'] + id_cred_in_plaintext(p['id_cred_r'])
                        + v['signature_or_mac_2_cbor'] + ead[2])
    v['keystream_2'] = kdf('keystream_2', v['prk_2e'], 0, v['th_2'], len(v['plaintext_2']))
    v['ciphertext_2'] = bytes(a ^ b for a, b in zip(v['plaintext_2'], v['keystream_2']))
    v['message_2'] = cbor_bstr(v['g_y'] + v['ciphertext_2'])

    # TH_3 = H( TH_2, PLAINTEXT_2, CRED_R ) (Section 5.4.2).
    v['input_th_3'] = v['th_2_cbor'] + v['plaintext_2'] + p['cred_r']
    v['th_3'] = suite.hash(v['input_th_3'])
    v['th_3_cbor'] = cbor_bstr(v['th_3'])

    # PRK_4e3m (Section 4.1.1.3).
    if i_static:
        v['salt_4e3m'] = kdf('salt_4e3m', v['prk_3e2m'], 5, v['th_3'], suite.hash_length)
        v['g_iy'] = eph_r.ecdh(auth_i)
        if v['g_iy'] != auth_i.ecdh(eph_r):
            raise AssertionError('ECDH is not symmetric')
        v['prk_4e3m'] = suite.extract(v['salt_4e3m'], v['g_iy'])
    else:
        v['prk_4e3m'] = v['prk_3e2m']

    # MAC_3 with context_3 = << ID_CRED_I, TH_3, CRED_I, ? EAD_3 >>.
    v['id_cred_i'], v['cred_i_cbor'] = p['id_cred_i'], p['cred_i']
    v['ead_3'] = ead[3]
    v['context_3'] = p['id_cred_i'] + v['th_3_cbor'] + p['cred_i'] + ead[3]
    v['context_3_bstr'] = cbor_bstr(v['context_3'])
    v['mac_3'] = kdf('mac_3', v['prk_4e3m'], 6, v['context_3'],
                     suite.mac_length if i_static else suite.hash_length)
    v['mac_3_cbor'] = cbor_bstr(v['mac_3'])
    if i_static:
        v['signature_or_mac_3'] = v['mac_3']
    else:
        v['message_to_be_signed_3'] = cbor_array([
            cbor_tstr('Signature1'), cbor_bstr(p['id_cred_i']),
            cbor_bstr(v['th_3_cbor'] + p['cred_i'] + ead[3]), v['mac_3_cbor']])
        given = p.get('signature_or_mac_3')
        if given is not None:
            try:
                verify_signature(suite.sig_alg, auth_i.pub, v['message_to_be_signed_3'], given)
            except Exception as exc:
                raise SignatureMismatch('Signature_or_MAC_3 does not verify with PK_I over '
                                        'the message to be signed: %r' % exc)
            v['signature_or_mac_3'] = given
        else:
            v['signature_or_mac_3'] = auth_i.sign(suite.sig_alg, v['message_to_be_signed_3'])
            verify_signature(suite.sig_alg, auth_i.pub, v['message_to_be_signed_3'],
                             v['signature_or_mac_3'])
    v['signature_or_mac_3_cbor'] = cbor_bstr(v['signature_or_mac_3'])

    # message_3: COSE_Encrypt0 with K_3, IV_3 and A_3 = [ "Encrypt0", h'',
    # TH_3 ] (Section 5.4.2, Appendix C.3 for the Enc_structure).
    v['plaintext_3'] = (id_cred_in_plaintext(p['id_cred_i']) + v['signature_or_mac_3_cbor']
                        + ead[3])
    v['a_3'] = cbor_array([cbor_tstr('Encrypt0'), cbor_bstr(b''), v['th_3_cbor']])
    v['k_3'] = kdf('k_3', v['prk_3e2m'], 3, v['th_3'], suite.key_length)
    v['iv_3'] = kdf('iv_3', v['prk_3e2m'], 4, v['th_3'], suite.iv_length)
    v['ciphertext_3'] = suite.aead_encrypt(v['k_3'], v['iv_3'], v['plaintext_3'], v['a_3'])
    v['message_3'] = cbor_bstr(v['ciphertext_3'])

    # TH_4 = H( TH_3, PLAINTEXT_3, CRED_I ).
    v['input_th_4'] = v['th_3_cbor'] + v['plaintext_3'] + p['cred_i']
    v['th_4'] = suite.hash(v['input_th_4'])
    v['th_4_cbor'] = cbor_bstr(v['th_4'])

    # message_4 (Section 5.5.2): PLAINTEXT_4 = ( ? EAD_4 ).
    v['ead_4'] = v['plaintext_4'] = ead[4]
    v['a_4'] = cbor_array([cbor_tstr('Encrypt0'), cbor_bstr(b''), v['th_4_cbor']])
    v['k_4'] = kdf('k_4', v['prk_4e3m'], 8, v['th_4'], suite.key_length)
    v['iv_4'] = kdf('iv_4', v['prk_4e3m'], 9, v['th_4'], suite.iv_length)
    v['ciphertext_4'] = suite.aead_encrypt(v['k_4'], v['iv_4'], v['plaintext_4'], v['a_4'])
    v['message_4'] = cbor_bstr(v['ciphertext_4'])

    # PRK_out, PRK_exporter (Section 4.1.3, Figure 8).
    v['prk_out'] = kdf('prk_out', v['prk_4e3m'], 7, v['th_4'], suite.hash_length)
    v['prk_exporter'] = kdf('prk_exporter', v['prk_out'], 10, b'', suite.hash_length)

    # OSCORE (Appendix A.1): Master Secret = EDHOC_Exporter( 0, h'',
    # oscore_key_length ), the key length of the application AEAD; Master
    # Salt = EDHOC_Exporter( 1, h'', 8 ); the initiator's Sender ID is C_R.
    app_key_length = AEADS[suite.app_aead][0]
    v['oscore_master_secret'] = kdf('oscore_master_secret', v['prk_exporter'], 0, b'',
                                    app_key_length)
    v['oscore_master_salt'] = kdf('oscore_master_salt', v['prk_exporter'], 1, b'', 8)
    v['oscore_client_sender_id'] = v['oscore_server_recipient_id'] = p['c_r']
    v['oscore_server_sender_id'] = v['oscore_client_recipient_id'] = p['c_i']
    v['application_aead_algorithm'] = v['oscore_aead_algorithm'] = suite.app_aead
    v['application_hash_algorithm'] = v['oscore_hkdf_hash_algorithm'] = suite.app_hash

    # EDHOC_KeyUpdate (Appendix H).
    if 'keyupdate_context' in p:
        ctx = p['keyupdate_context']
        v['keyupdate_context'], v['keyupdate_context_cbor'] = ctx, cbor_bstr(ctx)
        v['prk_out_after_keyupdate'] = kdf(None, v['prk_out'], 11, ctx, suite.hash_length)
        v['prk_exporter_after_keyupdate'] = kdf(None, v['prk_out_after_keyupdate'], 10, b'',
                                                suite.hash_length)
        v['oscore_master_secret_after_keyupdate'] = kdf(
            None, v['prk_exporter_after_keyupdate'], 0, b'', app_key_length)
        v['oscore_master_salt_after_keyupdate'] = kdf(
            None, v['prk_exporter_after_keyupdate'], 1, b'', 8)

    # The cipher suite's parameters, as RFC 9529 lists them.
    v['cipher_suite'] = suite.number
    v['edhoc_aead_algorithm'] = suite.aead
    v['edhoc_hash_algorithm'] = suite.hash_alg
    v['edhoc_mac_length_static_dh'] = suite.mac_length
    v['edhoc_ecdh_curve'] = suite.ecdh_curve
    v['edhoc_signature_algorithm'] = suite.sig_alg
    return v


def exporter(suite_number, prk_exporter, label, context, length):
    """EDHOC_Exporter( exporter_label, context, length ) = EDHOC_KDF(
    PRK_exporter, exporter_label, context, length ) (RFC 9528 Section
    4.2.1)."""
    info = cbor_int(label) + cbor_bstr(context) + cbor_int(length)
    return Suite(suite_number).expand(prk_exporter, info, length)


def open_message_2(message_2, g_y_len, keystream_source):
    """Split a received message_2 into G_Y and PLAINTEXT_2 with a keystream
    function (plaintext_length -> KEYSTREAM_2)."""
    body = cbor_bstr_value(message_2)
    g_y, ciphertext = body[:g_y_len], body[g_y_len:]
    keystream = keystream_source(len(ciphertext))
    return g_y, bytes(a ^ b for a, b in zip(ciphertext, keystream))


def keystream_2(v, length):
    """KEYSTREAM_2 of a transcript for another plaintext length."""
    suite = Suite(v['cipher_suite'])
    info = cbor_int(0) + cbor_bstr(v['th_2']) + cbor_int(length)
    return suite.expand(v['prk_2e'], info, length)


def signature_from_plaintext_2(plaintext_2):
    """Signature_or_MAC_2: the third item of PLAINTEXT_2."""
    items = cbor_split(plaintext_2)
    return cbor_bstr_value(items[2])


def signature_from_plaintext_3(plaintext_3):
    """Signature_or_MAC_3: the second item of PLAINTEXT_3."""
    items = cbor_split(plaintext_3)
    return cbor_bstr_value(items[1])
