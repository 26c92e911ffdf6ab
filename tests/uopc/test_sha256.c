/* test_sha256.c: the runtime's SHA-256 (uopc/src/sha256.c, an internal
 * module), against FIPS 180-4's examples and against Python's hashlib for the
 * labelled-field encoding that cache keys rely on. */
#define TESTUTIL_FAILING_MALLOC   /* NOMEM paths on demand: fail_next_calloc */
#include "testutil.h"
#include "../../uopc/src/internal.h"

static void hash_text_file(const char *text, size_t n, char hex[65]) {
  char path[4200];
  snprintf(path, sizeof path, "%s/input", testutil_cache_dir);
  FILE *f = fopen(path, "wb");
  assert_non_null(f);
  assert_int_equal(fwrite(text, 1, n, f), n);
  assert_int_equal(fclose(f), 0);
  uopc_error err = {0};
  assert_uopc_ok(uopc_hash_file(path, hex, &err), err);
}

static void test_sha256_file_matches_fips_examples(void **state) {
  (void)state;
  char hex[65];
  hash_text_file("abc", 3, hex);
  assert_string_equal(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  hash_text_file("", 0, hex);
  assert_string_equal(hex, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  hash_text_file("a", 1, hex);   /* one read of one byte: still data, not the end */
  assert_string_equal(hex, "ca978112ca1bbdcafac231b39a23dc4da786eff8147c4e72b9807785afee48bb");
  /* two blocks: the 448-bit message of FIPS 180-4's examples */
  const char *two = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
  hash_text_file(two, strlen(two), hex);
  assert_string_equal(hex, "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
}

/* Each field is its label, a NUL, its length as 8 little-endian bytes and its
 * bytes: hashlib.sha256(b"kind\0" + pack("<Q", 1) + b"c" + b"source\0" + ...). */
static void test_sha256_fields_are_labelled_and_length_prefixed(void **state) {
  (void)state;
  uopc_hash *h;
  uopc_error err = {0};
  char hex[65];
  assert_uopc_ok(uopc_hash_new(&h, &err), err);
  uopc_hash_str(h, "kind", "c");
  uopc_hash_str(h, "source", "int x;");
  uopc_hash_finish(h, hex);
  assert_string_equal(hex, "87f3c110c3b006ac970637ff13dce9823eb38d9001482b68bde089b9d5ddc522");
}

/* A NULL string is hashed as "": the same field, length 0, so an unset option and an empty one
 * give the same key. */
static void test_sha256_null_string_hashes_as_the_empty_string(void **state) {
  (void)state;
  uopc_hash *h;
  uopc_error err = {0};
  char of_null[65], of_empty[65];
  assert_uopc_ok(uopc_hash_new(&h, &err), err);
  uopc_hash_str(h, "flags", NULL);
  uopc_hash_finish(h, of_null);
  assert_uopc_ok(uopc_hash_new(&h, &err), err);
  uopc_hash_str(h, "flags", "");
  uopc_hash_finish(h, of_empty);
  assert_string_equal(of_null, of_empty);
}

static void test_sha256_file_reports_a_missing_file(void **state) {
  (void)state;
  char hex[65];
  uopc_error err = {0};
  assert_uopc_code(uopc_hash_file("/nonexistent/uopc-input", hex, &err), UOPC_E_IO, err);
  assert_contains(err.message, "/nonexistent/uopc-input");
}

/* A directory opens but cannot be read: an error naming it, not the hash of nothing. */
static void test_sha256_file_reports_a_read_error(void **state) {
  (void)state;
  char hex[65] = "unchanged", want[4200];
  uopc_error err = {0};
  assert_uopc_code(uopc_hash_file(testutil_cache_dir, hex, &err), UOPC_E_IO, err);
  snprintf(want, sizeof want, "cannot read '%s': Is a directory", testutil_cache_dir);
  assert_string_equal(err.message, want);
  assert_string_equal(hex, "unchanged");
}

/* A file larger than the 64 KiB read buffer is hashed whole, read after read: FIPS 180-4's
 * one million 'a's (about 15 buffers, the last one partly filled). */
static void test_sha256_file_hashes_a_file_of_many_reads(void **state) {
  (void)state;
  enum { N = 1000000 };
  char *text = malloc(N), hex[65];
  assert_non_null(text);
  memset(text, 'a', N);
  hash_text_file(text, N, hex);
  free(text);
  assert_string_equal(hex, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

/* With stdin closed, the file opens as descriptor 0, a valid one: it is hashed. */
static void test_sha256_file_reads_through_descriptor_0(void **state) {
  (void)state;
  char path[4200], hex[65] = "unchanged";
  snprintf(path, sizeof path, "%s/input", testutil_cache_dir);
  FILE *f = fopen(path, "wb");
  assert_non_null(f);
  assert_int_equal(fputs("abc", f), 1);
  assert_int_equal(fclose(f), 0);
  uopc_error err = {0};
  int saved = dup(0);
  assert_true(saved > 0);
  close(0);
  int rc = uopc_hash_file(path, hex, &err);
  assert_int_equal(dup2(saved, 0), 0);   /* stdin back before any assertion can stop the test */
  close(saved);
  assert_uopc_ok(rc, err);
  assert_string_equal(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

/* No memory for the context: out of memory, said as such, and nothing handed out. */
static void test_sha256_new_without_memory_is_nomem(void **state) {
  (void)state;
#ifdef __SANITIZE_ADDRESS__
  testutil_skip_under_asan("glibc's calloc, made to fail");
#else
  testutil_skip_unless_allocation_fails();
  uopc_hash *h = (uopc_hash *)&h;
  uopc_error err = {0};
  fail_next_calloc = 1;
  int rc = uopc_hash_new(&h, &err);
  fail_next_calloc = 0;
  assert_uopc_code(rc, UOPC_E_NOMEM, err);
  assert_string_equal(err.message, "cannot start a SHA-256 context");
  assert_ptr_equal(h, (uopc_hash *)&h);
#endif
}

/* No memory for the context of a file's hash: out of memory, the file's descriptor closed, and
 * hex left as it was. */
static void test_sha256_file_without_memory_is_nomem_and_closes_the_file(void **state) {
  (void)state;
#ifdef __SANITIZE_ADDRESS__
  testutil_skip_under_asan("glibc's calloc, made to fail");
#else
  testutil_skip_unless_allocation_fails();
  char path[4200], hex[65];
  snprintf(path, sizeof path, "%s/input", testutil_cache_dir);
  FILE *f = fopen(path, "wb");
  assert_non_null(f);
  assert_int_equal(fclose(f), 0);
  memset(hex, 'z', sizeof hex);
  int fds = testutil_open_fds();
  uopc_error err = {0};
  fail_next_calloc = 1;
  int rc = uopc_hash_file(path, hex, &err);
  fail_next_calloc = 0;
  assert_uopc_code(rc, UOPC_E_NOMEM, err);
  assert_string_equal(err.message, "cannot start a SHA-256 context");
  assert_int_equal(testutil_open_fds(), fds);
  assert_int_equal(hex[0], 'z');
#endif
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_sha256_file_matches_fips_examples),
    cmocka_unit_test(test_sha256_fields_are_labelled_and_length_prefixed),
    cmocka_unit_test(test_sha256_null_string_hashes_as_the_empty_string),
    cmocka_unit_test(test_sha256_file_reports_a_missing_file),
    cmocka_unit_test(test_sha256_file_reports_a_read_error),
    cmocka_unit_test(test_sha256_file_hashes_a_file_of_many_reads),
    cmocka_unit_test(test_sha256_file_reads_through_descriptor_0),
    cmocka_unit_test(test_sha256_new_without_memory_is_nomem),
    cmocka_unit_test(test_sha256_file_without_memory_is_nomem_and_closes_the_file),
  };
  return cmocka_run_group_tests(tests, testutil_fresh_cache, testutil_remove_cache);
}
