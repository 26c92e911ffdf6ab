/* test_driver.c: uopc/driver.h, what every lab driver prints when it stops:
 * a stub's message names the lab once, whatever wrapped it; any other error
 * says the lab, the code, the function and the message; each code by its
 * own name. */
#include "uopc/uopc.h"
#include "uopc/driver.h"
#include "testutil.h"

static void test_driver_failure_of_a_stub_names_the_lab_once(void **state) {
  (void)state;
  uopc_error err;
  char line[UOPC_ERROR_MESSAGE_MAX + 128];
  uopc_error_clear(&err);
  UOPC_FAIL(&err, UOPC_E_NOT_IMPLEMENTED, "lab 23.2: dispatch_on_miss is not implemented yet");
  uopc_driver_failure_text("23.2", &err, line, sizeof line);
  assert_string_equal(line, "lab 23.2: dispatch_on_miss is not implemented yet");
  /* Wrapped by the caller, and an earlier lab's stub: the stub's own words. */
  UOPC_FAIL(&err, UOPC_E_NOT_IMPLEMENTED, "kernel graph to IR: lab 23.1: sym_expr_interval is not implemented yet");
  uopc_driver_failure_text("23.2", &err, line, sizeof line);
  assert_string_equal(line, "lab 23.1: sym_expr_interval is not implemented yet");
}

static void test_driver_failure_of_an_error_says_lab_code_and_where(void **state) {
  (void)state;
  uopc_error err;
  char line[UOPC_ERROR_MESSAGE_MAX + 128];
  uopc_error_clear(&err);
  UOPC_FAIL(&err, UOPC_E_BOUNDS, "dim 'n' = 65 outside [1, 64]");
  uopc_driver_failure_text("23.1", &err, line, sizeof line);
  char want[256];
  snprintf(want, sizeof want, "lab 23.1: UOPC_E_BOUNDS in %s: dim 'n' = 65 outside [1, 64]", err.where);
  assert_string_equal(line, want);
  assert_string_equal(err.where, __func__);
  /* cleared, the error says nothing, where included */
  uopc_error_clear(&err);
  assert_int_equal(err.code, UOPC_OK);
  assert_string_equal(err.where, "");
  assert_string_equal(err.message, "");
}

/* Every code has its own name, spelled as in error.h; a code outside the
 * enum is "UOPC_E_?". */
static void test_error_names_spell_every_code(void **state) {
  (void)state;
  static const char *const names[UOPC_E_COUNT] = {
    [UOPC_OK] = "UOPC_OK", [UOPC_E_INVALID] = "UOPC_E_INVALID", [UOPC_E_BOUNDS] = "UOPC_E_BOUNDS",
    [UOPC_E_DTYPE] = "UOPC_E_DTYPE", [UOPC_E_LAYOUT] = "UOPC_E_LAYOUT", [UOPC_E_OVERFLOW] = "UOPC_E_OVERFLOW",
    [UOPC_E_ALIAS] = "UOPC_E_ALIAS", [UOPC_E_UNBOUND] = "UOPC_E_UNBOUND", [UOPC_E_NOMEM] = "UOPC_E_NOMEM",
    [UOPC_E_IO] = "UOPC_E_IO", [UOPC_E_UNSAFE_CACHE] = "UOPC_E_UNSAFE_CACHE", [UOPC_E_COMPILE] = "UOPC_E_COMPILE",
    [UOPC_E_LOAD] = "UOPC_E_LOAD", [UOPC_E_NO_CUDA] = "UOPC_E_NO_CUDA", [UOPC_E_CUDA] = "UOPC_E_CUDA",
    [UOPC_E_GUARD] = "UOPC_E_GUARD", [UOPC_E_LIMIT] = "UOPC_E_LIMIT", [UOPC_E_UNSUPPORTED] = "UOPC_E_UNSUPPORTED",
    [UOPC_E_NOT_IMPLEMENTED] = "UOPC_E_NOT_IMPLEMENTED",
  };
  for (int code = 0; code < UOPC_E_COUNT; code++) {
    assert_non_null(names[code]);   /* the table above names every code */
    assert_string_equal(uopc_error_name(code), names[code]);
  }
  assert_string_equal(uopc_error_name(-1), "UOPC_E_?");
  assert_string_equal(uopc_error_name(UOPC_E_COUNT), "UOPC_E_?");
}

/* What a failure makes a driver exit with: 3 for a stub, 2 when the machine failed the run (compiler,
 * loader, files, memory, CUDA), 1 when the lab's own check did. */
static void test_error_exit_status_sorts_every_code(void **state) {
  (void)state;
  static const int runtime[] = {UOPC_E_COMPILE, UOPC_E_LOAD, UOPC_E_IO, UOPC_E_UNSAFE_CACHE,
                                UOPC_E_NOMEM, UOPC_E_NO_CUDA, UOPC_E_CUDA};
  for (int code = 0; code < UOPC_E_COUNT; code++) {
    int want = code == UOPC_E_NOT_IMPLEMENTED ? UOPC_EXIT_NOT_IMPLEMENTED : UOPC_EXIT_CHECK;
    for (size_t i = 0; i < sizeof runtime / sizeof *runtime; i++)
      if (code == runtime[i]) want = UOPC_EXIT_RUNTIME;
    if (uopc_error_exit_status(code) != want)
      fail_msg("%s: exit status %d, expected %d", uopc_error_name(code), uopc_error_exit_status(code), want);
  }
}

/* A caller that wants no message passes NULL: failing still returns the code, and clearing does nothing. */
static void test_error_fail_and_clear_take_a_null_error(void **state) {
  (void)state;
  assert_int_equal(UOPC_FAIL(NULL, UOPC_E_BOUNDS, "n = %d", 65), UOPC_E_BOUNDS);
  uopc_error_clear(NULL);
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_driver_failure_of_a_stub_names_the_lab_once),
    cmocka_unit_test(test_driver_failure_of_an_error_says_lab_code_and_where),
    cmocka_unit_test(test_error_names_spell_every_code),
    cmocka_unit_test(test_error_exit_status_sorts_every_code),
    cmocka_unit_test(test_error_fail_and_clear_take_a_null_error),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
