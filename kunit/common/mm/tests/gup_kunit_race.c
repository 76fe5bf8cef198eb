// SPDX-License-Identifier: GPL-2.0
/*
 * The GUP pin KUnit suites' test library: races. A race runs two sides
 * of one pairing on two CPUs at once, for a bounded number of rounds:
 * side B, in a kthread of its own on the second CPU and in the case's
 * address space, does its operation once per round (a fork, an unmap, a
 * split, ...); side A, the case's own thread on the first CPU, repeats
 * its operation (a pin, used and released) until B is done, so that the
 * two overlap wherever B's operation is. After every round the case
 * checks what must hold whatever the interleaving: no check depends on
 * timing, only on the state both sides leave.
 */

#include <linux/kthread.h>
#include <linux/moduleparam.h>
#include <linux/sched/mm.h>
#include <linux/wait.h>
#include "gup_kunit.h"

/*
 * gup_kunit_race.rounds=N: the rounds of each race (make stress sets
 * it); 0 keeps each race's own default, which keeps make test short.
 */
#undef MODULE_PARAM_PREFIX
#define MODULE_PARAM_PREFIX "gup_kunit_race."
static unsigned int rounds;
module_param(rounds, uint, 0444);
MODULE_PARM_DESC(rounds, "rounds of every race (default: each race's own)");

/**
 * struct gup_kunit_race_run - the state of a race that runs.
 * @race: the race.
 * @ctx: its context.
 * @mm: the case's address space, which side B uses too.
 * @round: the round B is to run; 0 before the first, -1 to stop.
 * @b_done: the last round B finished.
 * @b_err: B's first error, with its round in @b_err_round.
 * @b_err_round: see @b_err.
 * @wait: where B waits for the next round.
 * @exited: B has stopped.
 */
struct gup_kunit_race_run {
	const struct gup_kunit_race *race;
	void *ctx;
	struct mm_struct *mm;
	atomic_t round;
	atomic_t b_done;
	int b_err;
	int b_err_round;
	wait_queue_head_t wait;
	struct completion exited;
};

static int gup_kunit_race_b(void *data)
{
	struct gup_kunit_race_run *run = data;
	int prev = 0, round, err;

	kthread_use_mm(run->mm);
	for (;;) {
		wait_event(run->wait, atomic_read(&run->round) != prev);
		round = atomic_read(&run->round);
		if (round < 0)
			break;
		err = run->race->b(run->ctx, round);
		if (err && !run->b_err) {
			run->b_err = err;
			run->b_err_round = round;
		}
		atomic_set_release(&run->b_done, round);
		prev = round;
	}
	kthread_unuse_mm(run->mm);
	complete(&run->exited);
	return 0;
}

/* Side A for one round: until B is done, and at least once. */
static int gup_kunit_race_a(struct gup_kunit_race_run *run, int round,
			    unsigned long *iters)
{
	unsigned long i = 0;
	int err;

	do {
		err = run->race->a(run->ctx, round, i++);
		if (err)
			break;
		if (!(i & 63))
			cond_resched();
	} while (atomic_read_acquire(&run->b_done) != round);
	*iters += i;
	return err;
}

/**
 * gup_kunit_race() - run a race, and check after every round.
 * @test: the case; skipped unless two CPUs are online.
 * @race: the two sides, the check and the default number of rounds.
 * @ctx: the context all three get.
 *
 * Binds the case to the first online CPU and starts side B on the
 * second, in the case's address space (which the case must have mapped
 * first). Each round: race->prepare(), if any, sets it up; B runs
 * race->b() once while the case runs race->a() until B is done; then
 * race->check() sees the state they left. An error of a side or a failed
 * check ends the race with the failure, naming the round. Prints "race: NAME rounds=R a=N" (N: how
 * many times side A ran).
 */
void gup_kunit_race(struct kunit *test, const struct gup_kunit_race *race,
		    void *ctx)
{
	unsigned int total = rounds ? rounds : race->rounds;
	struct gup_kunit_race_run run = { .race = race, .ctx = ctx };
	struct task_struct *b;
	unsigned long iters = 0;
	unsigned int round;
	int other, err = 0;

	other = gup_kunit_other_cpu(test);
	KUNIT_ASSERT_NOT_NULL(test, current->mm);
	run.mm = current->mm;
	mmgrab(run.mm);
	atomic_set(&run.round, 0);
	atomic_set(&run.b_done, 0);
	init_waitqueue_head(&run.wait);
	init_completion(&run.exited);
	b = kthread_create(gup_kunit_race_b, &run, "gup_kunit_race");
	if (IS_ERR(b)) {
		mmdrop(run.mm);
		KUNIT_FAIL(test, "kthread_create: %ld", PTR_ERR(b));
		return;
	}
	kthread_bind(b, other);
	wake_up_process(b);

	for (round = 1; round <= total; round++) {
		if (race->prepare && race->prepare(test, ctx, round))
			break;
		atomic_set(&run.round, round);
		wake_up(&run.wait);
		err = gup_kunit_race_a(&run, round, &iters);
		while (atomic_read_acquire(&run.b_done) != round)
			cpu_relax();
		if (err) {
			KUNIT_FAIL(test, "round %u: side A: %d", round, err);
			break;
		}
		if (run.b_err) {
			KUNIT_FAIL(test, "round %d: side B: %d", run.b_err_round,
				   run.b_err);
			break;
		}
		if (!race->check(test, ctx, round))
			break;
	}
	atomic_set(&run.round, -1);
	wake_up(&run.wait);
	wait_for_completion(&run.exited);
	mmdrop(run.mm);
	kunit_info(test, "race: %s rounds=%u a=%lu\n", race->name,
		   round > total ? total : round, iters);
}
