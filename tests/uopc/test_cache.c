/* test_cache.c: the disk cache's size limit, LRU eviction and statistics
 * (uopc/src/cache_evict.c, cache_scan.c and cache_stats.c, section 23.6 "The cache on
 * disk"). Each case runs on a cache of its own; the internal header gives the
 * running total and the stats record to compare with what the disk holds. */
#include "uopc/uopc.h"
#include "testutil.h"
#include "../../uopc/src/internal.h"
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <pwd.h>
#include <semaphore.h>
#include <sys/mman.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>

static const char SQUARE[] =
    "void square(const float *x, float *out, const int *n) {\n"
    "  for (int i0 = 0; i0 < n[0]; i0++) out[i0] = x[i0] * x[i0];\n"
    "}\n";

static int setup(void **state) { return testutil_fresh_cache(state); }

static int teardown(void **state) {
  unsetenv("UOPC_CACHE_MAX_SIZE");
  return testutil_remove_cache(state);
}

/* Builds SQUARE under a tag (a new key per tag), runs it on 4 floats and
 * checks the result; the entry's directory goes into dir when not NULL. */
static int build_tag(const char *tag, char *dir, int *cached) {
  char source[512];
  snprintf(source, sizeof source, "/* %s */\n%s", tag, SQUARE);
  uopc_program *p;
  uopc_error err = {0};
  if (uopc_program_new(&p, source, "square", "ppp", NULL, &err) != UOPC_OK) {
    fprintf(stderr, "build of '%s': %s\n", tag, err.message);
    return -1;
  }
  float x[4] = {1, -2, 3, 0.5f}, y[4] = {0};
  int n = 4, bad = 0;
  void *xp = x, *yp = y, *np = &n;
  void *args[] = {&xp, &yp, &np};
  uopc_program_call(p, args);
  for (int i = 0; i < 4; i++) bad |= y[i] != x[i] * x[i];
  if (dir) snprintf(dir, PATH_MAX, "%s", uopc_program_dir(p));
  if (cached) *cached = uopc_program_was_cached(p);
  uopc_program_free(p);
  return bad ? -1 : 0;
}

static void set_used(const char *dir, time_t when) {
  struct timespec t[2] = {{.tv_sec = when}, {.tv_sec = when}};
  assert_int_equal(utimensat(AT_FDCWD, dir, t, 0), 0);
}

static time_t used_at(const char *dir) {
  struct stat st;
  return stat(dir, &st) == 0 ? st.st_mtime : -1;
}

static void set_limit(int64_t bytes) {
  char text[32];
  snprintf(text, sizeof text, "%lld", (long long)bytes);
  setenv("UOPC_CACHE_MAX_SIZE", text, 1);
}

static uopc_cache_record record_of(const char *dir) {
  uopc_cache_record r;
  uopc_cache_record_read(dir, &r);
  return r;
}

/* The running total must equal what a count of the disk finds. */
static void assert_total_matches_disk(const char *dir) {
  uopc_cache_record kept = record_of(dir), disk = {0};
  uopc_error err = {0};
  assert_uopc_ok(uopc_cache_scan(dir, &disk, &err), err);
  assert_true(kept.known);
  if (kept.entries != disk.entries || kept.bytes != disk.bytes)
    fail_msg("running total %lld entries, %lld bytes; the disk holds %lld entries, %lld bytes",
             (long long)kept.entries, (long long)kept.bytes, (long long)disk.entries, (long long)disk.bytes);
}

/* ---- the limit ---------------------------------------------------------------- */

static void test_cache_parse_size_takes_digits_and_binary_suffixes(void **state) {
  (void)state;
  static const struct { const char *text; int64_t bytes; } cases[] = {
    {"0", 0}, {"4096", 4096}, {"64k", 64 << 10}, {"500M", 500LL << 20}, {"2G", 2LL << 30}, {"1T", 1LL << 40}};
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    int64_t got = -1;
    uopc_error err = {0};
    assert_uopc_ok(uopc_cache_parse_size("UOPC_CACHE_MAX_SIZE", cases[i].text, &got, &err), err);
    if (got != cases[i].bytes)
      fail_msg("'%s': expected %lld bytes, got %lld", cases[i].text, (long long)cases[i].bytes, (long long)got);
  }
}

static void test_cache_parse_size_rejects_what_is_not_a_size(void **state) {
  (void)state;
  static const char *const bad[] = {"", "2GB", "-1", "1.5G", "G", "12 M", "lots", "4096B", "1."};
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    int64_t got;
    uopc_error err = {0};
    assert_uopc_code(uopc_cache_parse_size("UOPC_CACHE_MAX_SIZE", bad[i], &got, &err), UOPC_E_INVALID, err);
    char quoted[64];
    snprintf(quoted, sizeof quoted, "UOPC_CACHE_MAX_SIZE = '%s' is not a size", bad[i]);
    assert_contains(err.message, quoted);
  }
  int64_t got;
  uopc_error err = {0};
  assert_uopc_code(uopc_cache_parse_size("UOPC_CACHE_MAX_SIZE", "2000000T", &got, &err), UOPC_E_INVALID, err);
  assert_contains(err.message, "is larger than 1048576T");
}

/* No UOPC_CACHE_MAX_SIZE (or an empty one): the default limit, whatever was there before. */
static void test_cache_max_size_without_the_variable_is_the_default(void **state) {
  (void)state;
  unsetenv("UOPC_CACHE_MAX_SIZE");
  int64_t got = -5;
  uopc_error err = {0};
  assert_uopc_ok(uopc_cache_max_size(&got, &err), err);
  assert_int_equal(got, UOPC_CACHE_DEFAULT_MAX_SIZE);
  setenv("UOPC_CACHE_MAX_SIZE", "", 1);
  got = -5;
  assert_uopc_ok(uopc_cache_max_size(&got, &err), err);
  assert_int_equal(got, UOPC_CACHE_DEFAULT_MAX_SIZE);
}

/* A cache directory below a regular file: the mkdir that fails is named with its reason. */
static void test_cache_open_names_the_directory_it_cannot_create(void **state) {
  (void)state;
  char file[PATH_MAX + 8], dir[PATH_MAX + 16];
  snprintf(file, sizeof file, "%s/a-file", testutil_cache_dir);
  FILE *f = fopen(file, "w");
  assert_non_null(f);
  fclose(f);
  snprintf(dir, sizeof dir, "%s/sub", file);
  uopc_cache c;
  uopc_error err = {0};
  assert_uopc_code(uopc_cache_open(&c, dir, &err), UOPC_E_IO, err);
  char want[PATH_MAX + 80];
  snprintf(want, sizeof want, "cannot create cache directory '%s': Not a directory", dir);
  assert_string_equal(err.message, want);
}

static void test_program_new_refuses_a_bad_max_size_and_names_it(void **state) {
  (void)state;
  setenv("UOPC_CACHE_MAX_SIZE", "2GB", 1);
  uopc_program *p = NULL;
  uopc_error err = {0};
  assert_uopc_code(uopc_program_new(&p, SQUARE, "square", "ppp", NULL, &err), UOPC_E_INVALID, err);
  assert_null(p);
  assert_contains(err.message, "UOPC_CACHE_MAX_SIZE = '2GB'");
}

/* ---- the running total and "used" ---------------------------------------------- */

static void test_cache_publish_keeps_a_running_total(void **state) {
  (void)state;
  char dir[PATH_MAX];
  assert_int_equal(build_tag("total-a", NULL, NULL), 0);
  assert_int_equal(build_tag("total-b", dir, NULL), 0);
  assert_int_equal(build_tag("total-b", NULL, NULL), 0);   /* a hit adds nothing */
  uopc_cache_record r = record_of(testutil_cache_dir);
  assert_int_equal(r.entries, 2);
  assert_true(r.bytes >= 2 * uopc_cache_tree_size(dir) - 8192);
  assert_total_matches_disk(testutil_cache_dir);
}

/* A hit renews the entry's mtime only when it is a minute old: no write per hit. */
static void test_cache_hit_marks_use_at_most_once_a_minute(void **state) {
  (void)state;
  char dir[PATH_MAX];
  int cached;
  assert_int_equal(build_tag("touch", dir, NULL), 0);
  time_t now = time(NULL);
  set_used(dir, now - 30);
  assert_int_equal(build_tag("touch", NULL, &cached), 0);
  assert_int_equal(cached, 1);
  assert_int_equal(used_at(dir), now - 30);
  set_used(dir, now - 120);
  assert_int_equal(build_tag("touch", NULL, &cached), 0);
  assert_true(used_at(dir) >= now);
}

/* ---- eviction -------------------------------------------------------------------- */

/* Six entries used at different times, one of the oldest hit again; a seventh
 * passes the limit. The evicted ones are the least recently used, in order,
 * and no more than it takes to get down to 90 %. */
static void test_cache_evicts_least_recently_used_first_and_keeps_recent_hits(void **state) {
  (void)state;
  enum { N = 6 };
  char dirs[N + 1][PATH_MAX], tag[32];
  int64_t sizes[N];
  time_t now = time(NULL);
  for (int i = 0; i < N; i++) {
    snprintf(tag, sizeof tag, "lru-%d", i);
    assert_int_equal(build_tag(tag, dirs[i], NULL), 0);
    set_used(dirs[i], now - 1000 + 100 * i);   /* lru-0 is the oldest */
    sizes[i] = uopc_cache_tree_size(dirs[i]);
  }
  assert_int_equal(build_tag("lru-1", NULL, NULL), 0);   /* lru-1 is now the most recent */
  int64_t limit = record_of(testutil_cache_dir).bytes, evictions = uopc_counter_get(UOPC_C_CACHE_EVICTIONS);
  set_limit(limit);
  assert_int_equal(build_tag("lru-new", dirs[N], NULL), 0);
  /* Least recently used first: lru-0, 2, 3, 4, 5; then lru-1 and the new one. */
  static const int order[N + 1] = {0, 2, 3, 4, 5, 1, N};
  int gone = 0;
  while (gone < N + 1 && access(dirs[order[gone]], F_OK) != 0) gone++;
  for (int i = gone; i < N + 1; i++)
    if (access(dirs[order[i]], F_OK) != 0) fail_msg("lru-%d was evicted before a less recently used entry", order[i]);
  assert_true(gone >= 1);
  assert_int_equal(access(dirs[1], F_OK), 0);   /* hit again: kept */
  assert_int_equal(access(dirs[N], F_OK), 0);   /* just published: kept */
  uopc_cache_record r = record_of(testutil_cache_dir);
  int64_t low = limit - limit / 10;
  assert_true(r.bytes <= low);
  assert_true(r.bytes + sizes[order[gone - 1]] > low);   /* one fewer would not have done */
  assert_int_equal(uopc_counter_get(UOPC_C_CACHE_EVICTIONS) - evictions, gone);
  assert_int_equal(r.events[UOPC_CACHE_EVICTIONS], gone);
  assert_total_matches_disk(testutil_cache_dir);
}

/* Two entries used in the same second, a few nanoseconds apart: the older one goes first. The
 * older is the one readdir lists second, so a comparator that kept the listing's order fails. */
static void test_cache_evicts_the_older_of_two_entries_used_in_the_same_second(void **state) {
  (void)state;
  char a[PATH_MAX], b[PATH_MAX];
  assert_int_equal(build_tag("ns-a", a, NULL), 0);
  assert_int_equal(build_tag("ns-b", b, NULL), 0);
  const char *first = NULL, *second = NULL;
  DIR *d = opendir(testutil_cache_dir);
  assert_non_null(d);
  for (struct dirent *e; (e = readdir(d));) {
    const char *dir = strcmp(e->d_name, strrchr(a, '/') + 1) == 0   ? a
                      : strcmp(e->d_name, strrchr(b, '/') + 1) == 0 ? b
                                                                      : NULL;
    if (dir && !first) first = dir;
    else if (dir) second = dir;
  }
  closedir(d);
  assert_non_null(second);
  time_t then = time(NULL) - 1000;
  struct timespec newer[2] = {{then, 900}, {then, 900}}, older[2] = {{then, 100}, {then, 100}};
  assert_int_equal(utimensat(AT_FDCWD, first, newer, 0), 0);
  assert_int_equal(utimensat(AT_FDCWD, second, older, 0), 0);
  /* room for three entries less a quarter of one, so that evicting one gets below 90 % */
  int64_t two = record_of(testutil_cache_dir).bytes;
  set_limit(two + two / 4);
  assert_int_equal(build_tag("ns-c", NULL, NULL), 0);
  assert_int_equal(access(second, F_OK), -1);
  assert_int_equal(access(first, F_OK), 0);
}

/* A limit smaller than one entry evicts every other one, never the entry its
 * process is about to load. */
static void test_cache_eviction_spares_the_entry_just_published(void **state) {
  (void)state;
  char a[PATH_MAX], b[PATH_MAX];
  assert_int_equal(build_tag("spare-a", a, NULL), 0);
  set_limit(1);
  assert_int_equal(build_tag("spare-b", b, NULL), 0);
  assert_int_equal(access(a, F_OK), -1);
  assert_int_equal(access(b, F_OK), 0);
  assert_int_equal(record_of(testutil_cache_dir).entries, 1);
  assert_total_matches_disk(testutil_cache_dir);
  /* a second eviction adds to the first in the record */
  int64_t evictions = uopc_counter_get(UOPC_C_CACHE_EVICTIONS);
  assert_int_equal(build_tag("spare-c", NULL, NULL), 0);
  assert_int_equal(access(b, F_OK), -1);
  assert_int_equal(uopc_counter_get(UOPC_C_CACHE_EVICTIONS) - evictions, 1);
  assert_int_equal(record_of(testutil_cache_dir).events[UOPC_CACHE_EVICTIONS], 2);
  assert_total_matches_disk(testutil_cache_dir);
}

/* An entry's directory as another process's eviction leaves it: whole, or gone. */
static void assert_entry_whole_and_loadable(const char *cache_dir, const char *name) {
  char entry[UOPC_ENTRY_MAX + 1], path[PATH_MAX];
  size_t n = strlen(name) - 65;
  memcpy(entry, name, n);
  entry[n] = '\0';
  uopc_cache c = {0};
  uopc_error err = {0};
  snprintf(c.dir, sizeof c.dir, "%s", cache_dir);
  if (uopc_cache_lookup(&c, entry, name + n + 1, "kernel.so", path, &err) != 1)
    fail_msg("entry '%s' does not verify (a partial entry?)", name);
  void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!h) fail_msg("entry '%s' does not load: %s", name, dlerror());
  assert_non_null(dlsym(h, entry));
  dlclose(h);
}

static int count_prefix(const char *dir, const char *prefix) {
  int n = 0;
  DIR *d = opendir(dir);
  for (struct dirent *e; d && (e = readdir(d));) n += strncmp(e->d_name, prefix, strlen(prefix)) == 0;
  if (d) closedir(d);
  return n;
}

/* One child: five programs, two of them built by every child. */
static int publish_five(int child) {
  char tag[32];
  for (int j = 0; j < 5; j++) {
    if (j < 2) snprintf(tag, sizeof tag, "shared-%d", j);
    else snprintf(tag, sizeof tag, "child-%d-%d", child, j);
    if (build_tag(tag, NULL, NULL) != 0) return 1;
  }
  return 0;
}

/* Eight processes publish and evict at once under a limit of about four
 * entries: every one succeeds, and what is left is consistent. */
static void test_cache_eight_processes_publish_and_evict_consistently(void **state) {
  (void)state;
  char probe[PATH_MAX], tmp[PATH_MAX + 8];
  assert_int_equal(build_tag("probe", probe, NULL), 0);
  int64_t limit = 4 * uopc_cache_tree_size(probe);
  set_limit(limit);
  pid_t pids[8];
  for (int i = 0; i < 8; i++)
    if ((pids[i] = fork()) == 0) exit(publish_five(i));   /* exit: writes its statistics */
  for (int i = 0; i < 8; i++) {
    int status;
    waitpid(pids[i], &status, 0);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) fail_msg("child %d failed (status %#x)", i, status);
  }
  DIR *d = opendir(testutil_cache_dir);
  int entries = 0;
  for (struct dirent *e; d && (e = readdir(d));)
    if (uopc_cache_is_entry_name(e->d_name)) entries++, assert_entry_whole_and_loadable(testutil_cache_dir, e->d_name);
  if (d) closedir(d);
  snprintf(tmp, sizeof tmp, "%s/tmp", testutil_cache_dir);
  assert_int_equal(count_prefix(tmp, "stage-") + count_prefix(tmp, "trash-"), 0);
  uopc_cache_record r = record_of(testutil_cache_dir);
  assert_int_equal(r.entries, entries);
  assert_true(r.events[UOPC_CACHE_EVICTIONS] > 0);
  assert_true(r.bytes <= limit);
  assert_true(r.events[UOPC_CACHE_HITS] + r.events[UOPC_CACHE_MISSES] >= 8 * 5);
  assert_total_matches_disk(testutil_cache_dir);
}

/* ---- statistics -------------------------------------------------------------------- */

enum { HITS, MISSES, CORRUPTED, EVICTIONS, COUNTED };

/* In a child, on a cache of its own: misses, a hit, a corrupted entry and
 * an eviction; its counters go through the pipe, its statistics at exit. */
static void count_events_in_child(const char *cache, int fd) {
  char dir[PATH_MAX];
  setenv("UOPC_CACHE_DIR", cache, 1);
  uopc_counters_reset();
  char so[PATH_MAX + 16];
  int bad = build_tag("stats-a", NULL, NULL);   /* a miss */
  bad |= build_tag("stats-a", NULL, NULL);      /* a hit */
  bad |= build_tag("stats-b", dir, NULL);       /* a miss */
  snprintf(so, sizeof so, "%s/kernel.so", dir);
  bad |= truncate(so, 100);
  bad |= build_tag("stats-b", NULL, NULL);      /* corrupted: a miss, rebuilt */
  set_limit(1);
  bad |= build_tag("stats-c", NULL, NULL);      /* a miss; evicts stats-a and stats-b */
  int64_t got[COUNTED] = {uopc_counter_get(UOPC_C_DISK_CACHE_HITS), uopc_counter_get(UOPC_C_DISK_CACHE_MISSES),
                          uopc_counter_get(UOPC_C_CORRUPTED_REBUILT), uopc_counter_get(UOPC_C_CACHE_EVICTIONS)};
  if (bad || write(fd, got, sizeof got) != (ssize_t)sizeof got) exit(1);
  exit(0);
}

static void test_cache_statistics_match_the_counted_events(void **state) {
  (void)state;
  char cache[PATH_MAX + 8];
  snprintf(cache, sizeof cache, "%s/own", testutil_cache_dir);
  int fds[2];
  assert_int_equal(pipe(fds), 0);
  pid_t pid = fork();
  if (pid == 0) count_events_in_child(cache, fds[1]);
  close(fds[1]);
  int64_t counted[COUNTED] = {0};
  assert_int_equal(read(fds[0], counted, sizeof counted), (ssize_t)sizeof counted);
  close(fds[0]);
  int status;
  waitpid(pid, &status, 0);
  assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  uopc_cache_record r = record_of(cache);
  assert_int_equal(counted[HITS], 1);
  assert_int_equal(counted[MISSES], 4);
  assert_int_equal(counted[CORRUPTED], 1);
  assert_int_equal(counted[EVICTIONS], 2);
  assert_int_equal(r.events[UOPC_CACHE_HITS], counted[HITS]);
  assert_int_equal(r.events[UOPC_CACHE_MISSES], counted[MISSES]);
  assert_int_equal(r.events[UOPC_CACHE_CORRUPTED], counted[CORRUPTED]);
  assert_int_equal(r.events[UOPC_CACHE_EVICTIONS], counted[EVICTIONS]);
  assert_int_equal(r.entries, 1);
  assert_total_matches_disk(cache);
}

static char *printed_as(const char *dir, int64_t max_size, int shared) {
  char *text = NULL;
  size_t n = 0;
  FILE *f = open_memstream(&text, &n);
  assert_non_null(f);
  uopc_cache_stats_print(f, "", dir, max_size, shared);
  fclose(f);
  return text;
}

static char *printed(const char *dir, int64_t max_size) { return printed_as(dir, max_size, 0); }

static void test_cache_stats_print_as_ccache_does(void **state) {
  (void)state;
  assert_int_equal(build_tag("print", NULL, NULL), 0);
  assert_int_equal(build_tag("print", NULL, NULL), 0);
  uopc_cache_stats_flush();
  char *text = printed(testutil_cache_dir, 500LL << 20);
  assert_contains(text, "cache directory            ");
  assert_contains(text, "\nentries                    1\n");
  assert_contains(text, "\ntotal size                 ");
  assert_contains(text, "\nlimit                      500.0 MiB");
  assert_contains(text, "\nhits                       1\n");
  assert_contains(text, "\nmisses                     1\n");
  assert_contains(text, "\nevictions                  0\n");
  assert_contains(text, "\ncorrupted entries rebuilt  0\n");
  free(text);
}

/* Every line starts with the prefix (make cache-stats indents them): the first one too. */
static void test_cache_stats_print_puts_the_prefix_before_the_directory(void **state) {
  (void)state;
  char *text = NULL, want[PATH_MAX + 64];
  size_t n = 0;
  FILE *f = open_memstream(&text, &n);
  assert_non_null(f);
  uopc_cache_stats_print(f, "  ", testutil_cache_dir, 500LL << 20, 0);
  fclose(f);
  snprintf(want, sizeof want, "  cache directory            %s\n  entries ", testutil_cache_dir);
  assert_true(strncmp(text, want, strlen(want)) == 0);
  free(text);
}

/* A limit of 0 is no limit, and the line says so, whatever the variable's text. */
static void test_cache_stats_print_says_none_for_a_limit_of_0(void **state) {
  (void)state;
  setenv("UOPC_CACHE_MAX_SIZE", "0", 1);   /* teardown unsets it */
  char *text = printed(testutil_cache_dir, 0);
  assert_contains(text, "\nlimit                      none (UOPC_CACHE_MAX_SIZE=0)\n");
  free(text);
}

/* The lock and the statistics are the owner's alone: both are made with mode 0600, which a
 * umask of 022 leaves as it is (it would show any other mode asked for). */
static void test_cache_lock_and_stats_files_are_made_with_mode_0600(void **state) {
  (void)state;
  char dir[PATH_MAX + 16], path[PATH_MAX + 32];
  snprintf(dir, sizeof dir, "%s/fresh", testutil_cache_dir);
  assert_int_equal(mkdir(dir, 0700), 0);
  uopc_error err = {0};
  int fd;
  mode_t old = umask(022);
  int rc_lock = uopc_cache_lock(dir, &fd, &err);
  uopc_cache_record r = {.known = 1, .entries = 2, .bytes = 3};
  int rc_write = rc_lock == UOPC_OK ? uopc_cache_record_write(dir, &r, &err) : rc_lock;
  if (rc_lock == UOPC_OK) uopc_cache_unlock(fd);
  umask(old);   /* back before any assertion can stop the test */
  assert_uopc_ok(rc_lock, err);
  assert_uopc_ok(rc_write, err);
  struct stat st;
  snprintf(path, sizeof path, "%s/lock", dir);
  assert_int_equal(stat(path, &st), 0);
  assert_int_equal(st.st_mode & 07777, 0600);
  snprintf(path, sizeof path, "%s/stats", dir);
  assert_int_equal(stat(path, &st), 0);
  assert_int_equal(st.st_mode & 07777, 0600);
}

/* Holds the cache's lock while it interrupts the reader's wait for it with signals, then
 * writes a record of 7 hits and lets go. */
typedef struct holder { pthread_t reader; sem_t locked; int failed; } holder;

static void *hold_the_lock(void *arg) {
  holder *h = arg;
  int fd;
  uopc_error err = {0};
  h->failed = uopc_cache_lock(testutil_cache_dir, &fd, &err) != UOPC_OK;
  sem_post(&h->locked);
  if (h->failed) return NULL;
  for (int k = 0; k < 10; k++) {
    nanosleep(&(struct timespec){.tv_nsec = 20 * 1000 * 1000}, NULL);
    pthread_kill(h->reader, SIGUSR1);
  }
  uopc_cache_record r = {.known = 1};
  r.events[UOPC_CACHE_HITS] = 7;
  h->failed = uopc_cache_record_write(testutil_cache_dir, &r, &err) != UOPC_OK;
  uopc_cache_unlock(fd);
  return NULL;
}

static void on_signal(int sig) { (void)sig; }

/* A signal that interrupts the wait for the shared lock (a handler without SA_RESTART: flock
 * fails with EINTR) is not the lock: the statistics are read once the writer has let go. */
static void test_cache_stats_print_waits_out_a_signal_for_the_lock(void **state) {
  (void)state;
  struct sigaction sa = {.sa_handler = on_signal}, old;
  sigemptyset(&sa.sa_mask);
  assert_int_equal(sigaction(SIGUSR1, &sa, &old), 0);
  holder h = {.reader = pthread_self()};
  assert_int_equal(sem_init(&h.locked, 0, 0), 0);
  pthread_t t;
  assert_int_equal(pthread_create(&t, NULL, hold_the_lock, &h), 0);
  while (sem_wait(&h.locked) != 0) {}
  char *text = printed(testutil_cache_dir, 500LL << 20);
  pthread_join(t, NULL);
  sigaction(SIGUSR1, &old, NULL);
  sem_destroy(&h.locked);
  assert_false(h.failed);
  assert_contains(text, "\nhits                       7\n");
  free(text);
}

/* make cache-stats on a fresh clone: no cache directory yet, nothing created. */
static void test_cache_stats_print_a_cache_not_created_yet(void **state) {
  (void)state;
  char dir[PATH_MAX + 8];
  snprintf(dir, sizeof dir, "%s/never", testutil_cache_dir);
  char *text = printed(dir, UOPC_CACHE_DEFAULT_MAX_SIZE);
  assert_contains(text, "(not created yet)");
  assert_contains(text, "\nentries                    0\n");
  assert_contains(text, "1.0 GiB (the default");
  free(text);
  assert_int_equal(access(dir, F_OK), -1);
}

/* The default directory is every tree's of this user: the statistics say so rather than pass its
 * counts off as one tree's; a directory of one's own says nothing more (make cache-stats, which
 * chose the directory, says which it is: tests/grader/test_tools.py runs it both ways). */
static void test_cache_stats_print_names_the_shared_default_as_shared(void **state) {
  (void)state;
  char dir[PATH_MAX + 16];
  snprintf(dir, sizeof dir, "%s/xdg/uopc", testutil_cache_dir);
  char *shared = printed_as(dir, UOPC_CACHE_DEFAULT_MAX_SIZE, 1);
  char *own = printed_as(dir, UOPC_CACHE_DEFAULT_MAX_SIZE, 0);
  assert_contains(shared, "/xdg/uopc (the default, shared by every tree and run of this user without "
                          "UOPC_CACHE_DIR: the counts below are theirs too; not created yet)\n");
  assert_contains(own, "/xdg/uopc (not created yet)\n");
  free(shared);
  free(own);
}

/* A cache from before the limit has entries and no stats file: the first
 * publish counts it once, and from then on only adds. */
static void test_cache_without_stats_file_is_counted_once(void **state) {
  (void)state;
  char stats[PATH_MAX + 8];
  assert_int_equal(build_tag("old-a", NULL, NULL), 0);
  assert_int_equal(build_tag("old-b", NULL, NULL), 0);
  snprintf(stats, sizeof stats, "%s/stats", testutil_cache_dir);
  assert_int_equal(unlink(stats), 0);
  assert_int_equal(build_tag("old-c", NULL, NULL), 0);
  assert_int_equal(record_of(testutil_cache_dir).entries, 3);
  assert_total_matches_disk(testutil_cache_dir);
}

/* The stats file as a later version, a crash or a person may leave it: a
 * value that is not whole digits, or is negative, is not read (the total is
 * then unknown and the next publish counts the disk again). */
static void test_cache_record_read_leaves_garbled_values_at_zero(void **state) {
  (void)state;
  char stats[PATH_MAX + 8];
  snprintf(stats, sizeof stats, "%s/stats", testutil_cache_dir);
  static const char garbled[] = "entries=3\nbytes=-4096\nhits=12x\nmisses=7\nevictions=\ncorrupted_rebuilt=2";
  uopc_error err = {0};
  assert_uopc_ok(uopc_write_file(stats, garbled, sizeof garbled - 1, &err), err);
  uopc_cache_record r = record_of(testutil_cache_dir);
  int64_t want[UOPC_CACHE_EVENTS] = {[UOPC_CACHE_MISSES] = 7, [UOPC_CACHE_CORRUPTED] = 2};
  if (r.known != 0 || r.entries != 3 || r.bytes != 0)
    fail_msg("known %d, entries %lld, bytes %lld; expected 0, 3 (read) and 0 (-4096 is not a size)", r.known,
             (long long)r.entries, (long long)r.bytes);
  for (int i = 0; i < UOPC_CACHE_EVENTS; i++)
    if (r.events[i] != want[i]) fail_msg("event %d: expected %lld, got %lld", i, (long long)want[i], (long long)r.events[i]);
  assert_int_equal(build_tag("after-garble", NULL, NULL), 0);
  assert_int_equal(record_of(testutil_cache_dir).entries, 1);
  assert_total_matches_disk(testutil_cache_dir);
}

/* A key with no digits after its '=' is not a value: the total is unknown, not 0. */
static void test_cache_record_read_refuses_an_empty_value(void **state) {
  (void)state;
  char stats[PATH_MAX + 8];
  snprintf(stats, sizeof stats, "%s/stats", testutil_cache_dir);
  static const char empty[] = "entries=\nbytes=4096\n";
  uopc_error err = {0};
  assert_uopc_ok(uopc_write_file(stats, empty, sizeof empty - 1, &err), err);
  uopc_cache_record r = record_of(testutil_cache_dir);
  assert_int_equal(r.known, 0);
  assert_int_equal(r.entries, 0);
}

/* One built entry, a stats file saying `stale`, then a change of (entries, bytes) that takes the
 * total below 0: counted afresh from the disk (one entry), never written negative. */
static void account_after_a_stale_total(const char *tag, const char *stale, int64_t entries, int64_t bytes) {
  char stats[PATH_MAX + 8], trash[PATH_MAX];
  assert_int_equal(build_tag(tag, NULL, NULL), 0);
  snprintf(stats, sizeof stats, "%s/stats", testutil_cache_dir);
  uopc_error err = {0};
  assert_uopc_ok(uopc_write_file(stats, stale, strlen(stale), &err), err);
  uopc_cache c;
  assert_uopc_ok(uopc_cache_open(&c, testutil_cache_dir, &err), err);
  assert_uopc_ok(uopc_cache_account(&c, entries, bytes, NULL, trash, &err), err);
  assert_int_equal(record_of(testutil_cache_dir).entries, 1);
  assert_total_matches_disk(testutil_cache_dir);
}

/* A total whose entry count goes negative (an entry removed by hand) while its
 * bytes stay positive is counted afresh, not written as -1 entries. */
static void test_cache_account_counts_afresh_when_entries_go_negative(void **state) {
  (void)state;
  account_after_a_stale_total("negative-a", "entries=0\nbytes=1000000\n", -1, -4096);
}

/* An eviction that cannot make its trash directory (tmp/ gone) is an error of
 * uopc_cache_account, though the total is still written. */
static void test_cache_account_reports_an_eviction_without_trash(void **state) {
  (void)state;
  char tmp[PATH_MAX + 8], trash[PATH_MAX], want[PATH_MAX + 128];
  assert_int_equal(build_tag("notrash-a", NULL, NULL), 0);
  uopc_cache c;
  uopc_error err = {0};
  assert_uopc_ok(uopc_cache_open(&c, testutil_cache_dir, &err), err);
  snprintf(tmp, sizeof tmp, "%s/tmp", testutil_cache_dir);
  testutil_remove_tree(tmp);
  c.max_size = 1;
  assert_uopc_code(uopc_cache_account(&c, 0, 0, NULL, trash, &err), UOPC_E_IO, err);
  snprintf(want, sizeof want, "cannot make a trash directory in '%s/tmp' to evict into: No such file or directory",
           testutil_cache_dir);
  assert_string_equal(err.message, want);
  assert_string_equal(trash, "");
  assert_int_equal(record_of(testutil_cache_dir).entries, 1);
  assert_total_matches_disk(testutil_cache_dir);
}

/* A discard of an entry that is gone already (another process evicted or
 * discarded it) moves nothing and leaves the running total as it is. */
static void test_cache_discard_of_a_gone_entry_keeps_the_total(void **state) {
  (void)state;
  char dir[PATH_MAX];
  uopc_cache c;
  uopc_error err = {0};
  assert_int_equal(build_tag("gone-a", dir, NULL), 0);
  assert_int_equal(build_tag("gone-b", NULL, NULL), 0);
  assert_uopc_ok(uopc_cache_open(&c, testutil_cache_dir, &err), err);
  assert_int_equal(uopc_cache_discard_dir(&c, dir), 1);
  assert_int_equal(record_of(testutil_cache_dir).entries, 1);
  assert_int_equal(uopc_cache_discard_dir(&c, dir), 0);
  assert_int_equal(record_of(testutil_cache_dir).entries, 1);
  assert_total_matches_disk(testutil_cache_dir);
}

/* UOPC_CACHE_MAX_SIZE=0 is no limit: however many bytes the entries take, none is evicted. */
static void test_cache_limit_of_0_evicts_nothing(void **state) {
  (void)state;
  char dirs[3][PATH_MAX], tag[32];
  set_limit(0);
  int64_t evictions = uopc_counter_get(UOPC_C_CACHE_EVICTIONS);
  for (int i = 0; i < 3; i++) {
    snprintf(tag, sizeof tag, "nolimit-%d", i);
    assert_int_equal(build_tag(tag, dirs[i], NULL), 0);
  }
  for (int i = 0; i < 3; i++) assert_int_equal(access(dirs[i], F_OK), 0);
  uopc_cache_record r = record_of(testutil_cache_dir);
  assert_int_equal(r.entries, 3);
  assert_int_equal(r.events[UOPC_CACHE_EVICTIONS], 0);
  assert_int_equal(uopc_counter_get(UOPC_C_CACHE_EVICTIONS) - evictions, 0);
  assert_total_matches_disk(testutil_cache_dir);
}

/* Entries named as long as a name can be (a 64-character entry, '-', a 64-digit key) are listed
 * and evicted by their whole names: all three go, none is left for a cut name that matched nothing. */
static void test_cache_evicts_entries_whose_names_have_the_longest_length(void **state) {
  (void)state;
  char entry[UOPC_ENTRY_MAX + 1], source[512], dirs[3][PATH_MAX], trash[PATH_MAX];
  memset(entry, 'e', UOPC_ENTRY_MAX);
  entry[UOPC_ENTRY_MAX] = '\0';
  uopc_error err = {0};
  for (int i = 0; i < 3; i++) {
    snprintf(source, sizeof source, "/* long-%d */\nvoid %s(float *x) { x[0] = %d; }\n", i, entry, i);
    uopc_program *p;
    assert_uopc_ok(uopc_program_new(&p, source, entry, "p", NULL, &err), err);
    snprintf(dirs[i], PATH_MAX, "%s", uopc_program_dir(p));
    assert_int_equal(strlen(strrchr(dirs[i], '/') + 1), UOPC_ENTRY_MAX + 1 + 64);
    uopc_program_free(p);
  }
  uopc_cache c;
  assert_uopc_ok(uopc_cache_open(&c, testutil_cache_dir, &err), err);
  c.max_size = 1;   /* every entry is past it */
  int64_t evictions = uopc_counter_get(UOPC_C_CACHE_EVICTIONS);
  int rc = uopc_cache_account(&c, 0, 0, NULL, trash, &err);
  if (*trash) testutil_remove_tree(trash);
  assert_uopc_ok(rc, err);
  for (int i = 0; i < 3; i++)
    if (access(dirs[i], F_OK) == 0) fail_msg("entry %d of 3, '%s', was not evicted", i, dirs[i]);
  assert_int_equal(uopc_counter_get(UOPC_C_CACHE_EVICTIONS) - evictions, 3);
  assert_int_equal(record_of(testutil_cache_dir).entries, 0);
  assert_total_matches_disk(testutil_cache_dir);
}

/* ---- files ------------------------------------------------------------------------ */

static char *read_all(const char *path, size_t *n) {
  char *data = NULL;
  uopc_error err = {0};
  assert_uopc_ok(uopc_read_file(path, &data, n, &err), err);
  return data;
}

/* The file at path holds exactly the n bytes of want. */
static void assert_file_holds(const char *path, const void *want, size_t n) {
  size_t got;
  char *data = read_all(path, &got);
  assert_int_equal(got, n);
  assert_memory_equal(data, want, n);
  free(data);
}

/* The last write of a file can be a single byte: write() returning 1 is progress, not a failure. */
static void test_cache_write_file_writes_a_one_byte_file(void **state) {
  (void)state;
  char path[PATH_MAX + 8];
  snprintf(path, sizeof path, "%s/one", testutil_cache_dir);
  uopc_error err = {0};
  assert_uopc_ok(uopc_write_file(path, "x", 1, &err), err);
  assert_file_holds(path, "x", 1);
}

/* A file uopc_write_file makes (an entry's kernel source, manifest, log) is the user's alone:
 * mode 0600, whatever the umask lets through. */
static void test_cache_write_file_makes_a_file_of_mode_0600(void **state) {
  (void)state;
  char path[PATH_MAX + 16];
  snprintf(path, sizeof path, "%s/private", testutil_cache_dir);
  uopc_error err = {0};
  mode_t old = umask(022);
  int rc = uopc_write_file(path, "abc", 3, &err);
  umask(old);   /* back before any assertion can stop the test */
  assert_uopc_ok(rc, err);
  struct stat st;
  assert_int_equal(stat(path, &st), 0);
  assert_int_equal(st.st_mode & 07777, 0600);
  assert_file_holds(path, "abc", 3);
}

/* With stdin closed, open() returns descriptor 0, a valid one: the file is still written. */
static void test_cache_write_file_writes_through_descriptor_0(void **state) {
  (void)state;
  char path[PATH_MAX + 8];
  snprintf(path, sizeof path, "%s/on-fd-0", testutil_cache_dir);
  uopc_error err = {0};
  int saved = dup(0);
  assert_true(saved > 0);
  close(0);
  int rc = uopc_write_file(path, "zero", 4, &err);
  assert_int_equal(dup2(saved, 0), 0);   /* stdin back before any assertion can stop the test */
  close(saved);
  assert_uopc_ok(rc, err);
  assert_file_holds(path, "zero", 4);
}

/* A write refused for good (EPERM, from a memfd sealed against writing) fails the file at once:
 * only EINTR is tried again. In a child, which a loop of retries would keep until its alarm. */
static void test_cache_write_file_fails_on_a_write_refused_for_good(void **state) {
  (void)state;
  int sealed = memfd_create("sealed", MFD_CLOEXEC | MFD_ALLOW_SEALING);
  assert_true(sealed >= 0);
  assert_int_equal(fcntl(sealed, F_ADD_SEALS, F_SEAL_WRITE), 0);
  char path[64];
  snprintf(path, sizeof path, "/proc/self/fd/%d", sealed);
  pid_t pid = fork();
  if (pid == 0) {
    alarm(2);
    uopc_error err = {0};
    char want[128];
    snprintf(want, sizeof want, "cannot write '%s': Operation not permitted", path);
    int rc = uopc_write_file(path, "abc", 3, &err);
    if (rc != UOPC_E_IO || strcmp(err.message, want) != 0) fprintf(stderr, "%s: %s\n", uopc_error_name(rc), err.message);
    _exit(rc == UOPC_E_IO && strcmp(err.message, want) == 0 ? 0 : 1);
  }
  close(sealed);
  int status;
  assert_int_equal(waitpid(pid, &status, 0), pid);
  assert_true(WIFEXITED(status));
  assert_int_equal(WEXITSTATUS(status), 0);
}

/* A description longer than a manifest holds is cut: the manifest is its first 65535 bytes. */
static void test_cache_publish_cuts_a_long_manifest_at_64_KiB(void **state) {
  (void)state;
  static const char key[] = "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff";
  enum { LONG = 70000, MANIFEST_BYTES = 65535 };
  uopc_cache c;
  uopc_error err = {0};
  char staging[PATH_MAX], artifact[PATH_MAX], path[PATH_MAX + 128];
  assert_uopc_ok(uopc_cache_open(&c, testutil_cache_dir, &err), err);
  assert_uopc_ok(uopc_cache_stage(&c, staging, &err), err);
  snprintf(path, sizeof path, "%s/kernel.so", staging);
  assert_uopc_ok(uopc_write_file(path, "abc", 3, &err), err);
  char *description = malloc(LONG + 1);
  assert_non_null(description);
  memset(description, 'd', LONG);
  description[LONG] = '\0';
  int rc = uopc_cache_publish(&c, staging, "long", key, "kernel.so", description, artifact, &err);
  free(description);
  assert_uopc_ok(rc, err);
  snprintf(path, sizeof path, "%s/long-%s/manifest", testutil_cache_dir, key);
  size_t n;
  char *text = read_all(path, &n);
  assert_int_equal(n, MANIFEST_BYTES);
  char head[256];
  snprintf(head, sizeof head, "key=%s\nentry=long\nartifact=kernel.so\nartifact_size=3\n", key);
  assert_memory_equal(text, head, strlen(head));
  assert_int_equal(text[n - 1], 'd');
  free(text);
}

/* An artifact that cannot be hashed (a directory: it stats but does not read) fails the publish with
 * the hash's error; nothing is published and the staging directory is removed. */
static void test_cache_publish_fails_when_the_artifact_cannot_be_hashed(void **state) {
  (void)state;
  static const char key[] = "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff";
  uopc_cache c;
  uopc_error err = {0};
  char staging[PATH_MAX], artifact[PATH_MAX], path[PATH_MAX + 128], want[PATH_MAX + 160];
  assert_uopc_ok(uopc_cache_open(&c, testutil_cache_dir, &err), err);
  assert_uopc_ok(uopc_cache_stage(&c, staging, &err), err);
  snprintf(path, sizeof path, "%s/kernel.so", staging);
  assert_int_equal(mkdir(path, 0700), 0);
  assert_uopc_code(uopc_cache_publish(&c, staging, "unhashed", key, "kernel.so", NULL, artifact, &err),
                   UOPC_E_IO, err);
  snprintf(want, sizeof want, "cannot read '%s': Is a directory", path);
  assert_string_equal(err.message, want);
  assert_int_equal(access(staging, F_OK), -1);
  snprintf(path, sizeof path, "%s/unhashed-%s", testutil_cache_dir, key);
  assert_int_equal(access(path, F_OK), -1);
}

/* An entry's size is what st_blocks gives for its directory and for the regular files in it;
 * a subdirectory or a symlink inside adds nothing. (On tmpfs a directory has no blocks.) */
static void test_cache_tree_size_counts_the_directory_and_its_files(void **state) {
  (void)state;
  char dir[PATH_MAX + 8], file[PATH_MAX + 16], sub[PATH_MAX + 16], link[PATH_MAX + 16];
  snprintf(dir, sizeof dir, "%s/sized", testutil_cache_dir);
  snprintf(file, sizeof file, "%s/file", dir);
  snprintf(sub, sizeof sub, "%s/sub", dir);
  snprintf(link, sizeof link, "%s/link", dir);
  uopc_error err = {0};
  static char bytes[5000];
  assert_int_equal(mkdir(dir, 0700), 0);
  assert_uopc_ok(uopc_write_file(file, bytes, sizeof bytes, &err), err);
  assert_int_equal(mkdir(sub, 0700), 0);
  assert_int_equal(symlink("file", link), 0);
  struct stat d, f;
  assert_int_equal(stat(dir, &d), 0);
  assert_int_equal(stat(file, &f), 0);
  assert_true(f.st_blocks > 0);
  assert_int_equal(uopc_cache_tree_size(dir), ((int64_t)d.st_blocks + f.st_blocks) * 512);
}

/* Every miss looks in tmp/ for stale staging directories; the directory it reads is closed again,
 * so a process that builds many kernels does not run out of descriptors. */
static void test_cache_builds_leave_no_descriptor_open(void **state) {
  (void)state;
  assert_int_equal(build_tag("fds-first", NULL, NULL), 0);   /* tmp/ exists from here on */
  int before = testutil_open_fds();
  assert_int_equal(build_tag("fds-a", NULL, NULL), 0);
  assert_int_equal(build_tag("fds-b", NULL, NULL), 0);
  assert_int_equal(testutil_open_fds(), before);
}

/* ---- paths, the default directory and who owns it --------------------------------- */

/* A name of n bytes of 'a' under base, for paths past a limit. */
static char *long_path(const char *base, size_t n) {
  size_t len = strlen(base);
  char *p = malloc(len + 1 + n + 1);
  assert_non_null(p);
  memcpy(p, base, len);
  p[len] = '/';
  memset(p + len + 1, 'a', n);
  p[len + 1 + n] = '\0';
  return p;
}

/* A message that names a path of about PATH_MAX bytes is cut at the message's size: it starts
 * with start and fills the message. */
static void assert_cut_message(const char *message, const char *start) {
  if (strncmp(message, start, strlen(start)) != 0) fail_msg("message '%.120s...', expected '%s...'", message, start);
  assert_int_equal(strlen(message), UOPC_ERROR_MESSAGE_MAX - 1);
}

/* A directory whose path does not fit in PATH_MAX is refused before anything is created. */
static void test_cache_open_refuses_a_directory_past_path_max(void **state) {
  (void)state;
  char *dir = long_path(testutil_cache_dir, PATH_MAX);
  uopc_cache c;
  uopc_error err = {0};
  assert_uopc_code(uopc_cache_open(&c, dir, &err), UOPC_E_INVALID, err);
  char want[PATH_MAX + 16];
  snprintf(want, sizeof want, "path '%.100s", dir);
  assert_cut_message(err.message, want);
  assert_int_equal(access(testutil_cache_dir, F_OK), 0);
  free(dir);
}

/* One that fits in PATH_MAX but leaves no room for "<entry>-<key>/kernel.so" is refused too. */
static void test_cache_open_refuses_a_directory_without_room_for_entries(void **state) {
  (void)state;
  char *dir = long_path(testutil_cache_dir, PATH_MAX - 200 - strlen(testutil_cache_dir));
  assert_true(strlen(dir) > PATH_MAX - 256 && strlen(dir) < PATH_MAX);
  uopc_cache c;
  uopc_error err = {0};
  assert_uopc_code(uopc_cache_open(&c, dir, &err), UOPC_E_INVALID, err);
  char want[PATH_MAX + 32];
  snprintf(want, sizeof want, "cache directory '%.100s", dir);
  assert_cut_message(err.message, want);
  assert_int_equal(access(dir, F_OK), -1);   /* refused before anything is made */
  free(dir);
}

/* Sets name to value (NULL: unsets it); returns the old value, copied, for restore_env. */
static char *swap_env(const char *name, const char *value) {
  const char *old = getenv(name);
  char *saved = old ? strdup(old) : NULL;
  if (value) setenv(name, value, 1);
  else unsetenv(name);
  return saved;
}

static void restore_env(const char *name, char *saved) {
  if (saved) setenv(name, saved, 1);
  else unsetenv(name);
  free(saved);
}

/* Without UOPC_CACHE_DIR: $XDG_CACHE_HOME/uopc, else $HOME/.cache/uopc, else the passwd entry's
 * home; an empty variable counts as unset. */
static void test_cache_resolve_falls_back_to_xdg_then_home_then_passwd(void **state) {
  (void)state;
  char *cache_dir = swap_env("UOPC_CACHE_DIR", ""), *xdg = swap_env("XDG_CACHE_HOME", "/xdg/cache"),
       *home = swap_env("HOME", "/home/someone");
  char got[PATH_MAX], want[PATH_MAX + 32];
  uopc_error err = {0};
  int rc_xdg = uopc_cache_resolve(NULL, got, &err);
  int xdg_ok = strcmp(got, "/xdg/cache/uopc") == 0;
  setenv("XDG_CACHE_HOME", "", 1);
  int rc_home = uopc_cache_resolve("", got, &err);
  int home_ok = strcmp(got, "/home/someone/.cache/uopc") == 0;
  unsetenv("XDG_CACHE_HOME");
  unsetenv("HOME");
  int rc_pw = uopc_cache_resolve(NULL, got, &err);
  restore_env("UOPC_CACHE_DIR", cache_dir);   /* back before any assertion can stop the test */
  restore_env("XDG_CACHE_HOME", xdg);
  restore_env("HOME", home);
  assert_uopc_ok(rc_xdg, err);
  assert_true(xdg_ok);
  assert_uopc_ok(rc_home, err);
  assert_true(home_ok);
  struct passwd *pw = getpwuid(geteuid());
  if (pw && *pw->pw_dir) {
    assert_uopc_ok(rc_pw, err);
    snprintf(want, sizeof want, "%s/.cache/uopc", pw->pw_dir);
    assert_string_equal(got, want);
  } else {
    assert_uopc_code(rc_pw, UOPC_E_IO, err);
    assert_string_equal(err.message, "no cache directory: UOPC_CACHE_DIR, XDG_CACHE_HOME and HOME are unset");
  }
}

/* UOPC_CACHE_DIR is a directory's name, not a format: a '%' in it is kept as it is. */
static void test_cache_resolve_takes_a_percent_in_uopc_cache_dir_literally(void **state) {
  (void)state;
  char *cache_dir = swap_env("UOPC_CACHE_DIR", "/tmp/100%s-dir");
  char got[PATH_MAX];
  uopc_error err = {0};
  int rc = uopc_cache_resolve(NULL, got, &err);
  restore_env("UOPC_CACHE_DIR", cache_dir);
  assert_uopc_ok(rc, err);
  assert_string_equal(got, "/tmp/100%s-dir");
}

/* A directory another user owns is refused, naming both uids and the private directory to make
 * instead. As root, one chowned to nobody (65534); as anyone else, "/" (root's). */
static void test_cache_open_refuses_a_directory_another_user_owns(void **state) {
  (void)state;
  char dir[PATH_MAX + 16] = "/";
  unsigned owner = 0;
  if (geteuid() == 0) {
    owner = 65534;
    snprintf(dir, sizeof dir, "%s/theirs", testutil_cache_dir);
    assert_int_equal(mkdir(dir, 0700), 0);
    assert_int_equal(chown(dir, owner, owner), 0);
  }
  uopc_cache c;
  uopc_error err = {0};
  assert_uopc_code(uopc_cache_open(&c, dir, &err), UOPC_E_UNSAFE_CACHE, err);
  char want[2 * sizeof dir + 256];   /* room for dir twice: no cut for gcc to warn of at any -O */
  snprintf(want, sizeof want,
           "cache directory '%s' is owned by uid %u, not by you (uid %u): a shared object planted there would be "
           "run. Fix: mkdir -m 700 '%s/uopc-",
           dir, owner, (unsigned)geteuid(), dir);
  if (strncmp(err.message, want, strlen(want)) != 0) fail_msg("message '%s', expected '%s...'", err.message, want);
}

/* The cache's tmp/ cannot be made (in /proc/self, which is the process's own, 0555, and takes
 * no new directory, root or not): the open fails naming it and why. */
static void test_cache_open_names_the_tmp_it_cannot_create(void **state) {
  (void)state;
  errno = 0;
  assert_int_equal(mkdir("/proc/self/tmp", 0700), -1);
  int cause = errno;
  uopc_cache c;
  uopc_error err = {0};
  assert_uopc_code(uopc_cache_open(&c, "/proc/self", &err), UOPC_E_IO, err);
  char want[128];
  snprintf(want, sizeof want, "cannot create '/proc/self/tmp': %s", strerror(cause));
  assert_string_equal(err.message, want);
}

/* An entry name that makes the entry's path longer than PATH_MAX is an error, not a miss. */
static void test_cache_lookup_refuses_an_entry_path_past_path_max(void **state) {
  (void)state;
  uopc_cache c;
  uopc_error err = {0};
  char artifact[PATH_MAX], *entry = long_path("e", PATH_MAX);
  assert_uopc_ok(uopc_cache_open(&c, testutil_cache_dir, &err), err);
  assert_int_equal(uopc_cache_lookup(&c, entry, "0123", "kernel.so", artifact, &err), -1);
  assert_int_equal(err.code, UOPC_E_INVALID);
  char want[PATH_MAX + 32];
  snprintf(want, sizeof want, "cache entry path for '%.100s", entry);
  assert_cut_message(err.message, want);
  free(entry);
}

/* A failed build whose place in failed/ would not fit in PATH_MAX stays where it was built. */
static void test_cache_keep_failed_leaves_a_build_whose_name_is_too_long(void **state) {
  (void)state;
  uopc_cache c;
  uopc_error err = {0};
  /* PATH_MAX bytes of name alone: whatever the cache's directory, the place does not fit. */
  char staging[PATH_MAX], kept[PATH_MAX], *entry = long_path("e", PATH_MAX);
  assert_uopc_ok(uopc_cache_open(&c, testutil_cache_dir, &err), err);
  assert_uopc_ok(uopc_cache_stage(&c, staging, &err), err);
  uopc_cache_keep_failed(&c, staging, entry, "0123", kept);
  free(entry);
  assert_string_equal(kept, staging);
  struct stat st;
  assert_int_equal(stat(staging, &st), 0);
  assert_true(S_ISDIR(st.st_mode));
}

/* A discard with no tmp/ to move the entry into removes it where it is, and still takes it off
 * the running total. */
static void test_cache_discard_without_tmp_removes_the_entry_in_place(void **state) {
  (void)state;
  char dir[PATH_MAX], tmp[PATH_MAX + 8];
  uopc_cache c;
  uopc_error err = {0};
  assert_int_equal(build_tag("in-place-a", dir, NULL), 0);
  assert_int_equal(build_tag("in-place-b", NULL, NULL), 0);
  assert_uopc_ok(uopc_cache_open(&c, testutil_cache_dir, &err), err);
  snprintf(tmp, sizeof tmp, "%s/tmp", testutil_cache_dir);
  testutil_remove_tree(tmp);
  assert_int_equal(uopc_cache_discard_dir(&c, dir), 1);
  assert_int_equal(access(dir, F_OK), -1);
  assert_int_equal(access(tmp, F_OK), -1);
  assert_int_equal(record_of(testutil_cache_dir).entries, 1);
  assert_total_matches_disk(testutil_cache_dir);
  assert_int_equal(uopc_cache_discard_dir(&c, dir), 0);   /* gone: nothing moved */
  assert_int_equal(record_of(testutil_cache_dir).entries, 1);
}

/* The lock and the stats file of a directory whose path leaves no room for their names. */
static void test_cache_lock_and_record_refuse_a_directory_past_path_max(void **state) {
  (void)state;
  char *dir = long_path(testutil_cache_dir, PATH_MAX - 3 - strlen(testutil_cache_dir)), want[PATH_MAX + 16];
  snprintf(want, sizeof want, "path '%.100s", dir);
  uopc_error err = {0};
  int fd = 7;
  assert_uopc_code(uopc_cache_lock(dir, &fd, &err), UOPC_E_IO, err);
  assert_int_equal(fd, -1);
  assert_cut_message(err.message, want);
  uopc_error_clear(&err);
  uopc_cache_record r = {.known = 1, .entries = 1};
  assert_uopc_code(uopc_cache_record_write(dir, &r, &err), UOPC_E_IO, err);
  assert_cut_message(err.message, want);
  free(dir);
}

/* A stats file with events but no total (or half of one) leaves the total unknown, so that it is
 * counted from the disk, and print shows the count, not the zeros of a total never read. */
static void test_cache_record_read_without_a_total_leaves_it_unknown(void **state) {
  (void)state;
  char stats[PATH_MAX + 8];
  assert_int_equal(build_tag("no-total-a", NULL, NULL), 0);
  assert_int_equal(build_tag("no-total-b", NULL, NULL), 0);
  uopc_cache_stats_flush();
  snprintf(stats, sizeof stats, "%s/stats", testutil_cache_dir);
  static const char *const texts[] = {"hits=5\n", "entries=2\nhits=5\n", "bytes=8192\nhits=5\n"};
  for (size_t i = 0; i < sizeof texts / sizeof *texts; i++) {
    uopc_error err = {0};
    assert_uopc_ok(uopc_write_file(stats, texts[i], strlen(texts[i]), &err), err);
    uopc_cache_record r = record_of(testutil_cache_dir);
    if (r.known != 0 || r.events[UOPC_CACHE_HITS] != 5)
      fail_msg("'%s': known %d, hits %lld; expected 0 and 5", texts[i], r.known, (long long)r.events[UOPC_CACHE_HITS]);
    char *text = printed(testutil_cache_dir, 500LL << 20);
    assert_contains(text, "\nentries                    2\n");
    assert_contains(text, "\nhits                       5\n");
    free(text);
  }
}

/* With stdin closed, the stats file opens as descriptor 0, a valid one: the record is written. */
static void test_cache_record_write_writes_through_descriptor_0(void **state) {
  (void)state;
  uopc_cache_record r = {.known = 1, .entries = 3, .bytes = 12288};
  r.events[UOPC_CACHE_EVICTIONS] = 4;
  uopc_error err = {0};
  int saved = dup(0);
  assert_true(saved > 0);
  close(0);
  int rc = uopc_cache_record_write(testutil_cache_dir, &r, &err);
  assert_int_equal(dup2(saved, 0), 0);   /* stdin back before any assertion can stop the test */
  close(saved);
  assert_uopc_ok(rc, err);
  uopc_cache_record got = record_of(testutil_cache_dir);
  assert_int_equal(got.known, 1);
  assert_int_equal(got.entries, 3);
  assert_int_equal(got.bytes, 12288);
  assert_int_equal(got.events[UOPC_CACHE_EVICTIONS], 4);
}

/* A file past 64 MiB (sparse here: no disk used) is refused by size before a byte is read. */
static void test_cache_read_file_refuses_a_file_past_64_MiB(void **state) {
  (void)state;
  char path[PATH_MAX + 8], want[PATH_MAX + 96];
  snprintf(path, sizeof path, "%s/huge", testutil_cache_dir);
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
  assert_true(fd >= 0);
  assert_int_equal(ftruncate(fd, (64 << 20) + 1), 0);
  close(fd);
  char *data = NULL;
  size_t n = 0;
  uopc_error err = {0};
  assert_uopc_code(uopc_read_file(path, &data, &n, &err), UOPC_E_IO, err);
  snprintf(want, sizeof want, "'%s' is larger than %d bytes, or cannot be read", path, 64 << 20);
  assert_string_equal(err.message, want);
  assert_null(data);
  /* exactly 64 MiB is still read */
  assert_int_equal(truncate(path, 64 << 20), 0);
  assert_uopc_ok(uopc_read_file(path, &data, &n, &err), err);
  assert_int_equal(n, 64 << 20);
  free(data);
}

/* Entries used at the same instant, to the nanosecond, go in name order, so that every process
 * evicts the same one. The pair is one readdir lists in the other order (when there is one). */
static void test_cache_evicts_entries_used_at_the_same_instant_by_name(void **state) {
  (void)state;
  char dirs[3][PATH_MAX];
  const char *listed[3];
  int n = 0;
  assert_int_equal(build_tag("tie-a", dirs[0], NULL), 0);
  assert_int_equal(build_tag("tie-b", dirs[1], NULL), 0);
  assert_int_equal(build_tag("tie-c", dirs[2], NULL), 0);
  DIR *d = opendir(testutil_cache_dir);
  assert_non_null(d);
  for (struct dirent *e; (e = readdir(d));)
    for (int i = 0; i < 3; i++)
      if (strcmp(e->d_name, strrchr(dirs[i], '/') + 1) == 0) listed[n++] = dirs[i];
  closedir(d);
  assert_int_equal(n, 3);
  int first = 0, second = 1;   /* a pair listed out of name order, else the first two */
  for (int i = 0; i < 3; i++)
    for (int j = i + 1; j < 3; j++)
      if (strcmp(listed[i], listed[j]) > 0) first = i, second = j;
  time_t then = time(NULL) - 1000;
  struct timespec tie[2] = {{then, 500}, {then, 500}}, later[2] = {{then + 10, 0}, {then + 10, 0}};
  for (int i = 0; i < 3; i++)
    assert_int_equal(utimensat(AT_FDCWD, listed[i], i == first || i == second ? tie : later, 0), 0);
  const char *smaller = strcmp(listed[first], listed[second]) < 0 ? listed[first] : listed[second];
  const char *larger = smaller == listed[first] ? listed[second] : listed[first];
  /* room for three and a half entries: the fourth is past it, and evicting one gets below 90 % */
  int64_t three = record_of(testutil_cache_dir).bytes;
  set_limit(three + three / 6);
  assert_int_equal(build_tag("tie-d", NULL, NULL), 0);
  assert_int_equal(access(smaller, F_OK), -1);
  assert_int_equal(access(larger, F_OK), 0);
  assert_int_equal(access(listed[3 - first - second], F_OK), 0);
}

/* ---- branches no other case takes: odd environments, damaged entries, edges ------------------- */

/* Without UOPC_CACHE_DIR at all (not just empty), XDG_CACHE_HOME decides; without that too,
 * a HOME that is set decides. */
static void test_cache_resolve_with_the_variables_unset_takes_xdg_then_home(void **state) {
  (void)state;
  char *cache_dir = swap_env("UOPC_CACHE_DIR", NULL), *xdg = swap_env("XDG_CACHE_HOME", "/xdg/cache"),
       *home = swap_env("HOME", "/home/someone");
  char got_xdg[PATH_MAX], got_home[PATH_MAX];
  uopc_error err = {0};
  int rc_xdg = uopc_cache_resolve(NULL, got_xdg, &err);
  unsetenv("XDG_CACHE_HOME");
  int rc_home = uopc_cache_resolve(NULL, got_home, &err);
  restore_env("UOPC_CACHE_DIR", cache_dir);
  restore_env("XDG_CACHE_HOME", xdg);
  restore_env("HOME", home);
  assert_uopc_ok(rc_xdg, err);
  assert_string_equal(got_xdg, "/xdg/cache/uopc");
  assert_uopc_ok(rc_home, err);
  assert_string_equal(got_home, "/home/someone/.cache/uopc");
}

/* A cache path that is a regular file, or a symbolic link to nothing (mkdir says EEXIST for
 * both), is refused by name, not used. */
static void test_cache_open_refuses_a_file_and_a_dangling_link(void **state) {
  (void)state;
  char file[PATH_MAX + 16], link[PATH_MAX + 16], want[2 * PATH_MAX];
  uopc_cache c;
  uopc_error err = {0};
  snprintf(file, sizeof file, "%s/plain", testutil_cache_dir);
  assert_uopc_ok(uopc_write_file(file, "x", 1, &err), err);
  assert_uopc_code(uopc_cache_open(&c, file, &err), UOPC_E_IO, err);
  snprintf(want, sizeof want, "cache path '%s' is not a directory", file);
  assert_string_equal(err.message, want);
  snprintf(link, sizeof link, "%s/dangling", testutil_cache_dir);
  assert_int_equal(symlink("/nonexistent/uopc-cache", link), 0);
  uopc_error_clear(&err);
  assert_uopc_code(uopc_cache_open(&c, link, &err), UOPC_E_IO, err);
  snprintf(want, sizeof want, "cannot stat cache directory '%s': No such file or directory", link);
  assert_string_equal(err.message, want);
}

/* The advice for a shared (sticky) directory names a private one after $USER, or, with USER unset
 * or empty, after the passwd entry's name (else the uid). */
static void test_cache_open_advice_names_user_then_passwd_entry(void **state) {
  (void)state;
  char shared[PATH_MAX + 16], want[3 * PATH_MAX], who[64];
  snprintf(shared, sizeof shared, "%s/shared", testutil_cache_dir);
  assert_int_equal(mkdir(shared, 0700), 0);
  assert_int_equal(chmod(shared, 01777), 0);
  struct passwd *pw = getpwuid(geteuid());
  if (pw) snprintf(who, sizeof who, "%s", pw->pw_name);
  else snprintf(who, sizeof who, "%u", (unsigned)geteuid());
  const char *users[] = {"someone", "", NULL};
  for (int i = 0; i < 3; i++) {
    char *saved = swap_env("USER", users[i]);
    uopc_cache c;
    uopc_error err = {0};
    int rc = uopc_cache_open(&c, shared, &err);
    restore_env("USER", saved);
    assert_uopc_code(rc, UOPC_E_UNSAFE_CACHE, err);
    const char *name = i == 0 ? "someone" : who;
    snprintf(want, sizeof want, "Fix: mkdir -m 700 '%s/uopc-%s' and set UOPC_CACHE_DIR='%s/uopc-%s'", shared, name,
             shared, name);
    assert_contains(err.message, want);
  }
}

/* A discard that cannot take the lock (its path is a directory) still moves the entry out; the
 * total is left for the next count to mend. */
static void test_cache_discard_without_the_lock_moves_the_entry_and_keeps_the_total(void **state) {
  (void)state;
  char dir[PATH_MAX], lock[PATH_MAX + 16];
  uopc_cache c;
  uopc_error err = {0};
  assert_int_equal(build_tag("nolock-a", dir, NULL), 0);
  assert_int_equal(build_tag("nolock-b", NULL, NULL), 0);
  assert_uopc_ok(uopc_cache_open(&c, testutil_cache_dir, &err), err);
  snprintf(lock, sizeof lock, "%s/lock", testutil_cache_dir);
  assert_int_equal(unlink(lock), 0);
  assert_int_equal(mkdir(lock, 0700), 0);
  assert_int_equal(uopc_cache_discard_dir(&c, dir), 1);
  assert_int_equal(access(dir, F_OK), -1);
  assert_int_equal(record_of(testutil_cache_dir).entries, 2);   /* not counted: no lock */
}

/* Run as "test_cache --discard CACHE ENTRY_DIR": a fresh process, whose debug level is read from
 * the environment it was started with (the level is read once a process). */
static int discard_in_a_new_process(const char *cache_dir, const char *entry_dir) {
  uopc_cache c;
  uopc_error err = {0};
  if (uopc_cache_open(&c, cache_dir, &err) != UOPC_OK) return 2;
  return uopc_cache_discard_dir(&c, entry_dir) == 1 ? 0 : 1;
}

/* The discard that cannot count says so at UOPC_DEBUG=2: the entry first, then why. In a new
 * process (exec of this test) with stderr into a file. */
static void test_cache_discard_without_the_lock_says_which_entry_is_not_counted(void **state) {
  (void)state;
  char dir[PATH_MAX], lock[PATH_MAX + 16], log[PATH_MAX + 16];
  assert_int_equal(build_tag("nolock-debug", dir, NULL), 0);
  snprintf(lock, sizeof lock, "%s/lock", testutil_cache_dir);
  assert_int_equal(unlink(lock), 0);
  assert_int_equal(mkdir(lock, 0700), 0);
  snprintf(log, sizeof log, "%s/stderr", testutil_cache_dir);
  fflush(NULL);
  pid_t pid = fork();
  if (pid == 0) {
    int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (fd < 0 || dup2(fd, 2) < 0) _exit(126);
    setenv("UOPC_DEBUG", "2", 1);
    execl("/proc/self/exe", "test_cache", "--discard", testutil_cache_dir, dir, (char *)NULL);
    _exit(127);
  }
  int status;
  assert_int_equal(waitpid(pid, &status, 0), pid);
  assert_true(WIFEXITED(status));
  assert_int_equal(WEXITSTATUS(status), 0);
  assert_int_equal(access(dir, F_OK), -1);
  char *text = NULL;
  size_t n;
  uopc_error err = {0};
  assert_uopc_ok(uopc_read_file(log, &text, &n, &err), err);
  char want[3 * PATH_MAX];
  snprintf(want, sizeof want, "uopc: the cache's total is not updated for '%s': cannot open the cache's lock '%s': "
           "Is a directory\n", dir, lock);
  if (!strstr(text, want)) fail_msg("no line '%s' in:\n%s", want, text);
  free(text);
}

/* A discard whose new total is still past the limit evicts too, and leaves no trash behind. */
static void test_cache_discard_past_the_limit_evicts_the_rest(void **state) {
  (void)state;
  char a[PATH_MAX], b[PATH_MAX], tmp[PATH_MAX + 8];
  uopc_cache c;
  uopc_error err = {0};
  assert_int_equal(build_tag("over-a", a, NULL), 0);
  assert_int_equal(build_tag("over-b", b, NULL), 0);
  assert_uopc_ok(uopc_cache_open(&c, testutil_cache_dir, &err), err);
  c.max_size = 1;
  assert_int_equal(uopc_cache_discard_dir(&c, a), 1);
  assert_int_equal(access(b, F_OK), -1);
  assert_int_equal(record_of(testutil_cache_dir).entries, 0);
  snprintf(tmp, sizeof tmp, "%s/tmp", testutil_cache_dir);
  DIR *d = opendir(tmp);
  assert_non_null(d);
  int left = 0;
  for (struct dirent *e; (e = readdir(d));) left += e->d_name[0] != '.';
  closedir(d);
  assert_int_equal(left, 0);
}

/* uopc_cache_discard by entry and key: 1 when it moved the entry, 0 when none is there or its
 * path cannot be made. */
static void test_cache_discard_by_key(void **state) {
  (void)state;
  char dir[PATH_MAX];
  uopc_cache c;
  uopc_error err = {0};
  assert_int_equal(build_tag("by-key", dir, NULL), 0);
  assert_uopc_ok(uopc_cache_open(&c, testutil_cache_dir, &err), err);
  const char *key = strrchr(dir, '-') + 1;
  char *entry = long_path("e", PATH_MAX);
  assert_int_equal(uopc_cache_discard(&c, entry, key), 0);
  free(entry);
  assert_int_equal(access(dir, F_OK), 0);
  assert_int_equal(uopc_cache_discard(&c, "square", key), 1);
  assert_int_equal(access(dir, F_OK), -1);
  assert_int_equal(uopc_cache_discard(&c, "square", key), 0);
}

/* ---- damaged entries: each is a miss, counted as corrupted, and moved out ---- */

typedef void (*damage_fn)(const char *dir);

static void rewrite(const char *dir, const char *name, const char *text) {
  char path[PATH_MAX + 16];
  uopc_error err = {0};
  snprintf(path, sizeof path, "%s/%s", dir, name);
  assert_uopc_ok(uopc_write_file(path, text, strlen(text), &err), err);
}

/* The manifest line by line, with line `name` replaced by `line` (NULL: dropped); no final
 * newline when cut is set. */
static void edit_manifest(const char *dir, const char *name, const char *line, int cut) {
  char path[PATH_MAX + 16], *text, out[4096] = "";
  size_t n;
  snprintf(path, sizeof path, "%s/manifest", dir);
  text = read_all(path, &n);
  for (char *l = strtok(text, "\n"); l; l = strtok(NULL, "\n")) {
    const char *put = strncmp(l, name, strlen(name)) == 0 && l[strlen(name)] == '=' ? line : l;
    if (put) snprintf(out + strlen(out), sizeof out - strlen(out), "%s\n", put);
  }
  free(text);
  if (cut && *out) out[strlen(out) - 1] = '\0';
  rewrite(dir, "manifest", out);
}

static void other_key(const char *dir) {
  edit_manifest(dir, "key", "key=0000000000000000000000000000000000000000000000000000000000000000", 0);
}
static void overlong_key(const char *dir) {
  char line[300] = "key=";
  memset(line + 4, 'f', 200);
  line[204] = '\0';
  edit_manifest(dir, "key", line, 0);
}
static void no_hash_no_final_newline(const char *dir) { edit_manifest(dir, "artifact_sha256", NULL, 1); }
static void no_manifest(const char *dir) {
  char path[PATH_MAX + 16];
  snprintf(path, sizeof path, "%s/manifest", dir);
  assert_int_equal(unlink(path), 0);
}
/* Same size, one byte changed: only the hash can tell. */
static void flipped_byte(const char *dir) {
  char path[PATH_MAX + 16];
  snprintf(path, sizeof path, "%s/kernel.so", dir);
  int fd = open(path, O_RDWR);
  assert_true(fd >= 0);
  unsigned char b;
  assert_int_equal(pread(fd, &b, 1, 100), 1);
  b ^= 0xff;
  assert_int_equal(pwrite(fd, &b, 1, 100), 1);
  close(fd);
}

static void test_cache_lookup_discards_damaged_entries(void **state) {
  (void)state;
  const damage_fn damage[] = {other_key, overlong_key, no_hash_no_final_newline, no_manifest, flipped_byte};
  for (size_t i = 0; i < sizeof damage / sizeof *damage; i++) {
    char tag[32], dir[PATH_MAX], path[PATH_MAX];
    snprintf(tag, sizeof tag, "damaged-%zu", i);
    assert_int_equal(build_tag(tag, dir, NULL), 0);
    uopc_cache c;
    uopc_error err = {0};
    assert_uopc_ok(uopc_cache_open(&c, testutil_cache_dir, &err), err);
    const char *key = strrchr(dir, '-') + 1;
    assert_int_equal(uopc_cache_lookup(&c, "square", key, "kernel.so", path, &err), 1);
    damage[i](dir);
    int64_t corrupted = uopc_counter_get(UOPC_C_CORRUPTED_REBUILT);
    int64_t misses = uopc_counter_get(UOPC_C_DISK_CACHE_MISSES);
    int got = uopc_cache_lookup(&c, "square", key, "kernel.so", path, &err);
    if (got != 0) fail_msg("damage %zu: lookup gave %d, expected 0 (a miss)", i, got);
    assert_int_equal(uopc_counter_get(UOPC_C_CORRUPTED_REBUILT) - corrupted, 1);
    assert_int_equal(uopc_counter_get(UOPC_C_DISK_CACHE_MISSES) - misses, 1);
    assert_int_equal(access(dir, F_OK), -1);
  }
}

/* An entry whose path fits but whose manifest's, or artifact's, does not: an error, not a miss. */
static void test_cache_lookup_refuses_a_manifest_or_artifact_path_past_path_max(void **state) {
  (void)state;
  static const char key[] = "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff";
  uopc_cache c;
  uopc_error err = {0};
  char path[PATH_MAX];
  assert_uopc_ok(uopc_cache_open(&c, testutil_cache_dir, &err), err);
  size_t base = strlen(testutil_cache_dir) + 1 + 1 + strlen(key);   /* "<dir>/" "<entry>" "-<key>" */
  char *entry = long_path("e", PATH_MAX - 6 - base - 2);   /* the entry's path: 4090 bytes */
  char want[PATH_MAX + 16];
  snprintf(want, sizeof want, "path '%s/e/aaaa", testutil_cache_dir);
  assert_int_equal(uopc_cache_lookup(&c, entry, key, "a", path, &err), -1);
  assert_int_equal(err.code, UOPC_E_INVALID);
  assert_cut_message(err.message, want);
  free(entry);
  entry = long_path("e", PATH_MAX - 16 - base - 2);   /* 4080: the manifest fits, a 20-byte artifact not */
  uopc_error_clear(&err);
  assert_int_equal(uopc_cache_lookup(&c, entry, key, "aaaaaaaaaaaaaaaaaaaa", path, &err), -1);
  assert_int_equal(err.code, UOPC_E_INVALID);
  assert_cut_message(err.message, want);
  free(entry);
}

/* No tmp/ (removed by hand): staging fails, naming it. */
static void test_cache_stage_without_tmp_fails(void **state) {
  (void)state;
  char tmp[PATH_MAX + 8], staging[PATH_MAX], want[2 * PATH_MAX];
  uopc_cache c;
  uopc_error err = {0};
  assert_uopc_ok(uopc_cache_open(&c, testutil_cache_dir, &err), err);
  snprintf(tmp, sizeof tmp, "%s/tmp", testutil_cache_dir);
  assert_int_equal(rmdir(tmp), 0);
  assert_uopc_code(uopc_cache_stage(&c, staging, &err), UOPC_E_IO, err);
  snprintf(want, sizeof want, "cannot create a staging directory in '%s/tmp': No such file or directory",
           testutil_cache_dir);
  assert_string_equal(err.message, want);
}

/* A publish whose artifact the build did not make, or whose artifact's name does not fit, fails
 * and removes the staging directory; one without a description writes the manifest's own lines. */
static void test_cache_publish_checks_the_artifact_and_takes_no_description(void **state) {
  (void)state;
  static const char key[] = "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff";
  char staging[PATH_MAX], path[PATH_MAX], want[2 * PATH_MAX], file[2 * PATH_MAX];
  uopc_cache c;
  uopc_error err = {0};
  assert_uopc_ok(uopc_cache_open(&c, testutil_cache_dir, &err), err);
  assert_uopc_ok(uopc_cache_stage(&c, staging, &err), err);
  assert_uopc_code(uopc_cache_publish(&c, staging, "k", key, "kernel.so", NULL, path, &err), UOPC_E_IO, err);
  snprintf(want, sizeof want, "artifact '%s/kernel.so' is missing after the build: No such file or directory", staging);
  assert_string_equal(err.message, want);
  assert_int_equal(access(staging, F_OK), -1);
  assert_uopc_ok(uopc_cache_stage(&c, staging, &err), err);
  char *artifact = long_path("a", PATH_MAX);
  uopc_error_clear(&err);
  assert_uopc_code(uopc_cache_publish(&c, staging, "k", key, artifact + 2, NULL, path, &err), UOPC_E_INVALID, err);
  free(artifact);
  assert_int_equal(access(staging, F_OK), -1);
  assert_uopc_ok(uopc_cache_stage(&c, staging, &err), err);
  snprintf(file, sizeof file, "%s/a.out", staging);
  assert_uopc_ok(uopc_write_file(file, "abc", 3, &err), err);
  assert_uopc_ok(uopc_cache_publish(&c, staging, "k", key, "a.out", NULL, path, &err), err);
  snprintf(file, sizeof file, "%s/k-%s/manifest", testutil_cache_dir, key);
  snprintf(want, sizeof want,
           "key=%s\nentry=k\nartifact=a.out\nartifact_size=3\n"
           "artifact_sha256=ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad\n", key);
  assert_file_holds(file, want, strlen(want));
}

/* A failed build whose staging directory is gone, or whose cache has no room for failed/ (its
 * directory removed), is named where it was. */
static void test_cache_keep_failed_leaves_what_it_cannot_move(void **state) {
  (void)state;
  char staging[PATH_MAX], kept[PATH_MAX], gone[PATH_MAX + 16];
  uopc_cache c;
  uopc_error err = {0};
  assert_uopc_ok(uopc_cache_open(&c, testutil_cache_dir, &err), err);
  snprintf(gone, sizeof gone, "%s/tmp/stage-gone", testutil_cache_dir);
  uopc_cache_keep_failed(&c, gone, "e", "0123", kept);
  assert_string_equal(kept, gone);
  assert_uopc_ok(uopc_cache_stage(&c, staging, &err), err);
  char no_cache[PATH_MAX + 16];
  snprintf(no_cache, sizeof no_cache, "%s/no/such/cache", testutil_cache_dir);
  memcpy(c.dir, no_cache, strlen(no_cache) + 1);   /* a short path: it fits */
  uopc_cache_keep_failed(&c, staging, "e", "0123", kept);
  assert_string_equal(kept, staging);
  assert_int_equal(access(staging, F_OK), 0);
}

/* A directory (read fails: EISDIR) and a /proc file (its size says 0, it holds more) are not read whole. */
static void test_cache_read_file_refuses_a_directory_and_a_growing_file(void **state) {
  (void)state;
  char dir[PATH_MAX + 8], file[PATH_MAX + 16], want[2 * PATH_MAX], *data = NULL;
  size_t n;
  uopc_error err = {0};
  snprintf(dir, sizeof dir, "%s/d", testutil_cache_dir);
  assert_int_equal(mkdir(dir, 0700), 0);
  snprintf(file, sizeof file, "%s/child", dir);
  assert_uopc_ok(uopc_write_file(file, "x", 1, &err), err);
  struct stat st;
  assert_int_equal(stat(dir, &st), 0);
  if (st.st_size > 0) {   /* a directory of size 0 (some file systems) reads as empty */
    assert_uopc_code(uopc_read_file(dir, &data, &n, &err), UOPC_E_IO, err);
    snprintf(want, sizeof want, "cannot read '%s' whole", dir);
    assert_string_equal(err.message, want);
  }
  uopc_error_clear(&err);
  assert_uopc_code(uopc_read_file("/proc/self/status", &data, &n, &err), UOPC_E_IO, err);
  assert_string_equal(err.message, "cannot read '/proc/self/status' whole");
  assert_null(data);
}

/* A write the device refuses (ENOSPC from /dev/full) fails with the device's reason. */
static void test_cache_write_file_fails_on_a_full_device(void **state) {
  (void)state;
  uopc_error err = {0};
  assert_uopc_code(uopc_write_file("/dev/full", "abc", 3, &err), UOPC_E_IO, err);
  assert_string_equal(err.message, "cannot write '/dev/full': No space left on device");
}

/* ---- entry names, listing, the total ---- */

static void test_cache_entry_name_is_an_entry_a_dash_and_64_hex_digits(void **state) {
  (void)state;
  char name[UOPC_ENTRY_MAX + 1 + 64 + 2];
  memset(name, 'e', UOPC_ENTRY_MAX);
  name[UOPC_ENTRY_MAX] = '-';
  memset(name + UOPC_ENTRY_MAX + 1, 'a', 64);
  name[UOPC_ENTRY_MAX + 65] = '\0';
  assert_int_equal(uopc_cache_is_entry_name(name), 1);
  memmove(name + 1, name, strlen(name) + 1);   /* one byte longer than an entry name can be */
  assert_int_equal(uopc_cache_is_entry_name(name), 0);
  memset(name, 'a', 66);   /* long enough, but no '-' before the key */
  name[66] = '\0';
  assert_int_equal(uopc_cache_is_entry_name(name), 0);
  name[1] = '-';
  assert_int_equal(uopc_cache_is_entry_name(name), 1);
}

static void make_fake_entry(const char *cache, int i, int as_file) {
  char path[PATH_MAX + 128];
  snprintf(path, sizeof path, "%s/fake%04d-%064d", cache, i, i);
  if (as_file) {
    uopc_error err = {0};
    assert_uopc_ok(uopc_write_file(path, "x", 1, &err), err);
  } else {
    assert_int_equal(mkdir(path, 0700), 0);
  }
}

/* A scan counts directories named as entries only (a file so named is not one), and a missing
 * cache directory is an error that names it. */
static void test_cache_scan_counts_entry_directories_only(void **state) {
  (void)state;
  uopc_cache_record r = {0};
  uopc_error err = {0};
  make_fake_entry(testutil_cache_dir, 1, 0);
  make_fake_entry(testutil_cache_dir, 2, 1);
  assert_uopc_ok(uopc_cache_scan(testutil_cache_dir, &r, &err), err);
  assert_int_equal(r.entries, 1);
  assert_int_equal(r.known, 1);
  char gone[PATH_MAX + 8], want[2 * PATH_MAX];
  snprintf(gone, sizeof gone, "%s/gone", testutil_cache_dir);
  assert_uopc_code(uopc_cache_scan(gone, &r, &err), UOPC_E_IO, err);
  snprintf(want, sizeof want, "cannot read cache directory '%s': No such file or directory", gone);
  assert_string_equal(err.message, want);
}

/* More entries than the first listing holds (256): the list grows and every one is evicted. */
static void test_cache_evicts_more_entries_than_the_first_listing_holds(void **state) {
  (void)state;
  char trash[PATH_MAX];
  for (int i = 0; i < 300; i++) make_fake_entry(testutil_cache_dir, i, 0);
  uopc_cache c;
  uopc_error err = {0};
  assert_uopc_ok(uopc_cache_open(&c, testutil_cache_dir, &err), err);
  c.max_size = 1;
  int64_t evictions = uopc_counter_get(UOPC_C_CACHE_EVICTIONS);
  int rc = uopc_cache_account(&c, 0, 0, NULL, trash, &err);
  if (*trash) testutil_remove_tree(trash);
  assert_uopc_ok(rc, err);
  assert_int_equal(uopc_counter_get(UOPC_C_CACHE_EVICTIONS) - evictions, 300);
  assert_int_equal(record_of(testutil_cache_dir).entries, 0);
}

/* A total that claims more than the disk holds is counted again; past the limit no longer, it
 * evicts nothing. */
static void test_cache_account_recounts_an_overstated_total_and_evicts_nothing(void **state) {
  (void)state;
  char dir[PATH_MAX], stats[PATH_MAX + 8], trash[PATH_MAX];
  assert_int_equal(build_tag("overstated", dir, NULL), 0);
  snprintf(stats, sizeof stats, "%s/stats", testutil_cache_dir);
  static const char over[] = "entries=9\nbytes=999999999\n";
  uopc_error err = {0};
  assert_uopc_ok(uopc_write_file(stats, over, sizeof over - 1, &err), err);
  uopc_cache c;
  assert_uopc_ok(uopc_cache_open(&c, testutil_cache_dir, &err), err);
  c.max_size = 100000000;
  assert_uopc_ok(uopc_cache_account(&c, 0, 0, NULL, trash, &err), err);
  assert_string_equal(trash, "");
  assert_int_equal(access(dir, F_OK), 0);
  assert_int_equal(record_of(testutil_cache_dir).entries, 1);
  assert_total_matches_disk(testutil_cache_dir);
}

/* A byte total that goes negative while the entry count does not is counted afresh. */
static void test_cache_account_counts_afresh_when_bytes_go_negative(void **state) {
  (void)state;
  account_after_a_stale_total("negative-bytes", "entries=5\nbytes=100\n", 0, -4096);
}

/* keep may be an entry's bare name as well as its path: that entry is spared. */
static void test_cache_eviction_spares_an_entry_named_without_its_path(void **state) {
  (void)state;
  char a[PATH_MAX], b[PATH_MAX], trash[PATH_MAX];
  assert_int_equal(build_tag("bare-a", a, NULL), 0);
  assert_int_equal(build_tag("bare-b", b, NULL), 0);
  uopc_cache c;
  uopc_error err = {0};
  assert_uopc_ok(uopc_cache_open(&c, testutil_cache_dir, &err), err);
  c.max_size = 1;
  int rc = uopc_cache_account(&c, 0, 0, strrchr(a, '/') + 1, trash, &err);
  if (*trash) testutil_remove_tree(trash);
  assert_uopc_ok(rc, err);
  assert_int_equal(access(a, F_OK), 0);
  assert_int_equal(access(b, F_OK), -1);
}

/* A cache directory that is gone (no stats, nothing to count): the count's error, nothing written. */
static void test_cache_account_of_a_gone_directory_fails_and_writes_nothing(void **state) {
  (void)state;
  char trash[PATH_MAX], want[2 * PATH_MAX], stats[PATH_MAX + 16];
  uopc_cache c;
  uopc_error err = {0};
  assert_uopc_ok(uopc_cache_open(&c, testutil_cache_dir, &err), err);
  char gone[PATH_MAX + 16];
  snprintf(gone, sizeof gone, "%s/gone", testutil_cache_dir);
  memcpy(c.dir, gone, strlen(gone) + 1);   /* a short path: it fits */
  assert_uopc_code(uopc_cache_account(&c, 1, 4096, NULL, trash, &err), UOPC_E_IO, err);
  snprintf(want, sizeof want, "cannot read cache directory '%s': No such file or directory", c.dir);
  assert_string_equal(err.message, want);
  snprintf(stats, sizeof stats, "%s/stats", c.dir);
  assert_int_equal(access(stats, F_OK), -1);
}

/* ---- the size, the stats file, printing ---- */

/* So many digits that the value passes 2^60 before the last: refused, never overflowed. */
static void test_cache_parse_size_refuses_twenty_one_digits(void **state) {
  (void)state;
  int64_t bytes = 7;
  uopc_error err = {0};
  assert_uopc_code(uopc_cache_parse_size("X", "100000000000000000000", &bytes, &err), UOPC_E_INVALID, err);
  assert_string_equal(err.message, "X = '100000000000000000000' is larger than 1048576T (2^60 bytes)");
  assert_int_equal(bytes, 7);
}

/* Twenty digits: the last one takes the value past int64_t's range (10^19 > 2^63); it is refused,
 * not wrapped to a negative limit. */
static void test_cache_parse_size_refuses_twenty_digits_past_int64(void **state) {
  (void)state;
  static const char *const sizes[] = {"10000000000000000000", "9999999999999999999", "1152921504606846976000"};
  for (int i = 0; i < 3; i++) {
    int64_t bytes = 7;
    uopc_error err = {0};
    char want[160];
    assert_uopc_code(uopc_cache_parse_size("X", sizes[i], &bytes, &err), UOPC_E_INVALID, err);
    snprintf(want, sizeof want, "X = '%s' is larger than 1048576T (2^60 bytes)", sizes[i]);
    assert_string_equal(err.message, want);
    assert_int_equal(bytes, 7);
  }
  int64_t bytes = 0;
  uopc_error err = {0};
  assert_uopc_ok(uopc_cache_parse_size("X", "1152921504606846976", &bytes, &err), err);   /* 2^60 itself */
  assert_int_equal(bytes, (int64_t)1 << 60);
}

/* A staging or trash directory a day old (a build or an eviction that died) is swept by the next
 * staging; a newer one, and any other name, stays. */
static void test_cache_stage_sweeps_day_old_stage_and_trash_directories(void **state) {
  (void)state;
  static const char *const names[] = {"stage-old", "trash-old", "stage-new", "other-old"};
  char path[4][PATH_MAX + 32], staging[PATH_MAX];
  for (int i = 0; i < 4; i++) {
    snprintf(path[i], sizeof path[i], "%s/tmp/%s", testutil_cache_dir, names[i]);
  }
  uopc_cache c;
  uopc_error err = {0};
  assert_uopc_ok(uopc_cache_open(&c, testutil_cache_dir, &err), err);
  for (int i = 0; i < 4; i++) {
    assert_int_equal(mkdir(path[i], 0700), 0);
    if (i != 2) set_used(path[i], time(NULL) - 2 * 24 * 60 * 60);
  }
  assert_uopc_ok(uopc_cache_stage(&c, staging, &err), err);
  assert_int_equal(access(path[0], F_OK), -1);
  assert_int_equal(access(path[1], F_OK), -1);
  assert_int_equal(access(path[2], F_OK), 0);
  assert_int_equal(access(path[3], F_OK), 0);
}

/* A key that only starts with the one asked for ("entries2=") is another key. */
static void test_cache_record_read_skips_keys_that_only_share_a_prefix(void **state) {
  (void)state;
  char stats[PATH_MAX + 8];
  snprintf(stats, sizeof stats, "%s/stats", testutil_cache_dir);
  static const char text[] = "entries2=9\nentries=3\nbytesx=1\nbytes=4096\nhits_old=5\nhits=2\n";
  uopc_error err = {0};
  assert_uopc_ok(uopc_write_file(stats, text, sizeof text - 1, &err), err);
  uopc_cache_record r = record_of(testutil_cache_dir);
  assert_int_equal(r.known, 1);
  assert_int_equal(r.entries, 3);
  assert_int_equal(r.bytes, 4096);
  assert_int_equal(r.events[UOPC_CACHE_HITS], 2);
}

/* A directory whose stats path does not fit reads as no record. */
static void test_cache_record_read_of_a_directory_past_path_max_is_unknown(void **state) {
  (void)state;
  char *dir = long_path(testutil_cache_dir, PATH_MAX - 3 - strlen(testutil_cache_dir));
  uopc_cache_record r = {.known = 1, .entries = 5};
  uopc_cache_record_read(dir, &r);
  free(dir);
  assert_int_equal(r.known, 0);
  assert_int_equal(r.entries, 0);
}

/* A stats file that cannot be written in place (a FIFO: no pwrite) or cut to length (a link to
 * /dev/null: no ftruncate) fails with the reason. */
static void test_cache_record_write_fails_where_stats_cannot_be_rewritten(void **state) {
  (void)state;
  char stats[PATH_MAX + 8], want[2 * PATH_MAX];
  snprintf(stats, sizeof stats, "%s/stats", testutil_cache_dir);
  assert_int_equal(mkfifo(stats, 0600), 0);
  uopc_cache_record r = {.known = 1, .entries = 1};
  uopc_error err = {0};
  assert_uopc_code(uopc_cache_record_write(testutil_cache_dir, &r, &err), UOPC_E_IO, err);
  snprintf(want, sizeof want, "cannot write '%s': Illegal seek", stats);
  assert_string_equal(err.message, want);
  assert_int_equal(unlink(stats), 0);
  assert_int_equal(symlink("/dev/null", stats), 0);
  uopc_error_clear(&err);
  assert_uopc_code(uopc_cache_record_write(testutil_cache_dir, &r, &err), UOPC_E_IO, err);
  snprintf(want, sizeof want, "cannot write '%s': Invalid argument", stats);
  assert_string_equal(err.message, want);
}

/* The lock waits out a signal (EINTR from flock) as the shared lock does. */
static void test_cache_lock_waits_out_a_signal(void **state) {
  (void)state;
  struct sigaction sa = {.sa_handler = on_signal}, old;
  sigemptyset(&sa.sa_mask);
  assert_int_equal(sigaction(SIGUSR1, &sa, &old), 0);
  holder h = {.reader = pthread_self()};
  assert_int_equal(sem_init(&h.locked, 0, 0), 0);
  pthread_t t;
  assert_int_equal(pthread_create(&t, NULL, hold_the_lock, &h), 0);
  while (sem_wait(&h.locked) != 0) {}
  int fd;
  uopc_error err = {0};
  int rc = uopc_cache_lock(testutil_cache_dir, &fd, &err);
  uopc_cache_record r = record_of(testutil_cache_dir);   /* written before the holder let go */
  if (rc == UOPC_OK) uopc_cache_unlock(fd);
  pthread_join(t, NULL);
  sigaction(SIGUSR1, &old, NULL);
  sem_destroy(&h.locked);
  assert_false(h.failed);
  assert_uopc_ok(rc, err);
  assert_int_equal(r.events[UOPC_CACHE_HITS], 7);
}

/* Printing: a directory past PATH_MAX or a file is "not created yet"; a total of PiB stays in
 * PiB; a limit set by UOPC_CACHE_MAX_SIZE is shown as set. */
static void test_cache_stats_print_edges(void **state) {
  (void)state;
  char *dir = long_path(testutil_cache_dir, PATH_MAX - 3 - strlen(testutil_cache_dir));
  char *text = printed(dir, 1 << 20);
  free(dir);
  assert_contains(text, " (not created yet)\nentries                    0\n");
  free(text);
  char file[PATH_MAX + 8], stats[PATH_MAX + 8];
  snprintf(file, sizeof file, "%s/file", testutil_cache_dir);
  uopc_error err = {0};
  assert_uopc_ok(uopc_write_file(file, "x", 1, &err), err);
  text = printed(file, 1 << 20);
  assert_contains(text, "/file (not created yet)\n");
  free(text);
  snprintf(stats, sizeof stats, "%s/stats", testutil_cache_dir);
  static const char huge[] = "entries=1\nbytes=2305843009213693952\n";   /* 2^61: 2048 PiB */
  assert_uopc_ok(uopc_write_file(stats, huge, sizeof huge - 1, &err), err);
  setenv("UOPC_CACHE_MAX_SIZE", "2G", 1);
  text = printed(testutil_cache_dir, (int64_t)2 << 30);
  assert_contains(text, "\ntotal size                 2048.0 PiB\n");
  assert_contains(text, "\nlimit                      2.0 GiB (UOPC_CACHE_MAX_SIZE=2G; evicts down to 90 %)\n");
  free(text);
  setenv("UOPC_CACHE_MAX_SIZE", "", 1);
  text = printed(testutil_cache_dir, (int64_t)1 << 30);
  assert_contains(text, "\nlimit                      1.0 GiB (the default; UOPC_CACHE_MAX_SIZE sets it;");
  free(text);
}


/* A path where an entry should be that is a file (not a directory) cannot be moved into a trash
 * directory: a plain miss, not a corrupted entry rebuilt, and the file stays. */
static void test_cache_lookup_of_an_entry_that_will_not_move_is_a_plain_miss(void **state) {
  (void)state;
  static const char key[] = "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff";
  char file[PATH_MAX + 128], path[PATH_MAX];
  uopc_cache c;
  uopc_error err = {0};
  assert_uopc_ok(uopc_cache_open(&c, testutil_cache_dir, &err), err);
  snprintf(file, sizeof file, "%s/k-%s", testutil_cache_dir, key);
  assert_uopc_ok(uopc_write_file(file, "x", 1, &err), err);
  int64_t corrupted = uopc_counter_get(UOPC_C_CORRUPTED_REBUILT);
  int64_t misses = uopc_counter_get(UOPC_C_DISK_CACHE_MISSES);
  assert_int_equal(uopc_cache_lookup(&c, "k", key, "a.out", path, &err), 0);
  assert_int_equal(uopc_counter_get(UOPC_C_CORRUPTED_REBUILT) - corrupted, 0);
  assert_int_equal(uopc_counter_get(UOPC_C_DISK_CACHE_MISSES) - misses, 1);
  assert_int_equal(access(file, F_OK), 0);
}

/* dir, then "/." repeated until the string is at least n bytes long: the same directory, named
 * by a path as long as a test needs. */
static char *padded_path(const char *dir, size_t n) {
  char *p = malloc(n + 3);
  assert_non_null(p);
  snprintf(p, n + 3, "%s", dir);
  while (strlen(p) < n) strcat(p, "/.");
  return p;
}

/* A staging directory whose path leaves room for the artifact's name but not for "manifest" (a
 * name padded with "/.": uopc_cache_stage never makes one so long) fails the publish, naming the
 * path; with no err, the code alone says why, and the staging directory is removed. */
static void test_cache_publish_refuses_a_manifest_path_past_path_max(void **state) {
  (void)state;
  static const char key[] = "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff";
  char staging[PATH_MAX], file[PATH_MAX + 16], path[PATH_MAX];
  uopc_cache c;
  uopc_error err = {0};
  assert_uopc_ok(uopc_cache_open(&c, testutil_cache_dir, &err), err);
  assert_uopc_ok(uopc_cache_stage(&c, staging, &err), err);
  snprintf(file, sizeof file, "%s/a", staging);
  assert_uopc_ok(uopc_write_file(file, "abc", 3, &err), err);
  char *padded = padded_path(staging, PATH_MAX - 4);   /* "/a" fits after it, "/manifest" does not */
  assert_uopc_code(uopc_cache_publish(&c, padded, "k", key, "a", NULL, path, &err), UOPC_E_INVALID, err);
  char want[64];
  snprintf(want, sizeof want, "path '%.40s", staging);
  assert_cut_message(err.message, want);
  free(padded);
  testutil_remove_tree(staging);   /* the runtime's removal of the padded name stops at its last "." */
  assert_uopc_ok(uopc_cache_stage(&c, staging, &err), err);
  char *artifact = long_path("a", PATH_MAX);
  assert_int_equal(uopc_cache_publish(&c, staging, "k", key, artifact, NULL, path, NULL), UOPC_E_INVALID);
  free(artifact);
  assert_int_equal(access(staging, F_OK), -1);
}

/* An entry whose path under a (long) cache directory's name would not fit is not counted. */
static void test_cache_scan_skips_an_entry_whose_path_does_not_fit(void **state) {
  (void)state;
  make_fake_entry(testutil_cache_dir, 1, 0);   /* its name: 73 bytes */
  char *padded = padded_path(testutil_cache_dir, PATH_MAX - 60);
  uopc_cache_record r = {0}, plain = {0};
  uopc_error err = {0};
  assert_uopc_ok(uopc_cache_scan(padded, &r, &err), err);
  free(padded);
  assert_uopc_ok(uopc_cache_scan(testutil_cache_dir, &plain, &err), err);
  assert_int_equal(plain.entries, 1);
  assert_int_equal(r.entries, 0);
}

/* A count of 0, or of an event that is not one, changes nothing: no counter, no pending event. */
static void test_cache_count_ignores_nothing_and_unknown_events(void **state) {
  (void)state;
  int64_t hits = uopc_counter_get(UOPC_C_DISK_CACHE_HITS);
  uopc_cache_count(testutil_cache_dir, UOPC_CACHE_HITS, 0);
  uopc_cache_count(testutil_cache_dir, (uopc_cache_event)-1, 1);
  uopc_cache_count(testutil_cache_dir, UOPC_CACHE_EVENTS, 1);
  assert_int_equal(uopc_counter_get(UOPC_C_DISK_CACHE_HITS) - hits, 0);
  uopc_cache_record r = {.known = 1};
  uopc_error err = {0};
  assert_uopc_ok(uopc_cache_record_write(testutil_cache_dir, &r, &err), err);
  r = record_of(testutil_cache_dir);
  for (int i = 0; i < UOPC_CACHE_EVENTS; i++) assert_int_equal(r.events[i], 0);
}


typedef struct pester { pthread_t target; int times; } pester;

static void *pester_with_signals(void *arg) {
  pester *p = arg;
  for (int k = 0; k < p->times; k++) {
    nanosleep(&(struct timespec){.tv_nsec = 20 * 1000 * 1000}, NULL);
    pthread_kill(p->target, SIGUSR1);
  }
  return NULL;
}

/* A write interrupted by a signal before it wrote anything (a full pipe whose reader is late, a
 * handler without SA_RESTART: EINTR) is tried again: every byte arrives. */
static void test_cache_write_file_goes_on_after_a_signal(void **state) {
  (void)state;
  enum { N = 256 * 1024 };
  char fifo[PATH_MAX + 8];
  snprintf(fifo, sizeof fifo, "%s/fifo", testutil_cache_dir);
  assert_int_equal(mkfifo(fifo, 0600), 0);
  int keep = open(fifo, O_RDWR | O_CLOEXEC);   /* a reader already: the writer's open does not wait */
  assert_true(keep >= 0);
  pid_t pid = fork();
  if (pid == 0) {
    close(keep);   /* else this reader is a writer too, and never sees the end */
    alarm(10);
    int fd = open(fifo, O_RDONLY);
    nanosleep(&(struct timespec){.tv_nsec = 300 * 1000 * 1000}, NULL);   /* the writer blocks meanwhile */
    char buf[65536];
    long total = 0;
    for (ssize_t got; (got = read(fd, buf, sizeof buf)) > 0;) total += got;
    _exit(total == N ? 0 : 1);
  }
  struct sigaction sa = {.sa_handler = on_signal}, old;
  sigemptyset(&sa.sa_mask);
  assert_int_equal(sigaction(SIGUSR1, &sa, &old), 0);
  pester p = {.target = pthread_self(), .times = 10};
  pthread_t t;
  assert_int_equal(pthread_create(&t, NULL, pester_with_signals, &p), 0);
  char *data = calloc(N, 1);
  assert_non_null(data);
  uopc_error err = {0};
  int rc = uopc_write_file(fifo, data, N, &err);
  free(data);
  pthread_join(t, NULL);
  sigaction(SIGUSR1, &old, NULL);
  close(keep);
  int status;
  assert_int_equal(waitpid(pid, &status, 0), pid);
  assert_uopc_ok(rc, err);
  assert_true(WIFEXITED(status));
  assert_int_equal(WEXITSTATUS(status), 0);
}


/* A user with no passwd entry (a container's arbitrary uid): with HOME unset there is no default
 * directory, said so; the advice for another's directory (/tmp) names the private one after the uid.
 * Needs root, to become such a user (seteuid, in a child); skipped otherwise. */
static void test_cache_user_without_passwd_entry_gets_no_default_and_uid_advice(void **state) {
  (void)state;
  if (geteuid() != 0) {
    print_message("  skipped: needs root, to take a uid without a passwd entry\n");
    skip();
  }
  uid_t uid = 54321;
  while (getpwuid(uid)) uid++;
  /* /tmp, which that user can reach wherever TMPDIR points: root's, so refused, with the advice */
  static const char shared[] = "/tmp";
  pid_t pid = fork();
  if (pid == 0) {
    unsetenv("UOPC_CACHE_DIR");
    unsetenv("XDG_CACHE_HOME");
    unsetenv("HOME");
    unsetenv("USER");
    if (seteuid(uid) != 0) _exit(2);
    char got[PATH_MAX], want[3 * PATH_MAX];
    uopc_error err = {0};
    int bad = 0;
    if (uopc_cache_resolve(NULL, got, &err) != UOPC_E_IO ||
        strcmp(err.message, "no cache directory: UOPC_CACHE_DIR, XDG_CACHE_HOME and HOME are unset") != 0) {
      fprintf(stderr, "resolve: %s\n", err.message);
      bad |= 4;
    }
    uopc_cache c;
    uopc_error_clear(&err);
    snprintf(want, sizeof want, "Fix: mkdir -m 700 '%s/uopc-%u' and set UOPC_CACHE_DIR='%s/uopc-%u'", shared,
             (unsigned)uid, shared, (unsigned)uid);
    if (uopc_cache_open(&c, shared, &err) != UOPC_E_UNSAFE_CACHE || !strstr(err.message, want)) {
      fprintf(stderr, "open: %s\n", err.message);
      bad |= 8;
    }
    if (seteuid(0) != 0) _exit(3);   /* root again, to write the coverage counts at exit */
    exit(bad);
  }
  int status;
  assert_int_equal(waitpid(pid, &status, 0), pid);
  assert_true(WIFEXITED(status));
  assert_int_equal(WEXITSTATUS(status), 0);
}

int main(int argc, char **argv) {
  if (argc == 4 && strcmp(argv[1], "--discard") == 0) return discard_in_a_new_process(argv[2], argv[3]);
  const struct CMUnitTest tests[] = {
    cmocka_unit_test_setup_teardown(test_cache_parse_size_takes_digits_and_binary_suffixes, setup, teardown),
    cmocka_unit_test_setup_teardown(test_cache_parse_size_rejects_what_is_not_a_size, setup, teardown),
    cmocka_unit_test_setup_teardown(test_program_new_refuses_a_bad_max_size_and_names_it, setup, teardown),
    cmocka_unit_test_setup_teardown(test_cache_max_size_without_the_variable_is_the_default, setup, teardown),
    cmocka_unit_test_setup_teardown(test_cache_open_names_the_directory_it_cannot_create, setup, teardown),
    cmocka_unit_test_setup_teardown(test_cache_publish_keeps_a_running_total, setup, teardown),
    cmocka_unit_test_setup_teardown(test_cache_hit_marks_use_at_most_once_a_minute, setup, teardown),
    cmocka_unit_test_setup_teardown(test_cache_evicts_least_recently_used_first_and_keeps_recent_hits, setup, teardown),
    cmocka_unit_test_setup_teardown(test_cache_evicts_the_older_of_two_entries_used_in_the_same_second, setup, teardown),
    cmocka_unit_test_setup_teardown(test_cache_eviction_spares_the_entry_just_published, setup, teardown),
    cmocka_unit_test_setup_teardown(test_cache_eight_processes_publish_and_evict_consistently, setup, teardown),
    cmocka_unit_test_setup_teardown(test_cache_statistics_match_the_counted_events, setup, teardown),
    cmocka_unit_test_setup_teardown(test_cache_stats_print_as_ccache_does, setup, teardown),
    cmocka_unit_test_setup_teardown(test_cache_stats_print_puts_the_prefix_before_the_directory, setup, teardown),
    cmocka_unit_test_setup_teardown(test_cache_stats_print_a_cache_not_created_yet, setup, teardown),
    cmocka_unit_test_setup_teardown(test_cache_stats_print_names_the_shared_default_as_shared, setup, teardown),
    cmocka_unit_test_setup_teardown(test_cache_stats_print_says_none_for_a_limit_of_0, setup, teardown),
    cmocka_unit_test_setup_teardown(test_cache_lock_and_stats_files_are_made_with_mode_0600, setup, teardown),
    cmocka_unit_test_setup_teardown(test_cache_stats_print_waits_out_a_signal_for_the_lock, setup, teardown),
    cmocka_unit_test_setup_teardown(test_cache_without_stats_file_is_counted_once, setup, teardown),
    cmocka_unit_test_setup_teardown(test_cache_record_read_leaves_garbled_values_at_zero, setup, teardown),
    cmocka_unit_test_setup_teardown(test_cache_record_read_refuses_an_empty_value, setup, teardown),
    cmocka_unit_test_setup_teardown(test_cache_account_counts_afresh_when_entries_go_negative, setup, teardown),
    cmocka_unit_test_setup_teardown(test_cache_account_reports_an_eviction_without_trash, setup, teardown),
    cmocka_unit_test_setup_teardown(test_cache_discard_of_a_gone_entry_keeps_the_total, setup, teardown),
    cmocka_unit_test_setup_teardown(test_cache_limit_of_0_evicts_nothing, setup, teardown),
    cmocka_unit_test_setup_teardown(test_cache_evicts_entries_whose_names_have_the_longest_length, setup, teardown),
    cmocka_unit_test_setup_teardown(test_cache_write_file_writes_a_one_byte_file, setup, teardown),
    cmocka_unit_test_setup_teardown(test_cache_write_file_makes_a_file_of_mode_0600, setup, teardown),
    cmocka_unit_test_setup_teardown(test_cache_write_file_writes_through_descriptor_0, setup, teardown),
    cmocka_unit_test_setup_teardown(test_cache_builds_leave_no_descriptor_open, setup, teardown),
    cmocka_unit_test_setup_teardown(test_cache_write_file_fails_on_a_write_refused_for_good, setup, teardown),
    cmocka_unit_test_setup_teardown(test_cache_publish_cuts_a_long_manifest_at_64_KiB, setup, teardown),
    cmocka_unit_test_setup_teardown(test_cache_publish_fails_when_the_artifact_cannot_be_hashed, setup, teardown),
    cmocka_unit_test_setup_teardown(test_cache_tree_size_counts_the_directory_and_its_files, setup, teardown),
    cmocka_unit_test_setup_teardown(test_cache_open_refuses_a_directory_past_path_max, setup, teardown),
    cmocka_unit_test_setup_teardown(test_cache_open_refuses_a_directory_without_room_for_entries, setup, teardown),
    cmocka_unit_test_setup_teardown(test_cache_resolve_falls_back_to_xdg_then_home_then_passwd, setup, teardown),
    cmocka_unit_test_setup_teardown(test_cache_resolve_takes_a_percent_in_uopc_cache_dir_literally, setup, teardown),
    cmocka_unit_test_setup_teardown(test_cache_open_refuses_a_directory_another_user_owns, setup, teardown),
    cmocka_unit_test_setup_teardown(test_cache_open_names_the_tmp_it_cannot_create, setup, teardown),
    cmocka_unit_test_setup_teardown(test_cache_lookup_refuses_an_entry_path_past_path_max, setup, teardown),
    cmocka_unit_test_setup_teardown(test_cache_keep_failed_leaves_a_build_whose_name_is_too_long, setup, teardown),
    cmocka_unit_test_setup_teardown(test_cache_discard_without_tmp_removes_the_entry_in_place, setup, teardown),
    cmocka_unit_test_setup_teardown(test_cache_lock_and_record_refuse_a_directory_past_path_max, setup, teardown),
    cmocka_unit_test_setup_teardown(test_cache_record_read_without_a_total_leaves_it_unknown, setup, teardown),
    cmocka_unit_test_setup_teardown(test_cache_record_write_writes_through_descriptor_0, setup, teardown),
    cmocka_unit_test_setup_teardown(test_cache_read_file_refuses_a_file_past_64_MiB, setup, teardown),
    cmocka_unit_test_setup_teardown(test_cache_evicts_entries_used_at_the_same_instant_by_name, setup, teardown),
    cmocka_unit_test_setup_teardown(test_cache_resolve_with_the_variables_unset_takes_xdg_then_home, setup, teardown),
    cmocka_unit_test_setup_teardown(test_cache_open_refuses_a_file_and_a_dangling_link, setup, teardown),
    cmocka_unit_test_setup_teardown(test_cache_open_advice_names_user_then_passwd_entry, setup, teardown),
    cmocka_unit_test_setup_teardown(test_cache_discard_without_the_lock_moves_the_entry_and_keeps_the_total, setup, teardown),
    cmocka_unit_test_setup_teardown(test_cache_discard_without_the_lock_says_which_entry_is_not_counted, setup, teardown),
    cmocka_unit_test_setup_teardown(test_cache_discard_past_the_limit_evicts_the_rest, setup, teardown),
    cmocka_unit_test_setup_teardown(test_cache_discard_by_key, setup, teardown),
    cmocka_unit_test_setup_teardown(test_cache_lookup_discards_damaged_entries, setup, teardown),
    cmocka_unit_test_setup_teardown(test_cache_lookup_refuses_a_manifest_or_artifact_path_past_path_max, setup, teardown),
    cmocka_unit_test_setup_teardown(test_cache_stage_without_tmp_fails, setup, teardown),
    cmocka_unit_test_setup_teardown(test_cache_publish_checks_the_artifact_and_takes_no_description, setup, teardown),
    cmocka_unit_test_setup_teardown(test_cache_keep_failed_leaves_what_it_cannot_move, setup, teardown),
    cmocka_unit_test_setup_teardown(test_cache_read_file_refuses_a_directory_and_a_growing_file, setup, teardown),
    cmocka_unit_test_setup_teardown(test_cache_write_file_fails_on_a_full_device, setup, teardown),
    cmocka_unit_test_setup_teardown(test_cache_entry_name_is_an_entry_a_dash_and_64_hex_digits, setup, teardown),
    cmocka_unit_test_setup_teardown(test_cache_scan_counts_entry_directories_only, setup, teardown),
    cmocka_unit_test_setup_teardown(test_cache_evicts_more_entries_than_the_first_listing_holds, setup, teardown),
    cmocka_unit_test_setup_teardown(test_cache_account_recounts_an_overstated_total_and_evicts_nothing, setup, teardown),
    cmocka_unit_test_setup_teardown(test_cache_account_counts_afresh_when_bytes_go_negative, setup, teardown),
    cmocka_unit_test_setup_teardown(test_cache_eviction_spares_an_entry_named_without_its_path, setup, teardown),
    cmocka_unit_test_setup_teardown(test_cache_account_of_a_gone_directory_fails_and_writes_nothing, setup, teardown),
    cmocka_unit_test_setup_teardown(test_cache_parse_size_refuses_twenty_one_digits, setup, teardown),
    cmocka_unit_test_setup_teardown(test_cache_record_read_skips_keys_that_only_share_a_prefix, setup, teardown),
    cmocka_unit_test_setup_teardown(test_cache_record_read_of_a_directory_past_path_max_is_unknown, setup, teardown),
    cmocka_unit_test_setup_teardown(test_cache_record_write_fails_where_stats_cannot_be_rewritten, setup, teardown),
    cmocka_unit_test_setup_teardown(test_cache_lock_waits_out_a_signal, setup, teardown),
    cmocka_unit_test_setup_teardown(test_cache_stats_print_edges, setup, teardown),
    cmocka_unit_test_setup_teardown(test_cache_parse_size_refuses_twenty_digits_past_int64, setup, teardown),
    cmocka_unit_test_setup_teardown(test_cache_stage_sweeps_day_old_stage_and_trash_directories, setup, teardown),
    cmocka_unit_test_setup_teardown(test_cache_lookup_of_an_entry_that_will_not_move_is_a_plain_miss, setup, teardown),
    cmocka_unit_test_setup_teardown(test_cache_publish_refuses_a_manifest_path_past_path_max, setup, teardown),
    cmocka_unit_test_setup_teardown(test_cache_scan_skips_an_entry_whose_path_does_not_fit, setup, teardown),
    cmocka_unit_test_setup_teardown(test_cache_count_ignores_nothing_and_unknown_events, setup, teardown),
    cmocka_unit_test_setup_teardown(test_cache_write_file_goes_on_after_a_signal, setup, teardown),
    cmocka_unit_test_setup_teardown(test_cache_user_without_passwd_entry_gets_no_default_and_uid_advice, setup, teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
