/* spawn.c: runs a compiler from an argument vector, never through a shell,
 * and captures what it prints (section 23.6: a file name with spaces or `;`
 * is just an argument here, never a command). */
#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include "internal.h"

extern char **environ;

static void capture(int fd, uopc_spawn_result *res) {
  char buf[4096];
  ssize_t got;
  while ((got = read(fd, buf, sizeof buf)) != 0) {
    if (got < 0) { if (errno == EINTR) continue; break; }
    size_t room = sizeof res->output - 1 - res->output_len;
    size_t keep = (size_t)got < room ? (size_t)got : room;
    memcpy(res->output + res->output_len, buf, keep);
    res->output_len += keep;
    if (keep < (size_t)got) res->truncated = 1;   /* drain the rest so the child never blocks */
  }
  res->output[res->output_len] = '\0';
}

static int setup_actions(posix_spawn_file_actions_t *fa, int pipe_write, const char *cwd) {
  if (posix_spawn_file_actions_init(fa)) return 1;
  if (cwd && posix_spawn_file_actions_addchdir_np(fa, cwd)) return 1;
  return
         posix_spawn_file_actions_addopen(fa, 0, "/dev/null", O_RDONLY, 0) ||
         posix_spawn_file_actions_adddup2(fa, pipe_write, 1) ||
         posix_spawn_file_actions_adddup2(fa, pipe_write, 2);
}

/* The environment, with LC_ALL=C so that diagnostics read the same on every
 * machine (plain quotes, English), whatever the user's locale. */
static char **c_locale_environment(void) {
  size_t n = 0;
  while (environ[n]) n++;
  char **env = malloc((n + 2) * sizeof *env);
  if (!env) return NULL;
  size_t k = 0;
  for (size_t i = 0; i < n; i++)
    if (strncmp(environ[i], "LC_ALL=", 7) != 0) env[k++] = environ[i];
  env[k++] = "LC_ALL=C";
  env[k] = NULL;
  return env;
}

int uopc_spawn(char *const argv[], const char *cwd, uopc_spawn_result *res, uopc_error *err) {
  memset(res, 0, sizeof *res);
  char **env = c_locale_environment();
  if (!env) return UOPC_FAIL(err, UOPC_E_NOMEM, "no memory to start '%s'", argv[0]);
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) {
    free(env);
    return UOPC_FAIL(err, UOPC_E_IO, "cannot create a pipe for '%s': %m", argv[0]);
  }
  posix_spawn_file_actions_t fa;
  pid_t pid;
  int rc = setup_actions(&fa, fds[1], cwd) ? ENOMEM : 0;
  if (rc == 0 && uopc_fault_hit(UOPC_FAULT_SPAWN)) rc = EAGAIN;
  if (rc == 0) rc = posix_spawn(&pid, argv[0], &fa, NULL, argv, env);
  posix_spawn_file_actions_destroy(&fa);
  free(env);
  close(fds[1]);
  if (rc != 0) {
    close(fds[0]);
    return UOPC_FAIL(err, UOPC_E_IO, "cannot start '%s': %s", argv[0], strerror(rc));
  }
  capture(fds[0], res);
  close(fds[0]);
  int status;
  while (waitpid(pid, &status, 0) < 0)
    if (errno != EINTR) return UOPC_FAIL(err, UOPC_E_IO, "waiting for '%s' failed: %m", argv[0]);
  res->exit_status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return UOPC_OK;
}

static int is_executable_file(const char *path) {
  struct stat st;
  return stat(path, &st) == 0 && S_ISREG(st.st_mode) && access(path, X_OK) == 0;
}

int uopc_find_program(const char *name, char resolved[PATH_MAX], uopc_error *err) {
  if (!name || !*name) return UOPC_FAIL(err, UOPC_E_INVALID, "empty program name");
  if (strchr(name, '/')) {
    if (is_executable_file(name) && realpath(name, resolved)) return UOPC_OK;
    return UOPC_FAIL(err, UOPC_E_INVALID, "program '%s' is not an executable file", name);
  }
  const char *path = getenv("PATH");
  if (!path || !*path) path = "/usr/local/bin:/usr/bin:/bin";
  for (const char *p = path; *p;) {
    size_t len = strcspn(p, ":");
    char candidate[PATH_MAX];
    if (len > 0 && snprintf(candidate, sizeof candidate, "%.*s/%s", (int)len, p, name) < (int)sizeof candidate &&
        is_executable_file(candidate) && realpath(candidate, resolved))
      return UOPC_OK;
    p += len + (p[len] == ':');
  }
  return UOPC_FAIL(err, UOPC_E_INVALID, "program '%s' not found on PATH (%s)", name, path);
}
