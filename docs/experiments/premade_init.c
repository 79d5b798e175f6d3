// An experiment, not part of the build: how long a sandboxed launch takes
// when its process, namespaces and the static part of its file-system view
// are made ahead ("premade"), against a bare posix_spawn of the same
// program, measured alternately in one process. It mirrors the sandbox's
// steps (`runtime/src/sandbox/spawn.rs`, `view.rs`) in plain C with the
// Rust server left out, to tell whether that design can meet issue 24's
// launch target before it is built. Results: docs/benchmarks.md.
//
//   cc -O2 -Wall -o /tmp/premade docs/experiments/premade_init.c
//   /tmp/premade 300        # as root or any user with user namespaces
//
// Made ahead (not timed): a fork of this process, a new user (the solver's
// ids mapped), PID, network, IPC, UTS and mount namespace (the mount
// namespace copied while the working directory is the run root), pid 1 of
// the PID namespace (the "init"), which clones /usr, /lib, /lib64, /bin and
// /etc read-only, mounts the staging root (tmpfs) and attaches them, and
// mounts /proc. Timed (the launch): the server sends the run directory's
// name; the init opens it beneath the run root (openat2, no symlinks, no
// mount crossing), clones and attaches it at /work, mounts /tmp and
// /dev/shm, makes the root read-only, pivots and detaches the old root;
// starts the solver with clone(CLONE_VM | CLONE_VFORK), which hardens
// itself (session, no-new-privs, capabilities, Landlock, close_range,
// rlimits, a 105-instruction seccomp program) and execs /usr/bin/true;
// the init reaps it, kills and reaps the rest, and reports.
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/landlock.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <linux/mount.h>
#include <linux/openat2.h>
#include <sched.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;
#define CK(x) do { if ((long)(x) < 0) { fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, strerror(errno)); _exit(99); } } while (0)

static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + t.tv_nsec * 1e-9; }
static void wfile(const char *p, const char *s) { int fd = open(p, O_WRONLY); CK(fd); CK(write(fd, s, strlen(s))); close(fd); }
static int clone_tree(int dfd, const char *p, unsigned flags) { return syscall(SYS_open_tree, dfd, p, OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | flags); }
static void attach(int fd, const char *to) { CK(syscall(SYS_move_mount, fd, "", AT_FDCWD, to, MOVE_MOUNT_F_EMPTY_PATH)); close(fd); }
static void setattr(int fd, const char *p, unsigned long set, unsigned flags) {
  struct mount_attr a = { .attr_set = set };
  CK(syscall(SYS_mount_setattr, fd, p, flags, &a, sizeof a));
}

static char stack[256 * 1024] __attribute__((aligned(16)));
static struct sock_filter prog[128];
static int prog_len;

static int solver(void *arg) {
  (void)arg;
  CK(setsid());
  CK(chdir("/work"));
  CK(prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0));
  prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0);
  for (int c = 0; c < 64; c++) if (prctl(PR_CAPBSET_DROP, c, 0, 0, 0) && errno == EINVAL) break;
  struct landlock_ruleset_attr ra = { .handled_access_fs = LANDLOCK_ACCESS_FS_EXECUTE | LANDLOCK_ACCESS_FS_WRITE_FILE | LANDLOCK_ACCESS_FS_READ_FILE | LANDLOCK_ACCESS_FS_READ_DIR };
  int rs = syscall(SYS_landlock_create_ruleset, &ra, sizeof ra, 0); CK(rs);
  const char *paths[] = { "/", "/tmp", "/dev/shm", "/work" };
  for (int i = 0; i < 4; i++) {
    int fd = open(paths[i], O_PATH | O_CLOEXEC); CK(fd);
    struct landlock_path_beneath_attr pb = { .allowed_access = ra.handled_access_fs, .parent_fd = fd };
    CK(syscall(SYS_landlock_add_rule, rs, LANDLOCK_RULE_PATH_BENEATH, &pb, 0)); close(fd);
  }
  CK(syscall(SYS_landlock_restrict_self, rs, 0)); close(rs);
  CK(syscall(SYS_close_range, 3, ~0U, CLOSE_RANGE_CLOEXEC));
  struct rlimit r = { 1 << 28, 1 << 28 }; CK(setrlimit(RLIMIT_FSIZE, &r)); r.rlim_cur = r.rlim_max = 60; CK(setrlimit(RLIMIT_CPU, &r));
  r.rlim_cur = r.rlim_max = 256; CK(setrlimit(RLIMIT_NOFILE, &r)); r.rlim_cur = r.rlim_max = 0; CK(setrlimit(RLIMIT_CORE, &r));
  struct sock_fprog fp = { .len = prog_len, .filter = prog };
  CK(syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &fp));
  char *argv[] = { "true", 0 }, *envp[] = { "PATH=/usr/bin", 0 };
  execve("/usr/bin/true", argv, envp);
  _exit(127);
}

// The premade init: pid 1 of its namespaces, view staged; waits for "go".
static void init_main(int sock, int runroot) {
  CK(mount(0, "/", 0, MS_REC | MS_PRIVATE, 0));
  const char *binds[] = { "/usr", "/lib", "/lib64", "/bin", "/etc" };
  int fds[5];
  for (int i = 0; i < 5; i++) { fds[i] = clone_tree(AT_FDCWD, binds[i], AT_RECURSIVE); CK(fds[i]); setattr(fds[i], "", MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV, AT_EMPTY_PATH | AT_RECURSIVE); }
  CK(mount("tmpfs", "/tmp", "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, "mode=0755,size=1048576,nr_inodes=4096"));
  const char *dirs[] = { "/tmp/usr", "/tmp/lib", "/tmp/lib64", "/tmp/bin", "/tmp/etc", "/tmp/proc", "/tmp/tmp", "/tmp/dev", "/tmp/dev/shm", "/tmp/work", "/tmp/sandbox" };
  for (int i = 0; i < 11; i++) CK(mkdir(dirs[i], 0755));
  for (int i = 0; i < 5; i++) attach(fds[i], dirs[i]);
  CK(mount("proc", "/tmp/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, 0));
  // Ready; wait for the launch.
  char name[256]; CK(write(sock, "R", 1));
  ssize_t n = read(sock, name, sizeof name - 1); if (n <= 0) _exit(3); name[n] = 0;
  double ts[6]; ts[0] = now();
  // --- the launch path ---
  struct open_how how = { .flags = O_PATH | O_DIRECTORY | O_CLOEXEC, .resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV };
  int rd = syscall(SYS_openat2, runroot, name, &how, sizeof how); CK(rd);
  int rt = clone_tree(rd, "", AT_EMPTY_PATH | AT_RECURSIVE); CK(rt); close(rd);
  setattr(rt, "", MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV, AT_EMPTY_PATH | AT_RECURSIVE);
  attach(rt, "/tmp/work");
  CK(mount("tmpfs", "/tmp/tmp", "tmpfs", MS_NOSUID | MS_NODEV, "size=67108864,nr_inodes=16384"));
  CK(mount("tmpfs", "/tmp/dev/shm", "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, "size=67108864,nr_inodes=16384"));
  setattr(AT_FDCWD, "/tmp", MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOEXEC, 0);
  ts[1] = now();
  CK(chdir("/tmp")); CK(syscall(SYS_pivot_root, ".", ".")); CK(umount2(".", MNT_DETACH)); CK(chdir("/"));
  ts[2] = now();
  pid_t s = clone(solver, stack + sizeof stack, CLONE_VM | CLONE_VFORK | SIGCHLD, 0); CK(s);
  ts[3] = now();
  int st; CK(waitpid(s, &st, 0));
  ts[4] = now();
  kill(-1, SIGKILL); while (wait(0) > 0) {}
  ts[5] = st;
  CK(write(sock, ts, sizeof ts));
  _exit(0);
}

static int premake(int runroot, int *sock_out) {
  int sv[2]; CK(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv));
  pid_t m = fork(); CK(m);
  if (m == 0) {
    close(sv[0]);
    uid_t u = geteuid(); gid_t g = getegid();
    CK(unshare(CLONE_NEWUSER | CLONE_NEWPID | CLONE_NEWNET | CLONE_NEWIPC | CLONE_NEWUTS));
    char b[64]; wfile("/proc/self/setgroups", "deny");
    snprintf(b, sizeof b, "1000 %u 1\n", u); wfile("/proc/self/uid_map", b);
    snprintf(b, sizeof b, "1000 %u 1\n", g); wfile("/proc/self/gid_map", b);
    CK(fchdir(runroot));
    CK(unshare(CLONE_NEWNS));
    pid_t i = fork(); CK(i);
    if (i == 0) { int here = open(".", O_PATH | O_DIRECTORY | O_CLOEXEC); init_main(sv[1], here); }
    int st; waitpid(i, &st, 0); _exit(0);
  }
  close(sv[1]);
  char r; if (read(sv[0], &r, 1) != 1) { fprintf(stderr, "premade init not ready\n"); exit(1); }
  *sock_out = sv[0];
  return m;
}

static int cmp(const void *a, const void *b) { double x = *(double *)a, y = *(double *)b; return (x > y) - (x < y); }

int main(int argc, char **argv) {
  int n = argc > 1 ? atoi(argv[1]) : 200;
  if (n < 1 || n > 4096) { fprintf(stderr, "1 to 4096 launches\n"); return 1; }
  // A filter of the real one's size: arch check, then a chain that allows.
  prog[prog_len++] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS, 4);
  prog[prog_len++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 0xc000003e, 1, 0);
  prog[prog_len++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS);
  prog[prog_len++] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS, 0);
  for (int i = 0; i < 100; i++) prog[prog_len++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 1000 + i, 0, 0);
  prog[prog_len++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
  char root[] = "/tmp/premade-runroot-XXXXXX", run[64];
  if (!mkdtemp(root)) { perror("mkdtemp"); return 1; }
  snprintf(run, sizeof run, "%s/run-1", root); CK(mkdir(run, 0755));
  int runroot = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC); CK(runroot);
  static double ph[6][4096];
  double *pre = calloc(n, sizeof *pre), *bare = calloc(n, sizeof *bare), *whole = calloc(n, sizeof *whole);
  for (int k = 0; k < n; k++) {
    double tw = now();
    int sock; pid_t m = premake(runroot, &sock);
    double t0 = now();
    CK(write(sock, "run-1", 5));
    double ts[6]; if (read(sock, ts, sizeof ts) != sizeof ts || ts[5] != 0) { fprintf(stderr, "launch failed\n"); return 1; }
    int st;
    pre[k] = now() - t0; whole[k] = now() - tw;
    double d[6] = { ts[0] - t0, ts[1] - ts[0], ts[2] - ts[1], ts[3] - ts[2], ts[4] - ts[3], now() - ts[4] };
    for (int j = 0; j < 6; j++) ph[j][k] = d[j];
    close(sock); waitpid(m, 0, 0);
    t0 = now();
    pid_t p; char *av[] = { "true", 0 };
    CK(posix_spawn(&p, "/usr/bin/true", 0, 0, av, environ)); CK(waitpid(p, &st, 0));
    bare[k] = now() - t0;
  }
  qsort(pre, n, sizeof *pre, cmp); qsort(bare, n, sizeof *bare, cmp); qsort(whole, n, sizeof *whole, cmp);
  const char *names[] = { "send -> init awake", "run dir + /tmp + /dev/shm mounted, root read-only", "pivot_root + umount2", "solver hardened and exec'd", "solver ran and exited", "kill, reap, record -> server" };
  for (int j = 0; j < 6; j++) { qsort(ph[j], n, sizeof(double), cmp); printf("  %-52s %.3f ms\n", names[j], ph[j][n / 2] * 1e3); }
  printf("made on the launch's path (fork, namespaces, view staging, launch): median %.3f ms (+%.3f)\n", whole[n / 2] * 1e3, (whole[n / 2] - bare[n / 2]) * 1e3);
  printf("n=%d  bare posix_spawn+wait: median %.3f ms  premade launch: median %.3f ms  (+%.3f)\n", n, bare[n / 2] * 1e3, pre[n / 2] * 1e3, (pre[n / 2] - bare[n / 2]) * 1e3);
  rmdir(run); rmdir(root);
  return 0;
}
