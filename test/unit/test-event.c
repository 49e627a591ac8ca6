/*
 * Unit tests for daemon/base/event.c: timers fire in deadline order, an
 * object released in a handler is freed only after the batch, and a
 * source deleted by an earlier handler of the batch is not called.
 * Real pipes and a real epoll instance.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "event.h"

/* What happened, in order, as short words. */
static char journal[256];

static void note(const char *what)
{
	strncat(journal, what, sizeof(journal) - strlen(journal) - 1);
	strncat(journal, " ", sizeof(journal) - strlen(journal) - 1);
}

static int setup(void **state)
{
	(void)state;
	journal[0] = '\0';
	return 0;
}

struct fired {
	struct event_loop *loop;
	const char *name;
	bool last; /* stops the loop */
};

static void on_timer(struct event_loop *loop, void *data)
{
	struct fired *f = data;
	note(f->name);
	if (f->last)
		event_loop_stop(loop);
}

/* Armed out of order, the timers fire by deadline; equal deadlines in
 * the order they were armed. */
static void test_timers_fire_in_deadline_order(void **state)
{
	(void)state;
	struct event_loop loop;
	struct timer t[5] = {{0}};
	struct fired f[5] = {
		{.name = "late", .last = true}, {.name = "early"}, {.name = "middle"},
		{.name = "now1"}, {.name = "now2"},
	};

	assert_int_equal(event_loop_init(&loop), 0);
	timer_arm(&loop, &t[0], 60, on_timer, &f[0]);
	timer_arm(&loop, &t[1], 20, on_timer, &f[1]);
	timer_arm(&loop, &t[2], 40, on_timer, &f[2]);
	timer_arm(&loop, &t[3], 0, on_timer, &f[3]);
	timer_arm(&loop, &t[4], 0, on_timer, &f[4]);
	assert_int_equal(event_loop_run(&loop), 0);
	assert_string_equal(journal, "now1 now2 early middle late ");
	event_loop_close(&loop);
}

/* A cancelled timer never fires; one armed again moves to its new
 * deadline; cancelling twice is harmless. */
static void test_timer_cancel_and_rearm(void **state)
{
	(void)state;
	struct event_loop loop;
	struct timer a = {0}, b = {0}, c = {0}, end = {0};
	struct fired fa = {.name = "a"}, fb = {.name = "b"}, fc = {.name = "c"},
		     fend = {.name = "end", .last = true};

	assert_int_equal(event_loop_init(&loop), 0);
	timer_arm(&loop, &a, 10, on_timer, &fa);
	timer_arm(&loop, &b, 20, on_timer, &fb);
	timer_arm(&loop, &c, 30, on_timer, &fc);
	timer_arm(&loop, &end, 50, on_timer, &fend);
	timer_cancel(&loop, &b);
	timer_cancel(&loop, &b);
	timer_arm(&loop, &a, 40, on_timer, &fa); /* after c now */
	assert_false(b.armed);
	assert_int_equal(event_loop_run(&loop), 0);
	assert_string_equal(journal, "c a end ");
	assert_false(a.armed);
	event_loop_close(&loop);
}

/* Two pipes ready in one batch; each handler deletes the other's source
 * and releases the other's object. */
struct side {
	struct event_loop *loop;
	const char *name;
	struct event_source src;
	struct side *other;
	bool *freed;      /* set by free_side */
	bool other_freed_in_handler;
};

static void free_side(void *obj)
{
	struct side *s = obj;
	note("free");
	*s->freed = true;
}

static void on_ready(struct event_loop *loop, uint32_t events, void *data)
{
	(void)events;
	struct side *s = data;
	note(s->name);
	event_del(loop, &s->other->src);
	assert_int_equal(event_release(loop, s->other, free_side), 0);
	s->other_freed_in_handler = *s->other->freed;
	event_del(loop, &s->src);
}

static void test_release_after_the_batch(void **state)
{
	(void)state;
	struct event_loop loop;
	int p1[2], p2[2];
	bool freed1 = false, freed2 = false;
	struct side s1 = {.name = "one", .freed = &freed1};
	struct side s2 = {.name = "two", .freed = &freed2};
	struct timer stop = {0};
	struct fired fstop = {.name = "stop", .last = true};
	s1.other = &s2;
	s2.other = &s1;

	assert_int_equal(pipe(p1), 0);
	assert_int_equal(pipe(p2), 0);
	assert_int_equal(write(p1[1], "x", 1), 1);
	assert_int_equal(write(p2[1], "x", 1), 1);
	assert_int_equal(event_loop_init(&loop), 0);
	assert_int_equal(event_add(&loop, &s1.src, p1[0], EPOLLIN, on_ready, &s1), 0);
	assert_int_equal(event_add(&loop, &s2.src, p2[0], EPOLLIN, on_ready, &s2), 0);
	/* Due at once: it runs after the first batch, and stops the loop. */
	timer_arm(&loop, &stop, 0, on_timer, &fstop);
	assert_int_equal(event_loop_run(&loop), 0);

	/* One handler ran; the other's source was deleted in the same
	 * batch, so it was not called; its object went after the batch and
	 * the turn's timers. */
	assert_true(strcmp(journal, "one stop free ") == 0 ||
		    strcmp(journal, "two stop free ") == 0);
	assert_false(s1.other_freed_in_handler);
	assert_false(s2.other_freed_in_handler);
	assert_true(freed1 != freed2);
	event_loop_close(&loop);
	for (int i = 0; i < 2; i++) {
		close(p1[i]);
		close(p2[i]);
	}
}

/* Releases still pending when the loop closes are run then. */
static void count_free(void *obj)
{
	(*(int *)obj)++;
}

static void test_close_runs_pending_releases(void **state)
{
	(void)state;
	struct event_loop loop;
	int freed = 0;

	assert_int_equal(event_loop_init(&loop), 0);
	assert_int_equal(event_release(&loop, &freed, count_free), 0);
	assert_int_equal(event_release(&loop, &freed, count_free), 0);
	assert_int_equal(freed, 0);
	event_loop_close(&loop);
	assert_int_equal(freed, 2);
}

int main(void)
{
#define T(name) cmocka_unit_test_setup_teardown(name, setup, NULL)
	const struct CMUnitTest tests[] = {
		T(test_timers_fire_in_deadline_order),
		T(test_timer_cancel_and_rearm),
		T(test_release_after_the_batch),
		T(test_close_runs_pending_releases),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
