/*
 * The engine of bytes --keylog (src/tools/bytes): message_2 of RFC 9529
 * trace 2 opened from its key-log values as a known answer, and the key-log
 * reader's rows and errors.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bytes_decrypt.h"
#include "keylog_read.h"
#include "vectors.h"

static struct keylog_edhoc_row trace2_row(struct vec_scope v)
{
    struct keylog_edhoc_row r;
    memset(&r, 0, sizeof r);
    r.at.file = "trace2";
    r.at.line = 1;
    static const char *const keys[KEYLOG_EDHOC_FIELDS] = {"g_x",  "prk_2e",   "th_2", "prk_3e2m",
                                                          "th_3", "prk_4e3m", "th_4"};
    for (int i = 0; i < KEYLOG_EDHOC_FIELDS; i++)
        r.len[i] = (uint8_t)vec_hex(v, keys[i], r.v[i], sizeof r.v[i]);
    return r;
}

/* RFC 9529 Section 3: PLAINTEXT_2 = C_R, ID_CRED_R, MAC_2 with C_R
 * h'27' (int -8) and ID_CRED_R {4: h'32'} sent as the compact kid 0x32. */
static void test_trace2_message_2(void **state)
{
    (void)state;
    struct vec_scope v = vec_load("rfc9529-trace2.json");
    struct keylog_edhoc_row row = trace2_row(v);
    uint8_t m1[128], m2[128], pt[64];
    size_t m1_len = vec_hex(v, "message_1", m1, sizeof m1);
    size_t m2_len = vec_hex(v, "message_2", m2, sizeof m2);
    size_t pt_len = vec_hex(v, "plaintext_2", pt, sizeof pt);
    struct bytes_dec_msg m;
    memset(&m, 0, sizeof m);
    assert_int_equal(bytes_decrypt_message_2(&row, m1, m1_len, m2, m2_len, &m), 0);
    assert_int_equal(m.status, BYTES_DEC_OK);
    assert_int_equal(m.plain_len, pt_len);
    assert_memory_equal(m.plain, pt, pt_len);
    assert_true(m.has_c_r);
    assert_int_equal(m.c_r_len, 1);
    assert_int_equal(m.c_r[0], 0x27);
    static const uint8_t id_cred_r[] = {0xa1, 0x04, 0x41, 0x32};
    assert_int_equal(m.id_cred_len, sizeof id_cred_r);
    assert_memory_equal(m.id_cred, id_cred_r, sizeof id_cred_r);
    const uint8_t *kid;
    size_t kid_len;
    assert_string_equal(bytes_id_cred_kind(m.id_cred, m.id_cred_len, &kid, &kid_len), "kid");
    assert_int_equal(kid_len, 1);
    assert_int_equal(kid[0], 0x32);
    assert_int_equal(m.n_ead, 0);
    bytes_dec_msg_free(&m);

    /* A TH_2 of another handshake: refused before anything is decrypted. */
    struct keylog_edhoc_row other = row;
    other.v[KEYLOG_TH_2][0] ^= 1;
    assert_int_equal(bytes_decrypt_message_2(&other, m1, m1_len, m2, m2_len, &m), -1);
    assert_int_equal(m.status, BYTES_DEC_FAILED);
    assert_int_equal(m.error, BYTES_DEC_ERR_TH_MISMATCH);
    assert_string_equal(m.error_text, "trace2 line 1: its TH_2 is not H(G_Y, H(message_1)) of "
                                      "this message_2 (a row of another handshake)");
    bytes_dec_msg_free(&m);

    /* A wrong PRK_2e: no tag protects CIPHERTEXT_2, the plaintext shows it. */
    other = row;
    other.v[KEYLOG_PRK_2E][0] ^= 1;
    assert_int_equal(bytes_decrypt_message_2(&other, m1, m1_len, m2, m2_len, &m), -1);
    assert_int_equal(m.error, BYTES_DEC_ERR_PLAINTEXT);
    assert_non_null(strstr(m.error_text, "trace2 line 1: PRK_2e gives no valid PLAINTEXT_2"));
    bytes_dec_msg_free(&m);
}

static void write_file(const char *path, const char *text, mode_t mode)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
    assert_int_equal(chmod(path, mode), 0);
}

static void test_keylog_rows(void **state)
{
    (void)state;
    char dir[] = "/tmp/test_bytes_decrypt.XXXXXX";
    assert_non_null(mkdtemp(dir));
    char path[128], why[512];
    snprintf(path, sizeof path, "%s/rows", dir);
    write_file(path,
               "# comment\r\n"
               "\n"
               "01,02,03,04,05,06,07\n"
               "\"2b\",\"32\",\"0a0b\",\"0c\",\"\",\"AES-CCM-16-64-128 (CCM*)\"\r\n",
               0600);
    struct keylog k;
    assert_int_equal(keylog_load(&k, "--keylog", path, why, sizeof why), 0);
    assert_int_equal(k.n_edhoc, 1);
    assert_int_equal(k.n_oscore, 1);
    assert_int_equal(k.edhoc[0].at.line, 3);
    assert_int_equal(k.edhoc[0].len[KEYLOG_TH_4], 1);
    assert_int_equal(k.edhoc[0].v[KEYLOG_TH_4][0], 7);
    uint8_t g_x = 1;
    assert_ptr_equal(keylog_find_edhoc(&k, &g_x, 1), &k.edhoc[0]);
    assert_int_equal(k.oscore[0].at.line, 4);
    assert_int_equal(k.oscore[0].sender_id[0], 0x2b);
    assert_int_equal(k.oscore[0].master_secret_len, 2);
    assert_int_equal(k.oscore[0].id_context_len, 0);
    assert_int_equal(k.oscore[0].aead_alg, 10);
    keylog_free(&k);

    /* Many rows: the table grows. */
    char many[4096] = "";
    for (int i = 0; i < 20; i++)
        snprintf(many + strlen(many), sizeof many - strlen(many), "%02x,02,03,04,05,06,07\n", i);
    write_file(path, many, 0600);
    assert_int_equal(keylog_load(&k, "--keylog", path, why, sizeof why), 0);
    assert_int_equal(k.n_edhoc, 20);
    g_x = 19;
    assert_ptr_equal(keylog_find_edhoc(&k, &g_x, 1), &k.edhoc[19]);
    keylog_free(&k);

    static const struct {
        const char *text, *error;
    } bad[] = {
        {"01,02,03,04,05,06,0\n", "line 1: field 7 (TH_4) is not hex"},
        {"\n01,,03,04,05,06,07\n", "line 2: field 2 (PRK_2e) is empty"},
        {"\"2b\",\"32\",\"\",\"0c\",\"\",\"AES-CCM-16-64-128\"\n",
         "line 1: field 3 (Master Secret) is empty"},
        {"\"2b\",\"32\",\"01\",\"0c\",\"\",\"ChaCha20/Poly1305\"\n",
         "line 1: field 6 (algorithm) is 'ChaCha20/Poly1305'; the table names \"AES-CCM-16-64-128 "
         "(CCM*)\" only"},
        {"\"2b,\"32\"\n", "line 1: a quoted field is not closed"},
        {"01,02\n", "line 1: 2 fields: an edhoc_secrets row has 7"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        write_file(path, bad[i].text, 0600);
        assert_int_equal(keylog_load(&k, "--keylog", path, why, sizeof why), -1);
        char want[600];
        snprintf(want, sizeof want, "--keylog %s %s", path, bad[i].error);
        if (strncmp(why, want, strlen(want)) != 0)
            fail_msg("want '%s', got '%s'", want, why);
        assert_int_equal(k.n_edhoc + k.n_oscore, 0);
    }

    /* A directory with one of the two files. */
    char file[160];
    snprintf(file, sizeof file, "%s/oscore_contexts", dir);
    write_file(file, "\"2b\",\"32\",\"01\",\"\",\"\",\"AES-CCM-16-64-128 (CCM*)\"\n", 0600);
    assert_int_equal(keylog_load(&k, "--keylog", dir, why, sizeof why), 0);
    assert_int_equal(k.n_files, 1);
    assert_int_equal(k.n_oscore, 1);
    keylog_free(&k);
    unlink(file);
    unlink(path);
    assert_int_equal(keylog_load(&k, "--keylog", dir, why, sizeof why), -1);
    assert_non_null(strstr(why, "holds neither edhoc_secrets nor oscore_contexts"));
    rmdir(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_trace2_message_2),
        cmocka_unit_test(test_keylog_rows),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
