// SPDX-License-Identifier: GPL-2.0
/*
 * memprepop(1): SIGINT, SIGTERM and SIGHUP (Ctrl-C; systemd, timeout(1) or
 * kill; a closed terminal) cancel the command: the call stops
 * (progress_bar() says so), what the command made is undone, one line
 * says so and the exit status is 128 + the signal, as a shell reports a
 * command the signal ended. A second signal ends it at once, after the
 * undo hook only; the same signal again is that one sent twice, not a
 * second, from the same process within SAME_SENDER_NS of the first
 * (timeout(1) sends it to the process and then to its process group, and
 * this thread may take the second long after it was sent, its CPUs busy
 * populating) or from any sender within REPEAT_NS.
 *
 * A handler would not do: the calling thread sleeps in the module's ioctl,
 * where only a fatal signal wakes it, so a handler would run only once the
 * call is over. The signals are blocked here, in every thread made from
 * now on (the library's too), and taken by a thread of their own.
 */
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "tool.h"

/* A repeat of the first signal this soon after it is the first, sent twice */
#define REPEAT_NS	50000000LL
/* ... and this soon when the same process sent both (kill(2), sigqueue(3)) */
#define SAME_SENDER_NS	1000000000LL

static volatile sig_atomic_t first_signal;
static void (*undo_now)(void);

static long long monotonic_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* The process that sent @si, or 0: the kernel (a terminal), or unknown */
static pid_t signal_sender(const siginfo_t *si)
{
	return si->si_code == SI_USER || si->si_code == SI_QUEUE ?
	       si->si_pid : 0;
}

/* Is @si, taken @ns after the first signal from @first_pid, that one again? */
static bool signal_repeated(const siginfo_t *si, long long ns, pid_t first_pid)
{
	pid_t pid = signal_sender(si);

	if (si->si_signo != first_signal)
		return false;
	return ns < REPEAT_NS || (pid && pid == first_pid && ns < SAME_SENDER_NS);
}

static void *signal_thread(void *arg)
{
	const sigset_t *set = arg;
	long long first_ns = 0;
	pid_t first_pid = 0;
	siginfo_t si;
	int sig;

	for (;;) {
		sig = sigwaitinfo(set, &si);
		if (sig < 0)
			continue;
		if (!first_signal) {
			first_ns = monotonic_ns();
			first_pid = signal_sender(&si);
			first_signal = sig;
			continue;
		}
		if (signal_repeated(&si, monotonic_ns() - first_ns, first_pid))
			continue;
		if (undo_now)
			undo_now();
		if (sig == first_signal)
			fprintf(stderr, "%s: SIG%s again: stopped at once\n",
				prog, sigabbrev_np(sig));
		else
			fprintf(stderr, "%s: SIG%s after SIG%s: stopped at "
				"once\n", prog, sigabbrev_np(sig),
				sigabbrev_np(first_signal));
		_exit(128 + first_signal);
	}
	return NULL;
}

/**
 * catch_signals() - from now on, SIGINT, SIGTERM and SIGHUP cancel
 * @undo: what a second signal does before the process ends, or NULL: it
 *	must be safe while the command's own thread goes on (unlink(2),
 *	truncate(2) of what the command made)
 */
void catch_signals(void (*undo)(void))
{
	static sigset_t set;
	pthread_t tid;

	undo_now = undo;
	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGHUP);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	if (pthread_create(&tid, NULL, signal_thread, &set)) {
		/* Without it, a signal ends the tool as it would have */
		pthread_sigmask(SIG_UNBLOCK, &set, NULL);
		return;
	}
	pthread_detach(tid);
}

/* The signal that cancelled the command, or 0 */
int cancelled(void)
{
	return first_signal;
}

/* Its exit status: 128 + the signal */
int cancelled_status(void)
{
	return 128 + first_signal;
}

/*
 * The start of the one line a cancel prints, "memprepop: SIGTERM:
 * cancelled, 1.50 GiB of 6.00 GiB populated"; the caller ends it
 */
void cancelled_line(uint64_t populated, uint64_t size)
{
	char done[32], all[32];

	size_text(done, sizeof(done), populated);
	size_text(all, sizeof(all), size);
	fprintf(stderr, "%s: SIG%s: cancelled, %s of %s populated", prog,
		sigabbrev_np(first_signal), done, all);
}
