/*
 * How a cell of the interop matrix ended, from the initiator's exit code,
 * its --json report and the last line of its standard error: the EDHOC
 * and OSCORE results and the likely causes (interop_internal.h).
 */
#include <stdlib.h>
#include <string.h>

#include "interop_internal.h"

/* The step named in "message_2 verification failed: <step>" and similar. */
static const char *after_colon(const char *text)
{
    const char *p = strstr(text, "failed: ");
    if (p)
        return p + 8;
    p = strchr(text, ':');
    return p ? p + 2 : text;
}

/* Our own verification of the peer's message failed: name the inputs of
 * that computation the peer most likely encoded differently. */
static void diagnose_verify(struct interop_cell *c, const char *text)
{
    const char *step = after_colon(text);
    set_text(c->edhoc, sizeof c->edhoc, "our verification failed: %s", step);
    const char *why;
    if (strstr(step, "Signature_or_MAC_2"))
        why = c->method == 0 || c->method == 2
                  ? "the peer's signature over TH_2, CRED_R, EAD_2 differs: check the peer's "
                    "CRED_R bytes (the exact credential encoding it signs), ID_CRED_R, C_R "
                    "encoding, EAD_2 and that its signing key matches its credential"
                  : "MAC_2 mismatch: the peer's TH_2 or context_2 differs - check its C_R "
                    "encoding, ID_CRED_R / CRED_R bytes, EAD_2";
    else if (strstr(step, "MAC_2"))
        why = "MAC_2 mismatch: the peer's TH_2 or context_2 differs - check its C_R encoding "
              "(int vs byte string), ID_CRED_R / CRED_R bytes (kid as integer vs byte string), "
              "EAD_2, and the static DH key (G_RX) of its credential";
    else if (strstr(step, "unknown credential"))
        why = "the peer's credential (ID_CRED_R) is not in our trust: add it with --trust, or "
              "check how the peer names it (kid as integer vs byte string, x5t hash algorithm, "
              "kccs encoding)";
    else if (strstr(step, "CIPHERTEXT_2") || strstr(step, "decrypt"))
        why = "KEYSTREAM_2 / PRK_2e differ: check the peer's G_XY, TH_2 (hash of G_Y and "
              "H(message_1)) and the suite's hash and curve";
    else if (strstr(step, "message_4"))
        why = "message_4 did not verify: check the peer's PRK_4e3m, TH_4 (includes message_3 "
              "plaintext and CRED_I) and EAD_4";
    else if (strstr(step, "G_Y"))
        why = "the peer's ephemeral key G_Y has the wrong length or is not on the suite's curve: "
              "wrong suite parameters";
    else if (strstr(step, "untrusted") || strstr(step, "expired") || strstr(step, "certificate"))
        why = "the peer's certificate does not chain to our trust anchors (--trust) or is "
              "outside its validity period";
    else if (strstr(step, "EAD"))
        why = "missing or extra EAD: the peer sent a critical EAD item we do not understand "
              "(--ead-accept)";
    else if (strstr(step, "encoding") || strstr(step, "CBOR") || strstr(step, "malformed") ||
             strstr(step, "deterministic") || strstr(step, "trailing"))
        why = "the peer's message is not deterministic CBOR as RFC 9528 3.1 requires: check its "
              "encoder (integer/byte string forms, lengths, trailing bytes)";
    else
        why = "compare the trace (--trace-dir) with the device's log line by line";
    set_text(c->reason, sizeof c->reason, "%s", why);
}

/* The ERR_CODE and diagnostic in an initiator's failure text ("... ERR_CODE
 * 1: method not supported"). */
static bool parse_err_code(const char *text, long *code, char *diag, size_t cap)
{
    const char *p = strstr(text, "ERR_CODE ");
    if (!p)
        return false;
    char *e;
    long v = strtol(p + 9, &e, 10);
    if (e == p + 9)
        return false;
    *code = v;
    diag[0] = '\0';
    if (e[0] == ':' && e[1] == ' ')
        snprintf(diag, cap, "%s", e + 2);
    return true;
}

/* The peer could not parse our message_1: what a device that knows only
 * the bare framing answers to an A.2 one (its CBOR `true` is no METHOD). */
static bool unparsed_message_1(long code, const char *diag)
{
    return code == 1 && strstr(diag, "message_1") &&
           (strstr(diag, "malformed") || strstr(diag, "parse") || strstr(diag, "decode"));
}

/* RFC 9528 has no error code for an unsupported method: ERR_CODE 1 with a
 * text that says so ("method not supported", "unsupported method 0"). */
static bool method_refused(const char *diag)
{
    return strcasestr(diag, "method") && !strstr(diag, "MAC") && !strstr(diag, "Signature") &&
           !strcasestr(diag, "verif");
}

/* The cell ended with the peer's EDHOC error ERR_CODE code. */
static void peer_error(struct interop_cell *c, long code, const char *diag, const char *text)
{
    c->err_code = code;
    c->outcome = INTEROP_FAILED;
    c->failure = INTEROP_FAIL_PEER_ERROR;
    set_text(c->edhoc, sizeof c->edhoc, "EDHOC error %ld from the peer%s%s", code,
             diag[0] ? ": " : "", diag);
    char *why = c->reason;
    size_t cap = sizeof c->reason;
    if (code == 1 && c->combined && strstr(diag, "message_4")) {
        set_unsupported(c, INTEROP_NS_COMBINED);
        set_text(why, cap,
                 "the peer requires message_4, which the RFC 9668 combined request "
                 "cannot carry");
    } else if (code == 1 && c->combined &&
               (strcasestr(diag, "combined") || strcasestr(diag, "EDHOC option"))) {
        set_unsupported(c, INTEROP_NS_COMBINED);
        set_text(why, cap, "the device refuses the RFC 9668 combined request (\"%s\")", diag);
    } else if (code == 1 && is_bare(c) && strstr(diag, "C_R")) {
        set_unsupported(c, INTEROP_NS_FRAMING);
        set_text(why, cap,
                 "the peer does not take the bare framing: it read our bare message_1 "
                 "as a C_R-prefixed message_3 (\"%s\"); use the RFC 9528 A.2 framing with it",
                 diag);
    } else if (!is_bare(c) && unparsed_message_1(code, diag)) {
        /* Not supported once the bare framing is seen to work (the
         * matrix decides at the end); a broken encoder otherwise. */
        c->a2_unparsed = true;
        set_text(why, cap,
                 "the peer could not parse our message_1 (\"%s\"): if the bare "
                 "framing works, it does not take the A.2 framing (CBOR true before message_1, "
                 "C_R before message_3)",
                 diag);
    } else if (code == 1 && method_refused(diag)) {
        set_unsupported(c, INTEROP_NS_METHOD);
        set_text(why, cap, "method %d not supported by the peer", c->method);
    } else if (code == 1 &&
               (strstr(diag, "MAC") || strstr(diag, "Signature") || strstr(diag, "verif"))) {
        set_text(why, cap,
                 "the peer could not verify message_3: check our CRED_I as the peer "
                 "stores it (the exact bytes hashed into TH_3), ID_CRED_I (kid as integer vs "
                 "byte string), EAD_3");
    } else if (code == 1) {
        set_text(why, cap, "the peer refused%s%s", diag[0] ? ": " : "", diag);
    } else if (code == 3) {
        set_text(why, cap,
                 "the peer does not know our credential (ID_CRED_I by %s): add our "
                 "credential to its trust, or name it another way (--id-creds)",
                 c->id_cred);
    } else {
        set_text(why, cap, "ERR_CODE %ld is not defined by RFC 9528", code);
    }
    if (strstr(text, "message_3"))
        add_text(why, cap, " (after message_3)");
    else if (strstr(text, "combined"))
        add_text(why, cap, " (after the combined request)");
}
/* The cipher suites the peer offers in SUITES_R: ask the initiator to start
 * with the refused suite and fall back to any other, then see which one it
 * settled on (our most preferred among SUITES_R). Returns -1 if unknown. */
static int probe_suites_r(const struct interop_matrix_opts *o, int refused, int method, bool bare)
{
    /* Not 25: no OSCORE context can follow it (RFC 8613 Section 3.2.1),
     * so an initiator with requests to send refuses to offer it. */
    static const int known[] = {0, 1, 2, 3, 4, 5, 6, 24};
    char list[64];
    int n = snprintf(list, sizeof list, "%d", refused);
    for (size_t i = 0; i < sizeof known / sizeof known[0]; i++)
        if (known[i] != refused)
            n += snprintf(list + n, sizeof list - (size_t)n, ",%d", known[i]);
    struct initiator_argv a;
    initiator_argv_start(o, method, list, &a);
    if (bare) {
        a.v[a.n++] = "--framing";
        a.v[a.n++] = "bare";
    }
    struct child_result r;
    initiator_argv_run(o, &a, false, &r);
    long suite = -1, attempts = 0;
    if (r.report) {
        member_long(r.report, "suite", &suite);
        member_long(r.report, "attempts", &attempts);
    }
    child_result_free(&r);
    return attempts >= 2 && suite >= 0 && suite != refused ? (int)suite : -1;
}

/* The peer refused the suite with error code 2 (RFC 9528 6.3): the suite
 * is not supported; SUITES_R says which ones are. */
static void suite_refused(const struct interop_matrix_opts *o, struct matrix_state *st,
                          struct interop_cell *c, const json_t *rep, const char *diag)
{
    set_unsupported(c, INTEROP_NS_SUITE);
    c->err_code = 2;
    set_text(c->edhoc, sizeof c->edhoc, "EDHOC error 2 from the peer: %s",
             diag[0] ? diag : "wrong selected cipher suite");
    /* The initiator's report names the SUITES_R it received; only an
     * initiator that does not probes the peer once more. */
    const json_t *suites_r = rep ? json_object_get(rep, "suites_r") : NULL;
    if (json_is_array(suites_r) && json_array_size(suites_r) > 0) {
        char list[80];
        size_t w = 0, i;
        const json_t *v;
        json_array_foreach(suites_r, i, v)
        {
            if (json_is_integer(v) && w < sizeof list)
                w += (size_t)snprintf(list + w, sizeof list - w, "%s%lld", w ? ", " : "",
                                      (long long)json_integer_value(v));
        }
        set_text(c->reason, sizeof c->reason,
                 "suite %d not supported by the peer: SUITES_R = %s (the suites it offers)",
                 c->suite, list);
        return;
    }
    int sr = st->suites_r_cache[c->suite & 31];
    if (sr == -2)
        sr = st->suites_r_cache[c->suite & 31] = probe_suites_r(o, c->suite, c->method, is_bare(c));
    if (sr >= 0)
        set_text(c->reason, sizeof c->reason,
                 "suite %d not supported by the peer: SUITES_R = %d (our most preferred suite "
                 "among those it offers)",
                 c->suite, sr);
    else
        set_text(c->reason, sizeof c->reason,
                 "suite %d not supported by the peer: SUITES_R names none of the suites we have",
                 c->suite);
}

/* The request a failure text of the initiator starts with ("GET /x: ..."):
 * one of our --request values, else the text before the first ": ". */
static const char *failed_request(const struct interop_matrix_opts *o, const char *text, char *buf,
                                  size_t cap)
{
    for (int i = 0; i + 1 < o->n_pass; i += 2) {
        size_t len = strlen(o->pass[i + 1]);
        if (!strcmp(o->pass[i], "--request") && !strncmp(text, o->pass[i + 1], len) &&
            text[len] == ':') {
            snprintf(buf, cap, "%s", o->pass[i + 1]);
            return text + len + (text[len + 1] == ' ' ? 2 : 1);
        }
    }
    const char *p = strstr(text, ": ");
    snprintf(buf, cap, "%.*s", p ? (int)(p - text) : 0, text);
    return p ? p + 2 : text;
}

/* The handshake completed, the OSCORE request after it did not. */
static void oscore_failure(const struct interop_matrix_opts *o, struct interop_cell *c,
                           int exit_code, const char *text)
{
    c->outcome = INTEROP_FAILED;
    c->failure = exit_code == INTEROP_EXIT_TIMEOUT  ? INTEROP_FAIL_TIMEOUT
                 : exit_code == INTEROP_EXIT_OSCORE ? INTEROP_FAIL_OSCORE
                                                    : INTEROP_FAIL_OTHER;
    char req[200];
    const char *rest = failed_request(o, text, req, sizeof req);
    bool edhoc_only_hint = false;
    if (exit_code == INTEROP_EXIT_TIMEOUT) {
        set_text(c->oscore, sizeof c->oscore, "no answer to %s", req[0] ? req : "the request");
        set_text(c->reason, sizeof c->reason,
                 "the handshake completed, the OSCORE request got no answer: the device may have "
                 "no OSCORE resource there, drop requests it cannot decrypt, or not find the "
                 "context (Recipient ID = our C_R)");
        edhoc_only_hint = true;
    } else {
        set_text(c->oscore, sizeof c->oscore, "%s", rest);
        if (strstr(text, "without OSCORE: 2."))
            /* RFC 8613 Section 2: a successful answer carries the option. */
            set_text(c->reason, sizeof c->reason,
                     "the peer answered without OSCORE with a success code: it does not protect "
                     "that resource%s, or something on the path replaced its protected answer; "
                     "an unprotected answer to an OSCORE request proves nothing",
                     c->combined ? " (or ignored the RFC 9668 combined request)" : "");
        else if (strstr(text, "Replay detected"))
            set_text(c->reason, sizeof c->reason,
                     "the peer answered without OSCORE: Replay detected, for a context that had "
                     "just been derived: it may still hold an older context under the same "
                     "Recipient ID (our C_R) and check our sequence numbers against it");
        else if (strstr(text, "without OSCORE: 4.00") || strstr(text, "Decryption failed"))
            set_text(c->reason, sizeof c->reason,
                     "the peer answered without OSCORE: it could not decrypt our request, the "
                     "OSCORE contexts differ: check its EDHOC_Exporter (master secret/salt from "
                     "PRK_out), Sender/Recipient IDs (= C_R/C_I) and the suite's AEAD and hash");
        else if (strstr(text, "without OSCORE: 4.02")) {
            set_text(c->reason, sizeof c->reason,
                     "the peer answered without OSCORE: it could not decode our OSCORE option "
                     "or COSE object, or does not know the option at all (4.02 Bad Option)");
            edhoc_only_hint = true;
        } else if (strstr(text, "without OSCORE")) {
            set_text(c->reason, sizeof c->reason,
                     "the peer answered without OSCORE: it did not find the security context "
                     "(Recipient ID = our C_R) or does not protect that resource");
            edhoc_only_hint = true;
        } else if (exit_code == INTEROP_EXIT_OSCORE)
            set_text(c->reason, sizeof c->reason,
                     "the OSCORE contexts differ: check the peer's EDHOC_Exporter (master "
                     "secret/salt from PRK_out), Sender/Recipient IDs (= C_R/C_I) and the "
                     "suite's AEAD and hash");
        else
            set_text(c->reason, sizeof c->reason, "see the trace (--trace-dir)");
    }
    if (edhoc_only_hint && !c->combined)
        add_text(c->reason, sizeof c->reason,
                 "; a device that does EDHOC only: run interop with --request none");
    if (is_bare(c) && !c->message_4)
        add_text(c->reason, sizeof c->reason,
                 " (the bare framing has no answer to message_3: that the device accepted it "
                 "is not confirmed)");
}

/* Whether the handshake completed, from the initiator's report: its
 * handshake time is set once EDHOC is done, and the OSCORE requests only
 * go out after it (a protected answer to the combined request proves the
 * device took message_3, RFC 9668 Section 3.3.1). */
static bool handshake_completed(const struct interop_cell *c, const json_t *rep)
{
    if (!rep)
        return false;
    const json_t *hs = json_object_get(rep, "handshake_ms");
    if (json_is_number(hs) && json_number_value(hs) > 0)
        return true;
    size_t i;
    const json_t *m;
    json_array_foreach(json_object_get(rep, "messages"), i, m)
    {
        const char *name = member_str(m, "name"), *from = member_str(m, "from");
        if (!name || !from)
            continue;
        bool from_initiator = !strcmp(from, "initiator");
        if (from_initiator && !strncmp(name, "OSCORE request", 14))
            return true;
        if (c->combined && !from_initiator && !strcmp(name, "OSCORE response 1"))
            return true;
    }
    return false;
}

/* The initiator's "tolerated": ["c-bstr", "kid-int"] as "c-bstr, kid-int";
 * absent (an initiator without --tolerate) or empty: "". */
static void read_tolerated(const json_t *rep, char *dst, size_t cap)
{
    dst[0] = '\0';
    size_t n = 0, i;
    const json_t *v;
    json_array_foreach(json_object_get(rep, "tolerated"), i, v)
    {
        /* Names are tokens (c-bstr, kid-int); anything else is not ours. */
        const char *name = json_string_value(v);
        if (name && name[strcspn(name, ", \t\r\n\"")] == '\0' && n < cap)
            n += (size_t)snprintf(dst + n, cap - n, "%s%s", n ? ", " : "", name);
    }
}

void compose_result(struct interop_cell *c)
{
    if (c->outcome == INTEROP_SKIPPED)
        set_text(c->result, sizeof c->result, "skipped");
    else if (c->outcome == INTEROP_OK)
        set_text(c->result, sizeof c->result, "ok");
    else if (c->edhoc_ok)
        set_text(c->result, sizeof c->result, "EDHOC ok, OSCORE: %s", c->oscore);
    else if (c->outcome == INTEROP_NOT_SUPPORTED)
        set_text(c->result, sizeof c->result, "not supported: %s", c->edhoc);
    else
        set_text(c->result, sizeof c->result, "%s", c->edhoc);
}

void diagnose(const struct interop_matrix_opts *o, struct matrix_state *st, struct interop_cell *c,
              const struct child_result *r)
{
    char text[400] = "", diag[200] = "", outcome[16] = "";
    long code = -1;
    int exit_code = r->exit_code;
    const json_t *out = r->report;
    c->err_code = -1;
    c->outcome = INTEROP_FAILED;
    c->failure = INTEROP_FAIL_OTHER;
    c->unsupported = INTEROP_NS_NONE;
    c->edhoc_ok = c->a2_unparsed = false;
    c->edhoc[0] = c->oscore[0] = c->reason[0] = '\0';
    char a2_failure[400] = "";
    if (out) {
        const json_t *e = json_object_get(out, "error");
        if (json_is_object(e)) {
            const char *v;
            if ((v = member_str(e, "text")))
                snprintf(text, sizeof text, "%s", v);
            if ((v = member_str(e, "diagnostic")))
                snprintf(diag, sizeof diag, "%s", v);
            member_long(e, "err_code", &code);
        }
        const char *v;
        if ((v = member_str(out, "outcome")))
            snprintf(outcome, sizeof outcome, "%s", v);
        member_long(out, "total_edhoc_bytes", &c->edhoc_bytes);
        member_long(out, "total_coap_bytes", &c->coap_bytes);
        const char *fr = member_str(out, "framing");
        if (fr && (!strcmp(fr, "A.2") || !strcmp(fr, "bare")))
            snprintf(c->framing_used, sizeof c->framing_used, "%s", fr);
        if ((v = member_str(out, "framing_a2_failure")))
            snprintf(a2_failure, sizeof a2_failure, "%s", v);
        read_tolerated(out, c->tolerated, sizeof c->tolerated);
    }
    if (!text[0])
        snprintf(text, sizeof text, "%s",
                 r->err_line[0] ? r->err_line : "the initiator's report is unreadable");
    if (r->killed) {
        c->failure = INTEROP_FAIL_TIMEOUT;
        set_text(c->edhoc, sizeof c->edhoc, "timeout");
        set_text(c->reason, sizeof c->reason,
                 "the initiator did not finish within %.3g s: the device is silent or stuck",
                 (double)(o->timeout_ms + INTEROP_KILL_GRACE_MS) / 1000.0);
        return;
    }
    size_t sent = out ? json_array_size(json_object_get(out, "messages")) : 0;
    if ((exit_code == INTEROP_EXIT_USAGE || exit_code == INTEROP_EXIT_INPUT) && sent == 0) {
        /* Refused before anything was sent: our credentials or options
         * cannot make this cell (the caller tells a cell of its own from
         * a command line no cell can run). */
        c->setup_exit = exit_code;
        snprintf(c->setup_text, sizeof c->setup_text, "%.*s", (int)sizeof c->setup_text - 1, text);
        c->outcome = INTEROP_SKIPPED;
        c->failure = INTEROP_FAIL_NONE;
        set_text(c->reason, sizeof c->reason, "not possible with our credentials or options: %s",
                 text);
        return;
    }
    if (handshake_completed(c, out)) {
        c->edhoc_ok = true;
        set_text(c->edhoc, sizeof c->edhoc, "ok");
        const json_t *first = json_array_get(json_object_get(out, "responses"), 0);
        const char *first_code = member_str(first, "code");
        /* The initiator exits 1 on a protected 4.xx/5.xx (the request
         * failed); OSCORE worked, which is what the cell is about. */
        bool protected_error = exit_code == INTEROP_EXIT_FAILURE && first_code &&
                               (first_code[0] == '4' || first_code[0] == '5');
        if ((exit_code == INTEROP_EXIT_OK && !strcmp(outcome, "ok")) || protected_error) {
            c->outcome = INTEROP_OK;
            c->failure = INTEROP_FAIL_NONE;
            const json_t *r0 = json_array_get(json_object_get(out, "responses"), 0);
            const char *rc = member_str(r0, "code"), *rname = member_str(r0, "code_name");
            if (o->request_none)
                set_text(c->oscore, sizeof c->oscore, "not asked (--request none)");
            else if (rc && rc[0] && rc[0] != '2')
                set_text(c->oscore, sizeof c->oscore, "ok (a protected %s%s%s)", rc,
                         rname ? " " : "", rname ? rname : "");
            else
                set_text(c->oscore, sizeof c->oscore, "ok");
        } else if (exit_code == INTEROP_EXIT_OK) {
            set_text(c->oscore, sizeof c->oscore, "the initiator's report is unreadable");
        } else {
            oscore_failure(o, c, exit_code, text);
        }
        return;
    }
    /* --framing auto: A.2 got no message_2, bare was tried next. When the
     * device answered the A.2 message_1 with an EDHOC error it understood
     * (not a parse error), it speaks A.2 and that error is the answer. */
    long a2_code = -1;
    char a2_diag[200];
    if (a2_failure[0] && parse_err_code(a2_failure, &a2_code, a2_diag, sizeof a2_diag) &&
        !unparsed_message_1(a2_code, a2_diag)) {
        snprintf(text, sizeof text, "%s", a2_failure);
        snprintf(diag, sizeof diag, "%s", a2_diag);
        code = a2_code;
        exit_code = INTEROP_EXIT_PEER_ERROR;
        snprintf(c->framing_used, sizeof c->framing_used, "A.2");
        out = NULL; /* the rest of the report is the bare attempt's */
        a2_failure[0] = '\0';
    }
    switch (exit_code) {
    case INTEROP_EXIT_PEER_ERROR:
        if (code == 2 || strstr(text, "cipher suite in common") ||
            strstr(text, "no common cipher suite")) {
            suite_refused(o, st, c, out, diag);
        } else if (code >= 0) {
            peer_error(c, code, diag, text);
        } else {
            c->failure = INTEROP_FAIL_PEER_ERROR;
            set_text(c->edhoc, sizeof c->edhoc, "EDHOC error from the peer: %s", text);
            set_text(c->reason, sizeof c->reason, "the peer's error message could not be parsed");
        }
        break;
    case INTEROP_EXIT_VERIFY:
        c->failure = INTEROP_FAIL_VERIFY;
        diagnose_verify(c, text);
        if (out) {
            /* The initiator's own finding on a MAC failure comes first:
             * it tried the encodings devices are known to get wrong. */
            const char *d = member_str(out, "diagnosis");
            if (d && d[0]) {
                char generic[sizeof c->reason];
                snprintf(generic, sizeof generic, "%s", c->reason);
                set_text(c->reason, sizeof c->reason, "%s; %s", d, generic);
            }
        }
        break;
    case INTEROP_EXIT_TIMEOUT:
        c->failure = INTEROP_FAIL_TIMEOUT;
        set_text(c->edhoc, sizeof c->edhoc, "timeout");
        if (strstr(text, "message_3") && is_bare(c))
            set_text(c->reason, sizeof c->reason,
                     "%s: the peer did not answer message_3 in "
                     "the bare framing",
                     text);
        else if (strstr(text, "message_3"))
            set_text(c->reason, sizeof c->reason,
                     "%s: the peer may have failed to verify "
                     "message_3 silently, or does not answer it",
                     text);
        else if (strstr(text, "message_1") && strstr(text, "timeout"))
            set_text(c->reason, sizeof c->reason,
                     "%s: the device is silent - not running, "
                     "another port or path, or it drops message_1 (check its log for a parse "
                     "error)",
                     text);
        else
            set_text(c->reason, sizeof c->reason, "%s", text[0] ? text : "no answer in time");
        break;
    case INTEROP_EXIT_OSCORE:
        if (c->combined && strstr(text, "without OSCORE: 4.02")) {
            /* RFC 9668 Section 3.1: the EDHOC option is critical, so a
             * server that does not know it answers 4.02 (RFC 7252 5.4.1). */
            set_unsupported(c, INTEROP_NS_COMBINED);
            set_text(c->edhoc, sizeof c->edhoc, "%s", text);
            set_text(c->reason, sizeof c->reason,
                     "the device does not take the RFC 9668 combined request: 4.02 Bad Option "
                     "is the answer to a critical option it does not know (the EDHOC option)");
        } else {
            /* The reasons of an OSCORE failure, but the handshake was not
             * seen to complete (the combined request carried message_3):
             * the EDHOC column tells it. */
            oscore_failure(o, c, exit_code, text);
            set_text(c->edhoc, sizeof c->edhoc, "%s", text);
            c->oscore[0] = '\0';
        }
        break;
    case INTEROP_EXIT_USAGE:
    case INTEROP_EXIT_INPUT:
        c->failure = INTEROP_FAIL_OTHER;
        set_text(c->edhoc, sizeof c->edhoc, "failed: %s", text);
        break;
    default:
        c->failure = INTEROP_FAIL_OTHER;
        if (exit_code < 0)
            set_text(c->edhoc, sizeof c->edhoc, "failed: the initiator crashed");
        else
            set_text(c->edhoc, sizeof c->edhoc, "failed: %s", text);
        if (strstr(text, "message_4 expected")) {
            /* RFC 9528 Section 5.5: message_4 is optional. */
            set_unsupported(c, INTEROP_NS_M4);
            set_text(c->edhoc, sizeof c->edhoc,
                     "no message_4: the peer answered message_3 "
                     "with an empty 2.04");
            set_text(c->reason, sizeof c->reason,
                     "the peer does not send message_4 (optional, "
                     "RFC 9528 Section 5.5)");
        } else if (strstr(text, "4.15") || strstr(text, "Content-Format")) {
            set_unsupported(c, INTEROP_NS_FRAMING);
            set_text(c->reason, sizeof c->reason,
                     "the peer refused the Content-Format: it does not take the %s framing",
                     is_bare(c) ? "bare" : "A.2");
        } else if (strstr(text, "4.04") || strstr(text, "Not Found"))
            set_text(c->reason, sizeof c->reason, "no EDHOC resource at that path");
        else if (is_bare(c))
            set_text(c->reason, sizeof c->reason,
                     "the peer may not accept the bare framing (messages without the A.2 "
                     "prefixes)");
        else
            set_text(c->reason, sizeof c->reason, "see the trace (--trace-dir)");
        break;
    }
    if (a2_failure[0])
        add_text(c->reason, sizeof c->reason, " (--framing auto: A.2 first: %s)", a2_failure);
}
