/* witness.c: the grader's compile witness (harness/grading/witness.py builds it, once a grade).
 *
 * In a graded driver run this program sits at the path of the C compiler driver (bound over
 * gcc's real file inside the sandbox), so every compile the runtime spawns starts here. It tells
 * the grader, over a socket outside the student's reach, that one compile is starting, and only
 * then execs the real driver, which lives in a directory the sandbox user may cross but not list,
 * under a per-grade random name. The grader counts these records instead of the cache entries a
 * run leaves, which the student's process can delete or fake.
 *
 * The file is execute-only (mode 0111): the student's process can run it but not read it, and a
 * process started from an unreadable file cannot be traced or have its memory read, so the
 * secret, the socket's path and the real driver's path compiled in below stay the grader's.
 * No record, no compile: when the grader cannot be told, the compile is refused. */
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#if !defined(WITNESS_SECRET) || !defined(WITNESS_SOCKET) || !defined(WITNESS_REAL)
#error "the grader defines WITNESS_SECRET, WITNESS_SOCKET and WITNESS_REAL (harness/grading/witness.py)"
#endif

static int record(void) {
  static const char line[] = WITNESS_SECRET " compile\n";
  struct sockaddr_un addr = {.sun_family = AF_UNIX};
  if (strlen(WITNESS_SOCKET) >= sizeof addr.sun_path) return -1;
  memcpy(addr.sun_path, WITNESS_SOCKET, strlen(WITNESS_SOCKET) + 1);
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  int ok = connect(fd, (struct sockaddr *)&addr, sizeof addr) == 0 &&
           write(fd, line, sizeof line - 1) == (ssize_t)(sizeof line - 1);
  close(fd);
  return ok ? 0 : -1;
}

int main(int argc, char **argv) {
  (void)argc;
  if (record() != 0) {
    fputs("gcc: the grader's compile witness could not record this compile, so it did not run\n", stderr);
    return 1;
  }
  /* argv[0] stays "gcc": gcc finds its own helpers from it (on PATH, where this file sits), and
   * the real driver's path does not show in /proc/<pid>/cmdline. */
  argv[0] = "gcc";
  execv(WITNESS_REAL, argv);
  perror("gcc: the grader's compile witness could not start the compiler");
  return 127;
}
