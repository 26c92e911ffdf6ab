/* test_driver.c: uopc/driver.h, what every lab driver prints when it stops:
 * a stub's message names the lab once, whatever wrapped it; any other error
 * says the lab, the code, the function and the message. */
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
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_driver_failure_of_a_stub_names_the_lab_once),
    cmocka_unit_test(test_driver_failure_of_an_error_says_lab_code_and_where),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
