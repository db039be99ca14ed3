/* The benchmarks' runner: `bench RUNS name=command ...` runs each command RUNS times,
   the commands taking turns (20 warm-up rounds first), stdout to /dev/null, and prints
   `name median-ms` per command. A command's leading words NAME=VALUE are set in its
   environment (on top of this one's), so commands that need different ones take turns too.
   Used by scripts/bench-shim.sh and scripts/bench-scale.sh. */
#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
extern char **environ;
static int cmp(const void *a, const void *b) { double x = *(const double *)a, y = *(const double *)b; return (x > y) - (x < y); }
int main(int argc, char **argv) {
    int runs = atoi(argv[1]), n = argc - 2;
    double *t = malloc(sizeof(double) * runs * n);
    char *name[64], *av[64][32], **envp[64];
    int nenv = 0;
    while (environ[nenv]) nenv++;
    for (int j = 0; j < n; j++) {
        char *eq = strchr(argv[2 + j], '='); *eq = 0; name[j] = argv[2 + j];
        int k = 0;
        int e = nenv;
        envp[j] = malloc(sizeof(char *) * (nenv + 32));
        memcpy(envp[j], environ, sizeof(char *) * nenv);
        for (char *w = strtok(eq + 1, " "); w && k < 31; w = strtok(NULL, " ")) {
            char *is = strchr(w, '=');
            if (k == 0 && is && e < nenv + 31) {  /* NAME=VALUE before the program */
                int m;
                for (m = 0; m < e; m++)
                    if (strncmp(envp[j][m], w, is - w + 1) == 0) break;
                envp[j][m] = w;
                if (m == e) e++;
                continue;
            }
            av[j][k++] = w;
        }
        av[j][k] = NULL;
        envp[j][e] = NULL;
    }
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
    for (int i = -20; i < runs; i++)  /* 20 warm-up rounds */
        for (int j = 0; j < n; j++) {
            struct timespec a, b; pid_t pid; int status;
            clock_gettime(CLOCK_MONOTONIC, &a);
            if (posix_spawn(&pid, av[j][0], &fa, NULL, av[j], envp[j]) != 0) { perror(av[j][0]); return 1; }
            waitpid(pid, &status, 0);
            clock_gettime(CLOCK_MONOTONIC, &b);
            if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) { fprintf(stderr, "%s failed\n", name[j]); return 1; }
            if (i >= 0) t[j * runs + i] = (b.tv_sec - a.tv_sec) * 1e3 + (b.tv_nsec - a.tv_nsec) / 1e6;
        }
    for (int j = 0; j < n; j++) {
        qsort(t + j * runs, runs, sizeof(double), cmp);
        printf("%s %.4f\n", name[j], t[j * runs + runs / 2]);
    }
    return 0;
}
