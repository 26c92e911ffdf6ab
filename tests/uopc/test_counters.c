/* test_counters.c: the counter registry. Each thread counts into cells of
 * its own and a read sums them, so these tests count from many threads at
 * once and compare exact totals, also after threads have exited, across the
 * 256-counter blocks of a thread's table, and through a reset. */
#include <errno.h>
#include <limits.h>
#include <malloc.h>
#include <pthread.h>
#include <semaphore.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#define TESTUTIL_FAILING_MALLOC   /* no memory for a counter on demand: fail_next_calloc */
#include "testutil.h"
#include "uopc/uopc.h"

enum { THREADS = 8, BUMPS = 200000 };

typedef struct work { uopc_counter_id id; int64_t delta; int bumps; } work;

static void *count(void *arg) {
  const work *w = arg;
  for (int k = 0; k < w->bumps; k++) uopc_counter_bump(w->id, w->delta);
  return NULL;
}

#ifndef __SANITIZE_ADDRESS__
/* Counts w[0], w[1] and w[2]'s bumps. */
static void *count3(void *arg) {
  for (int k = 0; k < 3; k++) count((work *)arg + k);
  return NULL;
}
#endif

#ifndef __SANITIZE_ADDRESS__
/* realloc made to fail as testutil.h's malloc and calloc are: the registry grows by it. */
extern void *__libc_realloc(void *p, size_t n);
static int fail_next_realloc;
void *realloc(void *p, size_t n) { return testutil_fails_now(&fail_next_realloc) ? NULL : __libc_realloc(p, n); }
#endif

static int fresh(void **state) {
  (void)state;
  uopc_counters_reset();
  return 0;
}

static void test_counters_sum_eight_threads_exactly(void **state) {
  (void)state;
  uopc_counter_id id = uopc_counter_slot("test threads");
  assert_true(id >= 0);
  pthread_t t[THREADS];
  work w = {id, 3, BUMPS};
  for (int k = 0; k < THREADS; k++) assert_int_equal(pthread_create(&t[k], NULL, count, &w), 0);
  int64_t seen = 0;
  for (int k = 0; k < 50; k++) {     /* reads while they count: never past the total, never backwards */
    int64_t now = uopc_counter_get("test threads");
    assert_true(now >= seen && now <= (int64_t)THREADS * BUMPS * 3);
    seen = now;
  }
  for (int k = 0; k < THREADS; k++) pthread_join(t[k], NULL);
  assert_int_equal(uopc_counter_get("test threads"), (int64_t)THREADS * BUMPS * 3);
  uopc_counter_bump(id, 1);          /* and this thread's own cells */
  assert_int_equal(uopc_counter_get("test threads"), (int64_t)THREADS * BUMPS * 3 + 1);
}

static void test_counters_keep_what_exited_threads_counted_until_a_reset(void **state) {
  (void)state;
  uopc_counter_id id = uopc_counter_slot("test exited");
  work w = {id, 5, 1};
  for (int round = 1; round <= 3; round++) {
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, count, &w), 0);
    pthread_join(t, NULL);
    assert_int_equal(uopc_counter_get("test exited"), 5 * round);
  }
  uopc_counters_reset();
  assert_int_equal(uopc_counter_get("test exited"), 0);
  uopc_counter_add("test exited", 2);
  assert_int_equal(uopc_counter_get("test exited"), 2);
}

static void test_counters_ids_are_stable_and_a_long_name_counts_nothing(void **state) {
  (void)state;
  uopc_counter_id a = uopc_counter_slot("test stable"), b = uopc_counter_slot("test stable");
  assert_true(a >= 0);
  assert_int_equal(a, b);
  char name[UOPC_COUNTER_NAME_MAX + 1];
  memset(name, 'x', UOPC_COUNTER_NAME_MAX);
  name[UOPC_COUNTER_NAME_MAX] = '\0';
  assert_int_equal(uopc_counter_slot(name), UOPC_COUNTER_NONE);
  assert_int_equal(uopc_counter_slot(NULL), UOPC_COUNTER_NONE);
  uopc_counter_bump(UOPC_COUNTER_NONE, 7);   /* ignored, never a crash */
  uopc_counter_add(name, 7);
  assert_int_equal(uopc_counter_get(name), 0);
  uopc_counter_bump(a, 4);
  uopc_counter_add("test stable", 6);
  assert_int_equal(uopc_counter_get("test stable"), 10);
}

/* n counters named "<prefix> 0" ... "<prefix> n-1", their ids in ids. */
static void make_counters(const char *prefix, uopc_counter_id *ids, int n) {
  char name[32];
  for (int k = 0; k < n; k++) {
    snprintf(name, sizeof name, "%s %d", prefix, k);
    ids[k] = uopc_counter_slot(name);
    assert_true(ids[k] >= 0);
  }
}

/* The file at path, NUL-terminated, in text (at most size - 1 bytes of it). */
static void read_text(const char *path, char *text, size_t size) {
  FILE *f = fopen(path, "r");
  assert_non_null(f);
  size_t n = fread(text, 1, size - 1, f);
  fclose(f);
  text[n] = '\0';
}

/* What uopc_counters_print writes, in a string the caller frees. */
static char *printed(void) {
  char *text = NULL;
  size_t size = 0;
  FILE *f = open_memstream(&text, &size);
  assert_non_null(f);
  uopc_counters_print(f);
  fclose(f);
  return text;
}

/* 600 counters span three blocks of every thread's table; each is bumped by
 * two threads and read back exactly, and printed in first-use order. */
static void test_counters_past_one_block_of_cells(void **state) {
  (void)state;
  enum { N = 600 };
  uopc_counter_id ids[N];
  char name[32];
  make_counters("test block", ids, N);
  for (int k = 0; k < N; k++) uopc_counter_bump(ids[k], k);
  pthread_t t;
  work w = {ids[N - 1], 1, 1000};
  assert_int_equal(pthread_create(&t, NULL, count, &w), 0);
  pthread_join(t, NULL);
  for (int k = 0; k < N; k++) {
    snprintf(name, sizeof name, "test block %d", k);
    assert_int_equal(uopc_counter_get(name), k + (k == N - 1 ? 1000 : 0));
  }
  char *text = printed();
  char *at5 = strstr(text, "test block 5=5\n"), *at599 = strstr(text, "test block 599=1599\n");
  assert_non_null(at5);
  assert_non_null(at599);
  assert_true(at5 < at599);
  free(text);
}

/* 4400 counters reach block 17 of a thread's table (ids past 4352, 17 * 256 + 0), far below the
 * limit of UOPC_COUNTER_CHUNK * UOPC_COUNTER_CHUNKS: the last one made counts like the first. */
static void test_counters_count_in_a_block_far_past_the_first(void **state) {
  (void)state;
  enum { N = 4400 };
  static uopc_counter_id ids[N];
  make_counters("test far", ids, N);
  assert_true(ids[N - 1] > UOPC_COUNTER_CHUNK + UOPC_COUNTER_CHUNKS);
  uopc_counter_bump(ids[N - 1], 7);   /* its block's first count in this thread */
  uopc_counter_bump(ids[N - 1], 2);
  uopc_counter_bump(ids[0], 1);
  assert_int_equal(uopc_counter_get("test far 4399"), 9);
  assert_int_equal(uopc_counter_get("test far 0"), 1);
}

/* A reset zeroes every counter, the first one made (id 0, the runtime's first) included, in the
 * cells of this thread and in what exited threads left. */
static void test_counters_reset_zeroes_the_first_counter_too(void **state) {
  (void)state;
  uopc_counter_id first = uopc_counter_slot(UOPC_C_PROGRAMS_CONSTRUCTED);
  assert_int_equal(first, 0);
  work w = {first, 4, 1};
  pthread_t t;
  assert_int_equal(pthread_create(&t, NULL, count, &w), 0);
  pthread_join(t, NULL);
  uopc_counter_bump(first, 3);
  assert_int_equal(uopc_counter_get(UOPC_C_PROGRAMS_CONSTRUCTED), 7);
  uopc_counters_reset();
  assert_int_equal(uopc_counter_get(UOPC_C_PROGRAMS_CONSTRUCTED), 0);
  /* and the print starts with it */
  char *text = printed();
  assert_true(strncmp(text, UOPC_C_PROGRAMS_CONSTRUCTED "=0\n", strlen(UOPC_C_PROGRAMS_CONSTRUCTED "=0\n")) == 0);
  free(text);
}

/* A thread's exit frees its table and every block of cells it used: once a first thread has
 * filled malloc's and the thread library's caches, a second one that counts in three blocks
 * leaves the heap's bytes in use exactly as they were. */
static void test_counters_exited_thread_keeps_no_memory(void **state) {
  (void)state;
#ifdef __SANITIZE_ADDRESS__
  /* its leak check at exit catches a block left behind instead */
  testutil_skip_under_asan("glibc's mallinfo2 totals");
#else
  enum { N = 600 };
  uopc_counter_id ids[N];
  make_counters("test freed", ids, N);
  work w[3] = {{ids[0], 1, 1}, {ids[300], 1, 1}, {ids[N - 1], 1, 1}};
  size_t before = 0;
  for (int round = 0; round < 2; round++) {
    if (round == 1) before = mallinfo2().uordblks;
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, count3, w), 0);
    pthread_join(t, NULL);
  }
  assert_int_equal(mallinfo2().uordblks, before);
  assert_int_equal(uopc_counter_get("test freed 599"), 2);
#endif
}

/* A name goes into the JSON file escaped: a quote, a backslash, and a control character as \u00XX. */
static void test_counters_json_escapes_quotes_backslashes_and_control_characters(void **state) {
  (void)state;
  uopc_counter_add("test \"json\"\t\\", 3);
  char path[4096 + 16];
  snprintf(path, sizeof path, "%s/counters.json", testutil_cache_dir);
  uopc_error err;
  uopc_error_clear(&err);
  assert_uopc_ok(uopc_counters_write_json(path, &err), err);
  char text[65536];
  read_text(path, text, sizeof text);
  assert_contains(text, ",\n  \"test \\\"json\\\"\\u0009\\\\\": 3");
}

/* A path too long for the temporary file beside it is refused, and the message says the limit
 * before the path: a path that long fills the message, whose end is cut. */
static void test_counters_json_path_too_long_names_the_limit(void **state) {
  (void)state;
  char path[PATH_MAX + 1], want[64];
  memset(path, 'a', PATH_MAX);
  path[0] = '/';
  path[PATH_MAX] = '\0';
  uopc_error err;
  uopc_error_clear(&err);
  assert_uopc_code(uopc_counters_write_json(path, &err), UOPC_E_INVALID, err);
  snprintf(want, sizeof want, "counters path is longer than %d bytes: '/aaa", PATH_MAX - 16);
  if (strncmp(err.message, want, strlen(want)) != 0) fail_msg("message '%.100s...', expected '%s...'", err.message, want);
  assert_int_equal(strlen(err.message), UOPC_ERROR_MESSAGE_MAX - 1);
}

/* A stream whose first write waits at a gate: uopc_counters_print holds the registry's lock
 * while it writes, so a reader of a counter must wait for the gate too. */
typedef struct gate { sem_t inside, open, read; int held; int64_t value; } gate;

static ssize_t write_after_the_gate(void *cookie, const char *buf, size_t n) {
  gate *g = cookie;
  (void)buf;
  if (!g->held) {
    g->held = 1;
    sem_post(&g->inside);
    while (sem_wait(&g->open) != 0) {}
  }
  return (ssize_t)n;
}

static void *print_through_the_gate(void *arg) {
  FILE *f = fopencookie(arg, "w", (cookie_io_functions_t){.write = write_after_the_gate});
  setvbuf(f, NULL, _IONBF, 0);
  uopc_counters_print(f);
  fclose(f);
  return NULL;
}

static void *read_gated(void *arg) {
  gate *g = arg;
  g->value = uopc_counter_get("test gated");
  sem_post(&g->read);
  return NULL;
}

/* Runs body in a thread while the printer holds the registry's lock for a quarter of a second
 * (a body that does not wait for the lock is done by then), then opens the gate: 1 when body
 * finished while the lock was held. */
static int finished_under_the_lock(void *(*body)(void *), gate *g) {
  sem_init(&g->inside, 0, 0);
  sem_init(&g->open, 0, 0);
  sem_init(&g->read, 0, 0);
  pthread_t printer, other;
  assert_int_equal(pthread_create(&printer, NULL, print_through_the_gate, g), 0);
  while (sem_wait(&g->inside) != 0) {}   /* the printer holds the lock from here until the gate opens */
  assert_int_equal(pthread_create(&other, NULL, body, g), 0);
  struct timespec until;
  clock_gettime(CLOCK_REALTIME, &until);
  until.tv_nsec += 250 * 1000000L;
  if (until.tv_nsec >= 1000000000L) until.tv_sec++, until.tv_nsec -= 1000000000L;
  int early;
  while ((early = sem_timedwait(&g->read, &until)) != 0 && errno == EINTR) {}
  sem_post(&g->open);
  pthread_join(printer, NULL);
  pthread_join(other, NULL);
  sem_destroy(&g->inside);
  sem_destroy(&g->open);
  sem_destroy(&g->read);
  return early == 0;
}

static void test_counters_get_waits_for_the_registry_lock(void **state) {
  (void)state;
  uopc_counter_add("test gated", 4);
  gate g = {.held = 0};
  assert_false(finished_under_the_lock(read_gated, &g));
  assert_int_equal(g.value, 4);
}

static void *slot_gated(void *arg) {
  gate *g = arg;
  g->value = uopc_counter_slot("test gated slot");
  sem_post(&g->read);
  return NULL;
}

/* uopc_counter_slot takes the registry's lock too: while the printer holds it, a new counter's
 * slot waits (a registry grown under a reader could move by_id away from it). */
static void test_counters_slot_waits_for_the_registry_lock(void **state) {
  (void)state;
  gate g = {.held = 0};
  assert_false(finished_under_the_lock(slot_gated, &g));
  assert_true(g.value >= 0);
  assert_int_equal(uopc_counter_slot("test gated slot"), g.value);
}

/* No memory for a new counter: its slot is UOPC_COUNTER_NONE exactly (counters.h), and counting
 * into it does nothing; the name is made once memory is back. */
static void test_counters_slot_without_memory_is_none(void **state) {
  (void)state;
#ifdef __SANITIZE_ADDRESS__
  testutil_skip_under_asan("glibc's calloc, made to fail");
#else
  testutil_skip_unless_allocation_fails();
  uopc_counter_slot("test before no memory");   /* the runtime's counters exist already */
  fail_next_calloc = 1;
  uopc_counter_id id = uopc_counter_slot("test no memory");
  fail_next_calloc = 0;
  assert_int_equal(id, UOPC_COUNTER_NONE);
  uopc_counter_bump(id, 5);
  assert_int_equal(uopc_counter_get("test no memory"), 0);
  assert_true(uopc_counter_slot("test no memory") >= 0);
#endif
}

static int fresh_with_dir(void **state) { return fresh(state) || testutil_fresh_cache(state); }

/* uopc_fail copies where as text: a '%' in it is kept, not read as a format (the suite's one
 * check of error.c's filling; the messages it formats are checked everywhere). */
static void test_error_where_with_a_percent_sign_is_copied_as_written(void **state) {
  (void)state;
  uopc_error err;
  uopc_error_clear(&err);
  assert_int_equal(uopc_fail(&err, UOPC_E_LIMIT, "at 100%% of %s", "%d cells, limit %d", 7, 8), UOPC_E_LIMIT);
  assert_int_equal(err.code, UOPC_E_LIMIT);
  assert_string_equal(err.where, "at 100%% of %s");
  assert_string_equal(err.message, "7 cells, limit 8");
  assert_int_equal(uopc_fail(&err, UOPC_E_IO, NULL, "no where"), UOPC_E_IO);
  assert_string_equal(err.where, "");
}

/* Codes outside UOPC_E_OK .. UOPC_E_COUNT - 1 name no error: below, at and past the count. */
static void test_error_name_of_a_code_out_of_range_is_a_question_mark(void **state) {
  (void)state;
  assert_string_equal(uopc_error_name(-1), "UOPC_E_?");
  assert_string_equal(uopc_error_name(UOPC_E_COUNT), "UOPC_E_?");
  assert_string_equal(uopc_error_name(UOPC_E_COUNT + 1), "UOPC_E_?");
  assert_string_equal(uopc_error_name(INT_MAX), "UOPC_E_?");
  assert_string_equal(uopc_error_name(UOPC_E_COUNT - 1), "UOPC_E_NOT_IMPLEMENTED");
}

/* An id outside the table, handed to the slow path itself (the inline bump stops a negative one
 * first), counts nothing and touches no cell. */
static void test_counters_bump_slow_of_an_id_outside_the_table_counts_nothing(void **state) {
  (void)state;
  uopc_counter_id id = uopc_counter_slot("test outside");
  uopc_counter_bump(id, 1);
  uopc_counter_bump_slow(-1, 5);
  uopc_counter_bump_slow(UOPC_COUNTER_CHUNK * UOPC_COUNTER_CHUNKS, 5);
  assert_int_equal(uopc_counter_get("test outside"), 1);
  uopc_counter_bump_slow(UOPC_COUNTER_CHUNK * UOPC_COUNTER_CHUNKS - 1, 0);   /* the last id is inside */
}

/* The slow path called with the cell's block already there adds to it rather than replacing it. */
static void test_counters_bump_slow_keeps_a_block_already_there(void **state) {
  (void)state;
  uopc_counter_id id = uopc_counter_slot("test slow twice");
  uopc_counter_bump_slow(id, 2);
  uopc_counter_bump_slow(id, 3);
  assert_int_equal(uopc_counter_get("test slow twice"), 5);
}

/* No name is no counter: 0. */
static void test_counters_get_of_null_is_0(void **state) {
  (void)state;
  uopc_counter_add("test get", 4);
  assert_int_equal(uopc_counter_get(NULL), 0);
  assert_int_equal(uopc_counter_get("test get"), 4);
}

#ifndef __SANITIZE_ADDRESS__
typedef struct lost_bump { uopc_counter_id id; int fail_at; } lost_bump;

/* In a thread with no table yet: the fail_at-th calloc from its first bump fails (1: the table,
 * 2: the cells' block); that bump is lost, the next one counts. */
static void *bump_with_a_calloc_failing(void *arg) {
  const lost_bump *b = arg;
  fail_next_calloc = b->fail_at;
  uopc_counter_bump(b->id, 5);
  fail_next_calloc = 0;
  uopc_counter_bump(b->id, 7);
  return NULL;
}

#endif

/* No memory for a new thread's table, or for its block of cells: that count is lost, never
 * fatal, and the thread's next count is kept. */
static void test_counters_without_memory_for_a_threads_cells_lose_one_count(void **state) {
  (void)state;
#ifdef __SANITIZE_ADDRESS__
  testutil_skip_under_asan("glibc's calloc, made to fail");
#else
  testutil_skip_unless_allocation_fails();
  const char *names[] = {"test no table", "test no block"};
  for (int k = 0; k < 2; k++) {
    lost_bump b = {uopc_counter_slot(names[k]), k + 1};
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, bump_with_a_calloc_failing, &b), 0);
    pthread_join(t, NULL);
    assert_int_equal(uopc_counter_get(names[k]), 7);
  }
#endif
}

/* The temporary file cannot be flushed (it is a link to /dev/full: a full disk, for root too):
 * fclose's error is reported and the link removed, not renamed into place. */
static void test_counters_json_that_cannot_be_flushed_is_reported_and_removed(void **state) {
  (void)state;
  if (access("/dev/full", W_OK) != 0) {
    print_message("  skipped: needs /dev/full\n");
    skip();
  }
  char path[4200], tmp[4300], want[8600];
  snprintf(path, sizeof path, "%s/counters.json", testutil_cache_dir);
  snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid());
  assert_int_equal(symlink("/dev/full", tmp), 0);
  uopc_error err;
  uopc_error_clear(&err);
  assert_uopc_code(uopc_counters_write_json(path, &err), UOPC_E_IO, err);
  snprintf(want, sizeof want, "cannot write counters to '%s': No space left on device", path);
  assert_string_equal(err.message, want);
  struct stat st;
  assert_int_equal(lstat(tmp, &st), -1);
  assert_int_equal(lstat(path, &st), -1);
}

/* No memory to grow the registry past its capacity (64, doubling): that name gets no counter, and
 * the same name registers once memory is back. The registry holds as many counters as
 * uopc_counters_print prints lines. */
static void test_counters_slot_without_memory_to_grow_the_registry_is_none(void **state) {
  (void)state;
#ifdef __SANITIZE_ADDRESS__
  testutil_skip_under_asan("glibc's realloc, made to fail");
#else
  testutil_skip_unless_allocation_fails();
  char *text = printed();
  int held = 0;
  for (const char *p = text; *p; p++) held += *p == '\n';
  free(text);
  char name[64];
  int k = 0;
  uopc_counter_id id = 0;
  fail_next_realloc = 1;
  while (k < 5000 && id != UOPC_COUNTER_NONE) {
    snprintf(name, sizeof name, "test grow %d", k++);
    id = uopc_counter_slot(name);
  }
  fail_next_realloc = 0;
  assert_int_equal(id, UOPC_COUNTER_NONE);
  int at = held + k - 1, cap = 64;   /* the count held when the failed name came */
  while (cap < at) cap *= 2;
  assert_int_equal(at, cap);
  assert_int_equal(uopc_counter_get(name), 0);
  assert_int_equal(uopc_counter_slot(name), at);
  uopc_counter_add(name, 3);
  assert_int_equal(uopc_counter_get(name), 3);
#endif
}

/* Run as "test_counters --write-json-first PATH": a fresh process whose first call into the
 * registry writes the JSON file (the runtime's counters are added on first use, once a process). */
static int write_json_first(const char *path) {
  uopc_error err;
  uopc_error_clear(&err);
  return uopc_counters_write_json(path, &err) == UOPC_OK ? 0 : 1;
}

/* The runtime's counters are in the file, at zero and in their order, even when the write is
 * the process's first use of the registry: nothing else has registered them. In a new process
 * (exec of this test), since this one's registry is long in use. */
static void test_counters_json_of_a_fresh_process_holds_the_runtime_counters(void **state) {
  (void)state;
  char path[4096 + 16];
  snprintf(path, sizeof path, "%s/first.json", testutil_cache_dir);
  fflush(NULL);
  pid_t pid = fork();
  if (pid == 0) {
    unsetenv("UOPC_COUNTERS_JSON");   /* else the exit would write the file over */
    unsetenv("UOPC_DEBUG");
    execl("/proc/self/exe", "test_counters", "--write-json-first", path, (char *)NULL);
    _exit(127);
  }
  int status;
  assert_int_equal(waitpid(pid, &status, 0), pid);
  assert_true(WIFEXITED(status));
  assert_int_equal(WEXITSTATUS(status), 0);
  char text[4096];
  read_text(path, text, sizeof text);
  assert_string_equal(text, "{\n"
                            "  \"programs constructed\": 0,\n"
                            "  \"compiler invocations\": 0,\n"
                            "  \"disk cache hits\": 0,\n"
                            "  \"disk cache misses\": 0,\n"
                            "  \"corrupted entries rebuilt\": 0\n"
                            "}\n");
}

int main(int argc, char **argv) {
  if (argc == 3 && strcmp(argv[1], "--write-json-first") == 0) return write_json_first(argv[2]);
  const struct CMUnitTest tests[] = {
    cmocka_unit_test_setup(test_counters_sum_eight_threads_exactly, fresh),
    cmocka_unit_test_setup(test_counters_keep_what_exited_threads_counted_until_a_reset, fresh),
    cmocka_unit_test_setup(test_counters_ids_are_stable_and_a_long_name_counts_nothing, fresh),
    cmocka_unit_test_setup(test_counters_past_one_block_of_cells, fresh),
    cmocka_unit_test_setup(test_counters_reset_zeroes_the_first_counter_too, fresh),
    cmocka_unit_test_setup(test_counters_exited_thread_keeps_no_memory, fresh),
    cmocka_unit_test_setup_teardown(test_counters_json_escapes_quotes_backslashes_and_control_characters, fresh_with_dir,
                                    testutil_remove_cache),
    cmocka_unit_test_setup(test_counters_get_waits_for_the_registry_lock, fresh),
    cmocka_unit_test_setup(test_counters_slot_waits_for_the_registry_lock, fresh),
    cmocka_unit_test_setup(test_counters_slot_without_memory_is_none, fresh),
    cmocka_unit_test(test_counters_json_path_too_long_names_the_limit),
    cmocka_unit_test(test_error_where_with_a_percent_sign_is_copied_as_written),
    cmocka_unit_test(test_error_name_of_a_code_out_of_range_is_a_question_mark),
    cmocka_unit_test_setup(test_counters_bump_slow_of_an_id_outside_the_table_counts_nothing, fresh),
    cmocka_unit_test_setup(test_counters_bump_slow_keeps_a_block_already_there, fresh),
    cmocka_unit_test_setup(test_counters_get_of_null_is_0, fresh),
    cmocka_unit_test_setup(test_counters_without_memory_for_a_threads_cells_lose_one_count, fresh),
    cmocka_unit_test_setup_teardown(test_counters_json_that_cannot_be_flushed_is_reported_and_removed, fresh_with_dir,
                                    testutil_remove_cache),
    cmocka_unit_test_setup(test_counters_slot_without_memory_to_grow_the_registry_is_none, fresh),
    cmocka_unit_test_setup_teardown(test_counters_json_of_a_fresh_process_holds_the_runtime_counters, fresh_with_dir,
                                    testutil_remove_cache),
    /* last: its 4400 counters would fill the JSON file the escaping test reads */
    cmocka_unit_test_setup(test_counters_count_in_a_block_far_past_the_first, fresh),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
