/*
 * A small event loop: file events and timers over one epoll instance,
 * after Redis's ae.c.
 *
 * Sources are owned by their users (embedded in a connection or a job);
 * the loop only points at them. Objects that hold sources are freed
 * through event_release(), after the current batch of events, so that a
 * handler may tear down an object whose event is still pending in it.
 *
 * Process: the listener (its one loop).
 */
#ifndef TOOLRUN_EVENT_H
#define TOOLRUN_EVENT_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/epoll.h>
#include <sys/queue.h>

#include "util.h"

struct event_loop;

typedef void (*event_fn)(struct event_loop *loop, uint32_t events, void *data);
typedef void (*timer_fn)(struct event_loop *loop, void *data);

struct event_source {
	int fd;           /* -1 when not registered */
	uint32_t mask;    /* EPOLLIN / EPOLLOUT currently asked for */
	event_fn fn;
	void *data;
};

struct timer {
	int64_t deadline_ms;
	timer_fn fn;
	void *data;
	LIST_ENTRY(timer) link; /* in event_loop.timers while armed */
	bool armed;
};

struct release {
	void *obj;
	void (*free_fn)(void *obj);
	struct release *next;
};

/* How many events one epoll_wait() returns at most. */
#define EVENT_BATCH 64

struct event_loop {
	int epfd;
	bool stop;
	LIST_HEAD(, timer) timers; /* sorted by deadline */
	struct release *releases;
	/* Called once per turn, after the handlers and before the loop
	 * sleeps (event_loop_before_sleep). */
	void (*before_sleep)(void *data);
	void *before_sleep_data;
};

MUST_CHECK int event_loop_init(struct event_loop *loop);
void event_loop_close(struct event_loop *loop);

/* Register fd (level-triggered) with the events in mask. */
MUST_CHECK int event_add(struct event_loop *loop, struct event_source *src, int fd,
	      uint32_t mask, event_fn fn, void *data);
MUST_CHECK int event_modify(struct event_loop *loop, struct event_source *src,
		 uint32_t mask);
void event_del(struct event_loop *loop, struct event_source *src);

void timer_arm(struct event_loop *loop, struct timer *t, int64_t delay_ms,
	       timer_fn fn, void *data);
void timer_cancel(struct event_loop *loop, struct timer *t);

/* Free obj after the current batch of events. Returns -ENOMEM (and frees
 * nothing) only if the bookkeeping itself cannot be allocated. */
MUST_CHECK int event_release(struct event_loop *loop, void *obj, void (*free_fn)(void *));

/* fn(data) runs at the end of every turn of the loop, before it waits
 * again: where work batched by the handlers of one turn is written out
 * at once (the listener's orders to the launcher). */
void event_loop_before_sleep(struct event_loop *loop, void (*fn)(void *data), void *data);

/* Run until event_loop_stop(). Returns 0, or -errno if epoll fails. */
int event_loop_run(struct event_loop *loop);
void event_loop_stop(struct event_loop *loop);


#endif
