/* grade_hook.c: the grader's side of every suite and driver it runs (libgradehook.so).
 *
 * The grader builds this file itself (never in a scratch copy) and links it into each suite and
 * lab driver of the scratch build, first of their libraries. It gives the parent a verdict that
 * the student's code cannot forge by printing, by exiting early or by writing to a descriptor:
 *
 *   - linked with -z initfirst, its constructor runs before every other constructor, the
 *     student library's included; there it installs a seccomp filter under which only one
 *     instruction of this file may write to the channel (GRADE_HOOK_FD, a socket the grader
 *     passed); any other use of that descriptor (write, dup, close, fcntl, send) kills the
 *     process, and ptrace, process_vm_*, pidfd_getfd, io_uring and sendmsg (which could pass
 *     the descriptor on) fail with EPERM;
 *   - it defines __libc_start_main, so it, not the program, calls main: when main returns, it
 *     reports "main returned <status>" (and with UOPC_GRADE_COUNTERS=1 the process counters)
 *     over the channel. A program that exits, crashes or execs before main returns sends
 *     nothing, and the parent reads that as "exited early";
 *   - with UOPC_GRADE_CASE=name it selects that one cmocka case before main runs;
 *   - it removes every UOPC_GRADE_* variable from the environment before any other code runs,
 *     so student code sees the environment of a student's own run.
 *
 * Without UOPC_GRADE_CHANNEL in the environment it does nothing, so a scratch binary still runs
 * by hand. What it cannot stop is code in the same process that calls channel_write itself or
 * rewrites this library's memory: the source screen (harness/grading/screen.py) refuses asm,
 * attributes and the like in the preprocessed student files, which raises the cost but proves
 * nothing, so NumPy results and compile counts are judged outside the process altogether
 * (issue 32, class 2, is what is left). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <fcntl.h>

#define GRADE_HOOK_FD 1000          /* high, so that no descendant's own files land on it */
#define RECORD_MAX 65536

typedef int (*main_fn)(int, char **, char **);
typedef int (*start_fn)(main_fn, int, char **, void (*)(void), void (*)(void), void (*)(void), void *);

static int active, protected_;
/* main, on a page of its own made read-only once set: a student thread cannot swap it. */
static union { main_fn fn; char page[4096]; } program_main __attribute__((aligned(4096)));

/* The one instruction allowed to write to the channel: the address after it is what seccomp
 * sees as the instruction pointer of the call. */
extern const char grade_hook_after_syscall[] __attribute__((visibility("hidden")));

__attribute__((noinline)) static long channel_write(const char *buf, size_t len) {
  long ret;
  __asm__ volatile(".globl grade_hook_after_syscall\n\t.hidden grade_hook_after_syscall\n\t"
                   "syscall\n"
                   "grade_hook_after_syscall:"
                   : "=a"(ret)
                   : "0"((long)SYS_write), "D"((long)GRADE_HOOK_FD), "S"(buf), "d"(len)
                   : "rcx", "r11", "memory");
  return ret;
}

static void send_all(const char *buf, size_t len) {
  while (len > 0) {
    long n = channel_write(buf, len);
    if (n <= 0) return;
    buf += n;
    len -= (size_t)n;
  }
}

/* ---- the filter --------------------------------------------------------------------------- */

#define STMT(code, k) ((struct sock_filter)BPF_STMT((code), (k)))
#define JUMP(code, k, t, f) ((struct sock_filter)BPF_JUMP(BPF_JMP | (code) | BPF_K, (k), (t), (f)))
#define LD(off) STMT(BPF_LD | BPF_W | BPF_ABS, (off))
#define JEQ(k, t, f) JUMP(BPF_JEQ, (k), (t), (f))
#define RET(v) STMT(BPF_RET | BPF_K, (v))
#define ARG_LO(i) (offsetof(struct seccomp_data, args) + 8 * (i))
#define IP_LO offsetof(struct seccomp_data, instruction_pointer)
#define KILL SECCOMP_RET_KILL_PROCESS
#define DENY (SECCOMP_RET_ERRNO | EPERM)

/* Appends "if nr == call and the low word of argument arg is the channel: kill". */
static int fd_rule(struct sock_filter *f, int n, int call, int arg) {
  f[n++] = LD(offsetof(struct seccomp_data, nr));
  f[n++] = JEQ((unsigned)call, 0, 3);
  f[n++] = LD(ARG_LO(arg));
  f[n++] = JEQ(GRADE_HOOK_FD, 0, 1);
  f[n++] = RET(KILL);
  return n;
}

static int install_filter(void) {
  static const int denied[] = {SYS_ptrace, SYS_process_vm_readv, SYS_process_vm_writev, SYS_pidfd_getfd,
                               SYS_io_uring_setup, SYS_io_uring_enter, SYS_io_uring_register,
                               SYS_sendmsg, SYS_sendmmsg};
  static const int arg0[] = {SYS_writev, SYS_pwrite64, SYS_pwritev, SYS_pwritev2, SYS_sendto, SYS_read,
                             SYS_readv, SYS_recvfrom, SYS_recvmsg, SYS_close, SYS_dup, SYS_dup2, SYS_dup3,
                             SYS_fcntl, SYS_ioctl, SYS_shutdown, SYS_setsockopt, SYS_getsockopt,
                             SYS_sendfile, SYS_vmsplice, SYS_splice, SYS_tee, SYS_copy_file_range};
  static const int arg1[] = {SYS_dup2, SYS_dup3, SYS_tee};
  static const int arg2[] = {SYS_splice, SYS_copy_file_range};
  struct sock_filter f[256];
  int n = 0;
  uintptr_t ip = (uintptr_t)grade_hook_after_syscall;
  f[n++] = LD(offsetof(struct seccomp_data, arch));
  f[n++] = JEQ(AUDIT_ARCH_X86_64, 1, 0);
  f[n++] = RET(KILL);
  f[n++] = LD(offsetof(struct seccomp_data, nr));
  f[n++] = JUMP(BPF_JGE, 0x40000000u, 0, 1);   /* the x32 ABI */
  f[n++] = RET(KILL);
  for (size_t k = 0; k < sizeof denied / sizeof *denied; k++) {
    f[n++] = JEQ((unsigned)denied[k], 0, 1);
    f[n++] = RET(DENY);
  }
  /* write(channel, ...) only from channel_write's syscall instruction */
  f[n++] = JEQ(SYS_write, 0, 8);
  f[n++] = LD(ARG_LO(0));
  f[n++] = JEQ(GRADE_HOOK_FD, 0, 6);
  f[n++] = LD(IP_LO);
  f[n++] = JEQ((uint32_t)ip, 0, 3);
  f[n++] = LD(IP_LO + 4);
  f[n++] = JEQ((uint32_t)(ip >> 32), 0, 1);
  f[n++] = RET(SECCOMP_RET_ALLOW);
  f[n++] = RET(KILL);
  for (size_t k = 0; k < sizeof arg0 / sizeof *arg0; k++) n = fd_rule(f, n, arg0[k], 0);
  for (size_t k = 0; k < sizeof arg1 / sizeof *arg1; k++) n = fd_rule(f, n, arg1[k], 1);
  for (size_t k = 0; k < sizeof arg2 / sizeof *arg2; k++) n = fd_rule(f, n, arg2[k], 2);
  /* close_range(first, last) with first <= channel <= last */
  f[n++] = LD(offsetof(struct seccomp_data, nr));
  f[n++] = JEQ(SYS_close_range, 0, 5);
  f[n++] = LD(ARG_LO(0));
  f[n++] = JUMP(BPF_JGT, GRADE_HOOK_FD, 3, 0);
  f[n++] = LD(ARG_LO(1));
  f[n++] = JUMP(BPF_JGE, GRADE_HOOK_FD, 0, 1);
  f[n++] = RET(DENY);
  f[n++] = RET(SECCOMP_RET_ALLOW);
  struct sock_fprog prog = {(unsigned short)n, f};
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) return -1;
  return (int)syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog);
}

/* ---- start-up ------------------------------------------------------------------------------ */

static const char *env_get(char **envp, const char *name) {
  size_t len = strlen(name);
  for (; envp && *envp; envp++)
    if (strncmp(*envp, name, len) == 0 && (*envp)[len] == '=') return *envp + len + 1;
  return NULL;
}

/* What the grader told this process, kept here once the environment forgets it. */
static char case_name[256];
static int want_counters;

/* Removes every UOPC_GRADE_* variable from the environment, its bytes included (they are what
 * /proc/self/environ shows), so that student code, which runs after this, cannot tell from its
 * environment that it is graded, or which case runs: it sees a student's own run. */
static void forget_grade_env(char **envp) {
  int out = 0;
  for (int in = 0; envp && envp[in]; in++) {
    if (strncmp(envp[in], "UOPC_GRADE_", 11) == 0) {
      memset(envp[in], 0, strlen(envp[in]));
      continue;
    }
    envp[out++] = envp[in];
  }
  if (envp) envp[out] = NULL;
}

/* Runs before every other constructor (-z initfirst), so before any student code. */
__attribute__((constructor)) static void grade_hook_early(int argc, char **argv, char **envp) {
  (void)argc; (void)argv;
  struct stat st;
  if (!env_get(envp, "UOPC_GRADE_CHANNEL") || fstat(GRADE_HOOK_FD, &st) != 0 || !S_ISSOCK(st.st_mode))
    return;   /* run by hand, or a descendant that did not inherit the channel */
  const char *name = env_get(envp, "UOPC_GRADE_CASE"), *counters = env_get(envp, "UOPC_GRADE_COUNTERS");
  if (name) snprintf(case_name, sizeof case_name, "%s", name);
  want_counters = counters && *counters == '1';
  forget_grade_env(envp);
  fcntl(GRADE_HOOK_FD, F_SETFD, FD_CLOEXEC);
  active = 1;
  protected_ = install_filter() == 0;
}

/* The record: a header, the counters when asked for, and main's status. Built and sent by a
 * forked copy of the process, which has one thread: no other thread can rewrite it meanwhile. */
static void report(int status) {
  pid_t child = fork();
  if (child > 0) {
    waitpid(child, NULL, 0);
    return;
  }
  static char record[RECORD_MAX];
  size_t len = (size_t)snprintf(record, sizeof record, "grade-hook 1 %s\n", protected_ ? "protected" : "unprotected");
  void (*print)(FILE *) = (void (*)(FILE *))dlsym(RTLD_DEFAULT, "uopc_counters_print");
  FILE *f = want_counters && print ? fmemopen(record + len, sizeof record - len - 64, "w") : NULL;
  if (f) {
    setvbuf(f, NULL, _IONBF, 0);
    print(f);
    len += (size_t)ftell(f);
    fclose(f);
  }
  len += (size_t)snprintf(record + len, sizeof record - len, "main returned %d\n", status);
  send_all(record, len < sizeof record ? len : sizeof record - 1);
  if (child == 0) _exit(0);
}

static int grade_main(int argc, char **argv, char **envp) {
  void (*filter)(const char *) = (void (*)(const char *))dlsym(RTLD_DEFAULT, "cmocka_set_test_filter");
  if (case_name[0] && filter) filter(case_name);
  int status = program_main.fn(argc, argv, envp);
  fflush(NULL);
  report(status);
  return status;
}

int __libc_start_main(main_fn main, int argc, char **argv, void (*init)(void), void (*fini)(void),
                      void (*rtld_fini)(void), void *stack_end) {
  start_fn next = (start_fn)dlsym(RTLD_NEXT, "__libc_start_main");
  if (!next) _exit(127);
  program_main.fn = main;
  mprotect(&program_main, sizeof program_main, PROT_READ);
  return next(active ? grade_main : main, argc, argv, init, fini, rtld_fini, stack_end);
}
